//! The playbooks shipped in the binary, which `git bmad init` also writes into
//! `.bmad/playbooks/` for the team to read and change.

/// `auto-feature`: spec to pull request with spec-kit's commands.
const AUTO_FEATURE: &str = include_str!("playbooks/auto-feature.yaml");
/// `auto-validate`: QA plan and QA run.
const AUTO_VALIDATE: &str = include_str!("playbooks/auto-validate.yaml");
/// A playbook that uses and explains every field.
pub const TEMPLATE: &str = include_str!("playbooks/template.yaml");
/// The index of `.bmad/playbooks/`.
pub const INDEX: &str = include_str!("playbooks/index.yaml");

/// The built-in playbooks by name.
pub const BUILTINS: &[(&str, &str)] = &[
    ("auto-feature", AUTO_FEATURE),
    ("auto-validate", AUTO_VALIDATE),
    ("template", TEMPLATE),
];

/// A built-in playbook's text.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_validate_clean() {
        for (name, text) in BUILTINS {
            let (playbook, diags) = super::super::playbook::parse(text, name);
            assert!(diags.is_empty(), "{name}: {diags:#?}");
            assert_eq!(playbook.unwrap().name, *name);
        }
        let (feature, _) = super::super::playbook::parse(AUTO_FEATURE, "x");
        let ids: Vec<String> = feature.unwrap().steps().map(|s| s.id.clone()).collect();
        assert_eq!(
            ids,
            [
                "plan",
                "tasks",
                "agreement",
                "implement",
                "agreement-check",
                "qa-plan",
                "qa-run",
                "pr"
            ]
        );
    }
}

/// A file `init` wrote or left alone.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Scaffolded {
    /// The file.
    pub path: std::path::PathBuf,
    /// Whether it was written now (false: it was there and was kept).
    pub written: bool,
}

/// Write the playbook index, the template and the built-in playbooks into
/// `<main>/.bmad/playbooks/`, never overwriting a file that is there.
pub fn scaffold(main_workdir: &std::path::Path) -> std::io::Result<Vec<Scaffolded>> {
    let dir = main_workdir.join(super::PLAYBOOK_DIR);
    let files = [
        ("index.yaml", INDEX),
        ("template.yaml", TEMPLATE),
        ("auto-feature.yaml", AUTO_FEATURE),
        ("auto-validate.yaml", AUTO_VALIDATE),
    ];
    let mut out = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        let written = !path.exists();
        if written {
            crate::fs::write_atomically(&path, text.as_bytes(), None)?;
        }
        out.push(Scaffolded { path, written });
    }
    Ok(out)
}
