//! One run of a story's tests as the judge runs them: a clean checkout of exactly the
//! commit judged (a repository of its own), files laid over it, the command in walls with
//! no credential in its environment, ended by a deadline.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::{passed, Passed};
use crate::epic::Error;
use crate::policy::secrets::redact;
use crate::runner::{self, Spec};
use crate::session::{self, ObjectId, Repo};
use crate::supervisor::contain;

/// A file laid over a clean checkout before its tests run: a story's tests over its base,
/// the hidden acceptance tests over its commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlay {
    /// Where, relative to the checkout.
    pub path: String,
    /// What it holds.
    pub bytes: Vec<u8>,
    /// Whether it is executable.
    pub executable: bool,
}

/// One run of the test command.
pub(super) struct Ran {
    /// It passed.
    pub(super) green: bool,
    /// How it ended.
    pub(super) exit: runner::Exit,
    /// What its runner reported passed.
    pub(super) passed: Option<Passed>,
    /// The end of its output, redacted, when it failed.
    pub(super) excerpt: String,
}

/// The walls the judge's test runs get.
pub struct Walls {
    /// Whether the runs are contained, and by what.
    pub(super) containment: contain::Containment,
    /// Whether they reach the network.
    pub(super) network: crate::config::Network,
    /// The variables the configuration passes to test runs (`runners.env`).
    pub(super) passed_env: Vec<String>,
}

/// A clean checkout of `commit` (a repository of its own) in a temporary folder, with
/// `overlay` laid over it: the folder, removed when dropped, and the checkout.
pub fn checkout(
    repo: &Repo,
    commit: ObjectId,
    overlay: &[Overlay],
) -> Result<(tempfile::TempDir, std::path::PathBuf), Error> {
    let scratch = tempfile::Builder::new()
        .prefix("git-bmad-judge-")
        .tempdir()
        .map_err(|source| Error::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let checkout = scratch.path().join("checkout");
    repo.clean_checkout(commit, &checkout)
        .map_err(session::Error::from)?;
    for file in overlay {
        let to = checkout.join(&file.path);
        let written = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            // A link of the commit's in the way is replaced, never written through.
            .and_then(|()| match std::fs::symlink_metadata(&to) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&to),
                Ok(_) => std::fs::remove_file(&to),
                Err(_) => Ok(()),
            })
            .and_then(|()| std::fs::write(&to, &file.bytes))
            .and_then(|()| {
                use std::os::unix::fs::PermissionsExt;
                let mode = if file.executable { 0o755 } else { 0o644 };
                std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))
            });
        written.map_err(|source| Error::Write { path: to, source })?;
    }
    Ok((scratch, checkout))
}

/// Run `command` in a clean checkout of `commit` with `overlay` laid over it, with no
/// credential in its environment, ended by `deadline`.
pub(super) fn run_on(
    repo: &Repo,
    commit: ObjectId,
    overlay: &[Overlay],
    command: &str,
    walls: &Walls,
    deadline: Instant,
    interrupt: &AtomicBool,
) -> Result<Ran, Error> {
    // Past the deadline, a second: a run that cannot start still says it timed out.
    let timeout = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    let (_scratch, checkout) = checkout(repo, commit, overlay)?;
    let walls_env = walls.passed_env.clone();
    let walls = contain::command(&walls.containment, &checkout, repo, walls.network)?;
    let spec = Spec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), command.to_owned()],
        cwd: checkout,
        env: crate::env::untrusted(&walls_env),
        env_remove: Vec::new(),
        clear_env: true,
        stdin: None,
        timeout,
        sandbox: walls.as_ref().map(|w| w.contained.clone()),
    };
    let out = runner::run_process(&spec, interrupt).map_err(|e| Error::Judge(e.to_string()))?;
    let text = |c: &runner::Captured| {
        let mut text = String::from_utf8_lossy(c.head()).into_owned();
        if !c.complete() {
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(&c.tail()));
        }
        text
    };
    let all = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    let green = out.exit.success();
    let excerpt = if green {
        String::new()
    } else {
        let said = [
            out.stdout.excerpt("output", 1200),
            out.stderr.excerpt("stderr", 800),
        ];
        redact(format!("{}\n{}", out.exit, said.join("\n")).trim())
    };
    Ok(Ran {
        green,
        exit: out.exit,
        passed: passed(&all),
        excerpt,
    })
}
