//! `git bmad init`: the project configuration and the git config that shows the journal.

use std::path::PathBuf;

use super::error::{Error, Result};
use crate::config::{detect_test_command, template_for, DetectedTests, CONFIG_PATH};
use crate::git::Repo;

/// The notes refs git should display in `git log` and carry across amend and rebase.
const NOTES_GLOB: &str = "refs/notes/bmad/*";

/// What `init` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct InitOutcome {
    /// The config file.
    pub config_path: PathBuf,
    /// Whether it was written now (false: it was there and was left alone).
    pub config_written: bool,
    /// The git config entries added now (`key=value`).
    pub git_config_added: Vec<String>,
    /// The test command written into a new config, when the build files name one.
    pub test_command: Option<DetectedTests>,
    /// The allowed-signers line of the key this clone signs its pushed journals with (made
    /// now if it had none); `None` when no key can be made here (`signing_problem` says why).
    pub signing_line: Option<String>,
    /// Why no signing key could be made (no `ssh-keygen`, say): journals still work here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_problem: Option<String>,
}

/// Scaffold `.bmad/config.yaml` (never overwriting one) and set the notes config.
pub fn init(repo: &Repo) -> Result<InitOutcome> {
    let main = repo.main_workdir()?;
    let config_path = main.join(CONFIG_PATH);
    let mut test_command = None;
    let config_written = if config_path.exists() {
        false
    } else {
        test_command = detect_test_command(&main);
        let dir = config_path.parent().unwrap_or(&main);
        std::fs::create_dir_all(dir).map_err(|e| Error::io("could not create", dir, e))?;
        let text = template_for(test_command.as_ref());
        super::render::write_atomically(&config_path, text.as_bytes())?;
        true
    };
    let git_config_added = ensure_notes_config(repo)?;
    // Local journals need no key; one made now is what another machine will trust.
    let (signing_line, signing_problem) = match super::trust::own_key(super::Repo::of(repo), true) {
        Ok(key) => (key.map(|k| k.allowed_signers_line()), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Ok(InitOutcome {
        config_path,
        config_written,
        git_config_added,
        test_command,
        signing_line,
        signing_problem,
    })
}

/// Make `git log` show the journal and `git commit --amend` / rebase carry it along.
///
/// Idempotent: values already present are not added twice.
pub(crate) fn ensure_notes_config(repo: &Repo) -> Result<Vec<String>> {
    let mut added = Vec::new();
    for key in ["notes.displayRef", "notes.rewriteRef"] {
        if repo.add_local_config(key, NOTES_GLOB)? {
            added.push(format!("{key}={NOTES_GLOB}"));
        }
    }
    Ok(added)
}
