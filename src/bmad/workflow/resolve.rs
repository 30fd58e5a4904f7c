//! Where things are, and what `{…}` means.
//!
//! BMAD resolves in this order: `{config_source}:key` from the module config first (a value
//! may chain: `sprint_status` → `{implementation_artifacts}` → `{config_source}:…`), then
//! `{project-root}`, `{installed_path}` and the other variables, and `date:
//! system-generated` becomes today. `{{…}}` is filled at run time and stays as written.
//!
//! Installs moved over the years (`bmad/`, `{bmad_folder}`, `.bmad/`, `_bmad/`), and BMAD's
//! own source tree keeps modules under `src/`; a path written `{project-root}/_bmad/…` is
//! therefore mapped to the install the file actually sits in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Install directory names, every era.
pub const INSTALL_DIRS: &[&str] = &["_bmad", "bmad", ".bmad"];
/// Module folders that mark an install.
const MODULES: &[&str] = &["bmm", "core", "bmb", "cis"];

/// Where a workflow is resolved.
#[derive(Clone, Debug)]
pub struct Env {
    /// `{project-root}`.
    pub project_root: PathBuf,
    /// A config to use instead of `config_source`.
    pub config_override: Option<PathBuf>,
    /// `date: system-generated`, `YYYY-MM-DD`.
    pub date: String,
    /// A missing module config is a warning, not an error (loading BMAD's own sources).
    pub lenient_config: bool,
}

impl Env {
    /// Resolve in `project_root`, today.
    pub fn new(project_root: &Path) -> Env {
        Env {
            project_root: std::fs::canonicalize(project_root)
                .unwrap_or_else(|_| project_root.to_path_buf()),
            config_override: None,
            date: crate::time::Timestamp::now().rfc3339()[..10].to_owned(),
            lenient_config: false,
        }
    }

    /// A path as the user would write it: relative to the project root when inside it.
    pub fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.project_root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// The install `file` sits in: the nearest ancestor holding module folders (BMAD's own
    /// source tree counts, so its files resolve against themselves), else the project's.
    pub fn install_of(&self, file: &Path) -> Option<PathBuf> {
        let mut dir = file.parent();
        while let Some(d) = dir {
            // An install dir with a module, or any dir whose module has workflows (BMAD's
            // source tree keeps them under `src/`).
            let named = INSTALL_DIRS.iter().any(|n| d.ends_with(n));
            if MODULES.iter().any(|m| {
                let module = d.join(m);
                module.is_dir() && (named || module.join("workflows").is_dir())
            }) {
                return Some(d.to_path_buf());
            }
            dir = d.parent();
        }
        let found = INSTALL_DIRS
            .iter()
            .map(|n| self.project_root.join(n))
            .find(|d| MODULES.iter().any(|m| d.join(m).is_dir()));
        found
    }
}

/// A failed resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// `{config_source}:key` with no config loaded.
    NoConfig(String),
    /// `{config_source}:key` and the config has no such key.
    MissingKey(String),
    /// Variables that refer to each other.
    Cycle(Vec<String>),
}

/// Variables being resolved.
pub struct Resolver<'a> {
    env: &'a Env,
    install: Option<PathBuf>,
    /// Raw values by name.
    vars: BTreeMap<String, String>,
    /// The module config's scalar values.
    pub config: Option<BTreeMap<String, String>>,
    resolved: BTreeMap<String, String>,
    /// `{{…}}` names met, first-use order.
    pub runtime: Vec<String>,
    /// `{name}` left as written because nothing defines it.
    pub unresolved: Vec<String>,
}

impl<'a> Resolver<'a> {
    /// A resolver for `vars` (name → raw value) of a file in `install`.
    pub fn new(env: &'a Env, install: Option<PathBuf>, vars: BTreeMap<String, String>) -> Self {
        Resolver {
            env,
            install,
            vars,
            config: None,
            resolved: BTreeMap::new(),
            runtime: Vec::new(),
            unresolved: Vec::new(),
        }
    }

    /// A variable's resolved value.
    pub fn var(&mut self, name: &str) -> Result<String, Problem> {
        self.var_in(name, &mut Vec::new())
    }

    fn var_in(&mut self, name: &str, stack: &mut Vec<String>) -> Result<String, Problem> {
        if let Some(v) = self.resolved.get(name) {
            return Ok(v.clone());
        }
        if stack.iter().any(|s| s == name) {
            let mut chain = stack.clone();
            chain.push(name.to_owned());
            return Err(Problem::Cycle(chain));
        }
        let raw = match self.vars.get(name) {
            Some(r) => r.clone(),
            None => match self.config.as_ref().and_then(|c| c.get(name)) {
                Some(r) => r.clone(),
                None => return Ok(format!("{{{name}}}")),
            },
        };
        stack.push(name.to_owned());
        let value = if name == "date" && raw.trim() == "system-generated" {
            self.env.date.clone()
        } else {
            self.text_in(&raw, stack)?
        };
        stack.pop();
        self.resolved.insert(name.to_owned(), value.clone());
        Ok(value)
    }

    /// Resolve every `{…}` in `text`.
    pub fn text(&mut self, text: &str) -> Result<String, Problem> {
        self.text_in(text, &mut Vec::new())
    }

    fn text_in(&mut self, text: &str, stack: &mut Vec<String>) -> Result<String, Problem> {
        let text = self.map_install(text);
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open..];
            if let Some(inner) = after.strip_prefix("{{") {
                // Runtime: copied through untouched.
                let close = inner.find("}}");
                let end = close.map_or(after.len(), |e| e + 4);
                let name = close.map_or("", |e| inner[..e].trim());
                if !name.is_empty() && !self.runtime.iter().any(|r| r == name) {
                    self.runtime.push(name.to_owned());
                }
                out.push_str(&after[..end]);
                rest = &after[end..];
                continue;
            }
            let name_len = after[1..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(after.len() - 1);
            if name_len == 0 || !after[1 + name_len..].starts_with('}') {
                out.push('{');
                rest = &after[1..];
                continue;
            }
            let name = &after[1..1 + name_len];
            let mut consumed = name_len + 2;
            let value = if name == "config_source" && after[consumed..].starts_with(':') {
                let key_len = after[consumed + 1..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                    .unwrap_or(after.len() - consumed - 1);
                let key = after[consumed + 1..consumed + 1 + key_len].to_owned();
                consumed += 1 + key_len;
                let Some(config) = &self.config else {
                    return Err(Problem::NoConfig(key));
                };
                let Some(raw) = config.get(&key).cloned() else {
                    return Err(Problem::MissingKey(key));
                };
                self.text_in(&raw, stack)?
            } else if name == "project-root" {
                self.env.project_root.display().to_string()
            } else if name == "bmad_folder" {
                self.install
                    .as_ref()
                    .and_then(|i| i.file_name())
                    .map_or("_bmad".to_owned(), |n| n.to_string_lossy().into_owned())
            } else if self.vars.contains_key(name)
                || self.config.as_ref().is_some_and(|c| c.contains_key(name))
            {
                self.var_in(name, stack)?
            } else {
                if !self.unresolved.iter().any(|u| u == name) {
                    self.unresolved.push(name.to_owned());
                }
                after[..consumed].to_owned()
            };
            out.push_str(&value);
            rest = &after[consumed..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// `{project-root}/_bmad/…` (any era's name, or `{bmad_folder}`) → the actual install.
    fn map_install(&self, text: &str) -> String {
        let Some(install) = &self.install else {
            return text.to_owned();
        };
        let mut out = text.to_owned();
        for dir in INSTALL_DIRS.iter().chain(&["{bmad_folder}"]) {
            let prefix = format!("{{project-root}}/{dir}/");
            if out.contains(&prefix) {
                out = out.replace(&prefix, &format!("{}/", install.display()));
            }
        }
        out
    }
}

/// Read a module config's scalar values (strings, numbers, booleans as text).
pub fn read_config(text: &str) -> Result<BTreeMap<String, String>, String> {
    let value: crate::config::yaml::Data =
        crate::config::yaml::from_str(text).map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    if let crate::config::yaml::Data::Mapping(map) = value {
        for (k, v) in map {
            let (Some(k), Some(v)) = (k.as_str(), scalar_text(&v)) else {
                continue;
            };
            out.insert(k.to_owned(), v);
        }
    }
    Ok(out)
}

fn scalar_text(v: &crate::config::yaml::Data) -> Option<String> {
    match v {
        crate::config::yaml::Data::String(s) => Some(s.clone()),
        crate::config::yaml::Data::Number(n) => Some(n.to_string()),
        crate::config::yaml::Data::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Why an output path is refused (it would write outside the project), if it is.
pub fn escapes(path: &str, project_root: &Path) -> Option<&'static str> {
    let p = path.trim();
    if p.starts_with('~') {
        return Some("it starts with `~` (a home directory)");
    }
    if Path::new(p)
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Some("it contains `..`");
    }
    if Path::new(p).is_absolute() && !Path::new(p).starts_with(project_root) {
        return Some("it is an absolute path outside the project");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::testing::random_strings;

    fn resolver<'a>(env: &'a Env, vars: &[(&str, &str)]) -> Resolver<'a> {
        Resolver::new(
            env,
            Some(env.project_root.join("_bmad")),
            vars.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn chains_resolve_in_bmad_order() {
        let mut env = Env::new(Path::new("/p"));
        env.date = "2026-11-22".into();
        let mut r = resolver(
            &env,
            &[
                (
                    "implementation_artifacts",
                    "{config_source}:implementation_artifacts",
                ),
                (
                    "sprint_status",
                    "{implementation_artifacts}/sprint-status.yaml",
                ),
                (
                    "installed_path",
                    "{project-root}/{bmad_folder}/bmm/workflows/dev-story",
                ),
                ("instructions", "{installed_path}/instructions.xml"),
                (
                    "default_output_file",
                    "{implementation_artifacts}/{{story_key}}.md",
                ),
                ("date", "system-generated"),
            ],
        );
        r.config = Some(
            [(
                "implementation_artifacts".to_owned(),
                "{project-root}/_bmad-output/impl".to_owned(),
            )]
            .into(),
        );
        assert_eq!(
            r.var("sprint_status").unwrap(),
            "/p/_bmad-output/impl/sprint-status.yaml"
        );
        assert_eq!(
            r.var("instructions").unwrap(),
            "/p/_bmad/bmm/workflows/dev-story/instructions.xml"
        );
        assert_eq!(
            r.var("default_output_file").unwrap(),
            "/p/_bmad-output/impl/{{story_key}}.md"
        );
        assert_eq!(r.runtime, ["story_key"]);
        assert_eq!(r.var("date").unwrap(), "2026-11-22");
        assert_eq!(r.text("{unknown} and {").unwrap(), "{unknown} and {");
        assert_eq!(r.unresolved, ["unknown"]);
    }

    #[test]
    fn missing_keys_and_cycles_are_problems() {
        let env = Env::new(Path::new("/p"));
        let mut r = resolver(
            &env,
            &[("a", "{b}"), ("b", "{a}"), ("c", "{config_source}:nope")],
        );
        assert_eq!(
            r.var("a"),
            Err(Problem::Cycle(vec!["a".into(), "b".into(), "a".into()]))
        );
        assert_eq!(r.var("c"), Err(Problem::NoConfig("nope".into())));
        r.config = Some(BTreeMap::new());
        assert_eq!(r.var("c"), Err(Problem::MissingKey("nope".into())));
    }

    #[test]
    fn every_install_era_maps_to_the_install() {
        let env = Env::new(Path::new("/p"));
        let mut r = Resolver::new(&env, Some(PathBuf::from("/src/v6/src")), BTreeMap::new());
        for written in [
            "{project-root}/_bmad/core/tasks/workflow.xml",
            "{project-root}/bmad/core/tasks/workflow.xml",
            "{project-root}/.bmad/core/tasks/workflow.xml",
            "{project-root}/{bmad_folder}/core/tasks/workflow.xml",
        ] {
            assert_eq!(
                r.text(written).unwrap(),
                "/src/v6/src/core/tasks/workflow.xml",
                "{written}"
            );
        }
    }

    #[test]
    fn output_paths_may_not_leave_the_project() {
        let root = Path::new("/p");
        assert_eq!(escapes("/p/docs/x.md", root), None);
        assert!(escapes("/p/../etc/passwd", root).is_some());
        assert!(escapes("~/notes.md", root).is_some());
        assert!(escapes("/etc/x.md", root).is_some());
        assert!(escapes("docs/../../x", root).is_some());
    }

    #[test]
    fn never_panics_on_braces() {
        let env = Env::new(Path::new("/p"));
        for s in random_strings("{}:_-ab é/config_source", 3, 3000, 40) {
            let mut r = resolver(&env, &[("a", "{b}"), ("b", "x")]);
            r.config = Some(BTreeMap::new());
            let _ = r.text(&s);
        }
    }
}
