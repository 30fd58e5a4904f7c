//! Pre-flight: is everything a workflow needs there before it starts?
//!
//! Three kinds of check — configuration keys, input documents, commands on `PATH` (the
//! stand-in for the seed's MCP connection: a tool the workflow calls) — each `PASSED` or
//! `FAILED` with what is missing and a line saying how to fix it. All passing is `READY`.
//! Failing here costs a second; failing in step 7 of a workflow costs the six before it.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a workflow needs.
#[derive(Clone, Debug, Default)]
pub struct Requirements {
    /// Keys the configuration must set to a non-empty value.
    pub config_keys: Vec<String>,
    /// Input documents, relative to the project root; `*` and `?` match within the last
    /// path component (`docs/*prd*.md`).
    pub inputs: Vec<String>,
    /// Programs that must be on `PATH`.
    pub commands: Vec<String>,
}

/// `PASSED` or `FAILED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Present.
    Passed,
    /// Something is missing.
    Failed,
}

/// One check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `config`, `input_documents` or `commands`.
    pub check: &'static str,
    /// Its outcome.
    pub status: Status,
    /// What is missing.
    pub missing: Vec<String>,
    /// The files found (input documents).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub validated_files: Vec<String>,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
}

/// `READY` or `FAILED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Overall {
    /// Every check passed.
    Ready,
    /// At least one failed.
    Failed,
}

/// The pre-flight result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Preflight {
    /// `READY` or `FAILED`.
    pub overall_status: Overall,
    /// Share of checks passed, 0–100.
    pub checks_passed_percent: u32,
    /// Every check run (kinds with nothing required are left out).
    pub checks: Vec<Check>,
    /// Everything missing, across checks.
    pub missing: Vec<String>,
}

/// The configuration the keys are looked up in: its file (for messages) and its mapping.
pub struct Config<'a> {
    /// Where it was read from, as shown to the user; `None` when there is no config file.
    pub file: Option<String>,
    /// Its top-level mapping.
    pub values: &'a crate::config::yaml::Mapping,
}

/// A config file's top-level mapping, the values [`Config`] looks keys up in (empty when the
/// file's top level is not a mapping).
pub fn config_values(
    text: &str,
) -> Result<crate::config::yaml::Mapping, crate::config::yaml::DeError> {
    let data = crate::config::yaml::from_str::<crate::config::yaml::Data>(text)?;
    Ok(data.as_mapping().cloned().unwrap_or_default())
}

/// Run the checks. `path_dirs` is `PATH` split, so tests control where programs are found.
pub fn run(
    root: &Path,
    config: &Config<'_>,
    req: &Requirements,
    path_dirs: &[PathBuf],
) -> Preflight {
    let mut checks = Vec::new();
    if !req.config_keys.is_empty() {
        let missing: Vec<String> =
            req.config_keys
                .iter()
                .filter(|k| {
                    config.values.get(k.as_str()).is_none_or(|v| {
                        v.is_null() || v.as_str().is_some_and(|s| s.trim().is_empty())
                    })
                })
                .cloned()
                .collect();
        let remediation = (!missing.is_empty()).then(|| match &config.file {
            Some(f) => format!("set {} in {f}", missing.join(", ")),
            None => format!(
                "no BMAD config found: install BMAD (npx bmad-method install) or pass --config, then set {}",
                missing.join(", ")
            ),
        });
        checks.push(check("config", missing, Vec::new(), remediation));
    }
    if !req.inputs.is_empty() {
        let mut missing = Vec::new();
        let mut found = Vec::new();
        for input in &req.inputs {
            let matches = matching_files(root, input);
            if matches.is_empty() {
                missing.push(input.clone());
            }
            found.extend(matches);
        }
        let remediation = (!missing.is_empty()).then(|| {
            format!(
                "create {} (or run the workflow that writes {}) before starting",
                missing.join(", "),
                if missing.len() == 1 { "it" } else { "them" }
            )
        });
        checks.push(check("input_documents", missing, found, remediation));
    }
    if !req.commands.is_empty() {
        let missing: Vec<String> = req
            .commands
            .iter()
            .filter(|c| !path_dirs.iter().any(|d| is_executable(&d.join(c.as_str()))))
            .cloned()
            .collect();
        let remediation = (!missing.is_empty())
            .then(|| format!("install {} or put it on PATH", missing.join(", ")));
        checks.push(check("commands", missing, Vec::new(), remediation));
    }
    let passed = checks.iter().filter(|c| c.status == Status::Passed).count();
    let percent = if checks.is_empty() {
        100
    } else {
        (passed * 100 / checks.len()) as u32
    };
    Preflight {
        overall_status: if passed == checks.len() {
            Overall::Ready
        } else {
            Overall::Failed
        },
        checks_passed_percent: percent,
        missing: checks.iter().flat_map(|c| c.missing.clone()).collect(),
        checks,
    }
}

fn check(
    name: &'static str,
    missing: Vec<String>,
    validated_files: Vec<String>,
    remediation: Option<String>,
) -> Check {
    Check {
        check: name,
        status: if missing.is_empty() {
            Status::Passed
        } else {
            Status::Failed
        },
        missing,
        validated_files,
        remediation,
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Files matching `pattern` (relative to `root`, wildcards in the last component), sorted,
/// shown relative to `root`.
fn matching_files(root: &Path, pattern: &str) -> Vec<String> {
    let path = root.join(pattern);
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    if !name.contains(['*', '?']) {
        return if path.is_file() {
            vec![pattern.to_owned()]
        } else {
            Vec::new()
        };
    }
    let Some(dir) = path.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| crate::paths::wildcard(name.as_bytes(), n.as_bytes()))
        .map(|n| {
            dir.join(n)
                .strip_prefix(root)
                .map_or_else(|_| pattern.to_owned(), |p| p.display().to_string())
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> crate::config::yaml::Mapping {
        crate::config::yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn missing_output_folder_fails_with_remediation() {
        let dir = tempfile::tempdir().unwrap();
        let values = config("user_name: Ada\noutput_folder: ''\n");
        let cfg = Config {
            file: Some("_bmad/bmm/config.yaml".into()),
            values: &values,
        };
        let req = Requirements {
            config_keys: vec!["output_folder".into(), "user_name".into()],
            ..Default::default()
        };
        let p = run(dir.path(), &cfg, &req, &[]);
        assert_eq!(p.overall_status, Overall::Failed);
        assert_eq!(p.checks[0].status, Status::Failed);
        assert_eq!(p.missing, ["output_folder"]);
        assert_eq!(
            p.checks[0].remediation.as_deref(),
            Some("set output_folder in _bmad/bmm/config.yaml")
        );
    }

    #[test]
    fn inputs_and_commands_present_is_ready() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("docs/my-prd.md"), "# PRD").unwrap();
        std::fs::write(dir.path().join("docs/architecture.md"), "# A").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("forgetful"), "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            bin.join("forgetful"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let values = config("output_folder: docs\n");
        let cfg = Config {
            file: None,
            values: &values,
        };
        let req = Requirements {
            config_keys: vec!["output_folder".into()],
            inputs: vec!["docs/*prd*.md".into(), "docs/architecture.md".into()],
            commands: vec!["forgetful".into()],
        };
        let p = run(dir.path(), &cfg, &req, std::slice::from_ref(&bin));
        assert_eq!(p.overall_status, Overall::Ready);
        assert_eq!(p.checks_passed_percent, 100);
        assert_eq!(
            p.checks[1].validated_files,
            ["docs/my-prd.md", "docs/architecture.md"]
        );
        // Without the tool: 2 of 3.
        let p = run(dir.path(), &cfg, &req, &[]);
        assert_eq!(
            (p.overall_status, p.checks_passed_percent),
            (Overall::Failed, 66)
        );
        assert_eq!(p.missing, ["forgetful"]);
    }
}
