//! Where playbooks come from (files in `.bmad/playbooks/`, the built-ins) and how they are
//! found, listed and checked before anything runs.

use std::path::{Path, PathBuf};

use super::builtin::{builtin, BUILTINS};
use super::commands::missing_commands;
use super::error::{Error, Result};
use super::evidence::evidence_problems;
use super::playbook::{self, Diagnostic, Playbook, Severity};
use crate::config::Config;
use crate::session::run_state::RunState;
use crate::session::{self, Repo, Session, SessionState};

/// Where playbooks are looked up, and where `init` writes them.
pub const PLAYBOOK_DIR: &str = ".bmad/playbooks";

/// A playbook's text and where it came from.
#[derive(Clone, Debug)]
pub struct Source {
    /// Its name (the file stem, or the built-in's name).
    pub name: String,
    /// The file it was read from, or `built-in`.
    pub origin: String,
    /// Its text.
    pub text: String,
}

/// The playbook `git bmad run` means in a session when none is named: the one its run
/// executes, else the one `start --playbook` named, looked up as [`resolve`] does from the
/// session worktree, then the main one.
pub fn playbook_of_session(repo: &Repo, session: &Session, cwd: &Path) -> Result<Source> {
    let journal = session::read_journal(repo, &session.id)?;
    let running = RunState::replay(journal.events())
        .manifest
        .map(|m| m.playbook);
    let named = SessionState::replay(journal.events()).playbook;
    let query = running.or(named).ok_or_else(|| Error::NoPlaybook {
        session: session.id.to_string(),
    })?;
    resolve(&query, cwd, &playbook_dirs(repo, session)?)
}

/// The reviewed version of playbook `name`: as `main` (or `master`) commits it in
/// `.bmad/playbooks/`, else the built-in of that name.
pub fn reviewed_playbook(repo: &Repo, name: &str) -> Result<Option<Source>> {
    // A name from another clone's journal: a plain one, or none.
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Ok(None);
    }
    for ext in ["yaml", "yml"] {
        let path = format!("{PLAYBOOK_DIR}/{name}.{ext}");
        if let Some((origin, bytes)) = session::trust::reviewed_files(repo, &path)?
            .into_iter()
            .next()
        {
            return Ok(Some(Source {
                name: name.to_owned(),
                origin,
                text: String::from_utf8_lossy(&bytes).into_owned(),
            }));
        }
    }
    Ok(builtin(name).map(|text| Source {
        name: name.to_owned(),
        origin: "built-in".into(),
        text: text.to_owned(),
    }))
}

/// How the playbook a run from an untrusted clone stored compares with the reviewed one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UntrustedPlaybook {
    /// No reviewed playbook has its name, or its text is not here.
    Unreviewed,
    /// It differs from the reviewed one (`origin`): the diff from that to it.
    Differs {
        /// Where the reviewed one is (`main:.bmad/playbooks/x.yaml`, `built-in`).
        origin: String,
        /// A unified diff, reviewed → stored.
        diff: String,
    },
    /// Word for word the reviewed one; `runnable`: `git bmad run <name>` in the session
    /// finds that very text.
    Reviewed {
        /// Where the reviewed one is.
        origin: String,
        /// Whether running it by name here runs the reviewed text.
        runnable: bool,
    },
}

/// Compare the playbook `name` that another clone stored as `blob` for `session`'s run with
/// the reviewed one of that name.
pub fn compare_untrusted_playbook(
    repo: &Repo,
    session: &Session,
    name: &str,
    blob: &str,
) -> Result<UntrustedPlaybook> {
    let (Ok(stored), Some(reviewed)) = (
        session::read_stored_text(repo, blob),
        reviewed_playbook(repo, name)?,
    ) else {
        return Ok(UntrustedPlaybook::Unreviewed);
    };
    let diff = session::trust::diff_texts(
        repo,
        (&reviewed.text, &reviewed.origin),
        (&stored, &format!("the run's playbook ({blob})")),
    )?;
    if !diff.is_empty() {
        return Ok(UntrustedPlaybook::Differs {
            origin: reviewed.origin,
            diff,
        });
    }
    let dirs = playbook_dirs(repo, session)?;
    let runnable = resolve(name, &session.worktree, &dirs).is_ok_and(|f| f.text == reviewed.text);
    Ok(UntrustedPlaybook::Reviewed {
        origin: reviewed.origin,
        runnable,
    })
}

/// Where a session's playbooks are looked up: its worktree, then the main worktree.
pub fn playbook_dirs(repo: &Repo, session: &Session) -> Result<Vec<PathBuf>> {
    let main = repo.main_workdir()?;
    Ok(vec![session.worktree.clone(), main])
}

/// Find a playbook: a file path, else `<name>.yaml` in the session worktree's and then the
/// main worktree's `.bmad/playbooks/`, else a built-in.
pub fn resolve(query: &str, cwd: &Path, dirs: &[PathBuf]) -> Result<Source> {
    let as_path = cwd.join(query);
    let looks_like_path =
        query.contains('/') || query.ends_with(".yaml") || query.ends_with(".yml");
    let mut searched = Vec::new();
    let mut candidates = Vec::new();
    if looks_like_path {
        candidates.push(as_path);
    }
    if !query.contains('/') {
        for dir in dirs {
            let dir = dir.join(PLAYBOOK_DIR);
            for ext in ["yaml", "yml"] {
                let stem = query.trim_end_matches(".yaml").trim_end_matches(".yml");
                candidates.push(dir.join(format!("{stem}.{ext}")));
            }
        }
    }
    // The session worktree and the main one may be the same directory.
    let mut unique: Vec<PathBuf> = Vec::new();
    for path in candidates {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    for path in unique {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| query.to_owned());
                return Ok(Source {
                    name,
                    origin: path.display().to_string(),
                    text,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                searched.push(path.display().to_string())
            }
            Err(e) => return Err(Error::Read { path, source: e }),
        }
    }
    if let Some(text) = builtin(query) {
        return Ok(Source {
            name: query.to_owned(),
            origin: "built-in".into(),
            text: text.to_owned(),
        });
    }
    Err(Error::UnknownPlaybook {
        query: query.to_owned(),
        searched,
    })
}

/// A playbook checked without running it.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The playbook, when it parsed.
    pub playbook: Option<Playbook>,
    /// Every violation and warning, with its place.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether its slash commands were looked up in a worktree.
    pub commands_checked: bool,
}

impl Checked {
    /// How many of the diagnostics are errors.
    pub fn errors(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }
}

/// Parse a playbook strictly and, given a worktree and its config, check that its slash
/// commands exist there and its bare `tests_pass` has a command. `strict` makes warnings
/// (a step nothing checks) errors.
pub fn check(source: &Source, worktree: Option<(&Path, &Config)>, strict: bool) -> Checked {
    let (playbook, mut diagnostics) = playbook::parse(&source.text, &source.name);
    let mut commands_checked = false;
    if let Some(p) = &playbook {
        if let Some((root, config)) = worktree {
            diagnostics.extend(missing_commands(p, root, config));
            commands_checked = true;
        }
        diagnostics.extend(evidence_problems(p, worktree.map(|(_, c)| c)));
    }
    if strict {
        for d in &mut diagnostics {
            d.severity = Severity::Error;
        }
    }
    Checked {
        playbook,
        diagnostics,
        commands_checked,
    }
}

/// Parse a playbook and check its commands against the session worktree; any error stops
/// everything before the first step.
pub fn validate(source: &Source, root: &Path, config: &Config) -> Result<Playbook> {
    let checked = check(source, Some((root, config)), false);
    let errors = checked.errors();
    match checked.playbook {
        Some(p) if errors == 0 => Ok(p),
        _ => Err(Error::Invalid {
            origin: source.origin.clone(),
            diagnostics: checked.diagnostics,
        }),
    }
}

/// One playbook there is, for `git bmad playbook list`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Listed {
    /// Its name.
    pub name: String,
    /// Its file, or `built-in`.
    pub origin: String,
    /// How many steps it has; `None` when it does not parse.
    pub steps: Option<usize>,
    /// What it does.
    pub description: Option<String>,
}

/// The playbooks in `dirs` (a name found twice is the first one's) and then the built-ins
/// no file overrides.
pub fn list(dirs: &[PathBuf]) -> Vec<Listed> {
    let mut listed: Vec<Listed> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir.join(PLAYBOOK_DIR)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let is_yaml = matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            );
            if !is_yaml || name == "index" || listed.iter().any(|l| l.name == name) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            listed.push(describe(&name, &path.display().to_string(), &text));
        }
    }
    for (name, text) in BUILTINS {
        if !listed.iter().any(|l| l.name == *name) {
            listed.push(describe(name, "built-in", text));
        }
    }
    listed
}

fn describe(name: &str, origin: &str, text: &str) -> Listed {
    let (playbook, _) = playbook::parse(text, name);
    Listed {
        name: name.to_owned(),
        origin: origin.to_owned(),
        steps: playbook.as_ref().map(|p| p.steps().count()),
        description: playbook.and_then(|p| p.description),
    }
}
