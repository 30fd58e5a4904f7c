//! Policy: what agents may not do to a repository, and the checks that enforce it.
//!
//! - [`secrets`]: the scanner (also used to redact agent output before it is journaled);
//! - [`scan`]: what `git bmad scan` reads;
//! - [`hooks`]: installing the hook shims, chaining any hook that was there before;
//! - [`push`], [`commit`], [`refs`]: the checks the hooks run (pre-push; pre-commit and the
//!   `--no-verify` detector; reference-transaction).
//!
//! Hooks are guardrails, not a sandbox: `-c core.hooksPath=/dev/null`, plumbing and other git
//! implementations go around them. The server's branch protection is the real wall; these
//! checks stop the everyday accidents and record every refusal in the session journal.

pub mod agent;
pub mod commit;
pub mod dispatch;
pub mod export;
pub mod guard;
pub mod hooks;
pub mod live_run;
mod protected;
pub mod push;
pub mod refs;
pub mod rules;
pub mod scan;
pub mod secrets;
mod session_policy;

pub use protected::{is_protected, protected_refs, protected_refs_with};
pub use session_policy::SessionPolicy;

use std::path::PathBuf;

use crate::git::Repo;
use crate::session;
use rules::RuleId;

/// Errors of the policy layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The git layer failed.
    #[error(transparent)]
    Git(#[from] crate::git::Error),
    /// The session layer failed.
    #[error(transparent)]
    Session(#[from] session::Error),
    /// A hook file could not be read or written.
    #[error("{op} {}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A hook that must run contained cannot be.
    #[error("{0}")]
    Contain(String),
    /// A global install needs a home for its hooks.
    #[error("neither XDG_CONFIG_HOME nor HOME is set: there is nowhere to put hooks for every repository of this user")]
    NoHome,
}

impl Error {
    fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// What every wall of `repo`'s steps and commands hides though it lies where the walls would
/// show it: the user's main worktree, the signing key the user configured when it is a
/// file (this clone's own is in the key store, hidden everywhere already), and the
/// registration of the CI runner git-bmad runs under; and what they show
/// though it lies where they would hide it: `runners.sandbox_paths`, and the git-bmad the
/// hooks run; and the repository's config as a copy without the credentials it carries.
pub fn hidden_from_steps(repo: &session::Repo) -> crate::runner::sandbox::Hidden {
    let repo = repo.git(crate::git::Direct);
    let home = crate::env::Var::Home.path();
    let mut shown = session::load_config(repo)
        .map(|c| c.runners.sandbox_paths.places(home.as_deref()))
        .unwrap_or_default();
    // The git-bmad the hooks run, wherever it lies: an agent's commit runs them.
    shown.extend(
        hooks::installed_binaries(repo)
            .into_iter()
            .map(|bin| (bin, false)),
    );
    // A token a checkout kept in the config (`http.<url>.extraheader`) is read by no wall.
    let stand_ins = match repo.config_without_credentials() {
        Ok(copy) => copy
            .map(|copy| (copy, repo.common_dir().join("config")))
            .into_iter()
            .collect(),
        Err(e) => {
            tracing::warn!("{e}");
            Vec::new()
        }
    };
    crate::runner::sandbox::Hidden {
        main: repo.main_workdir().ok(),
        files: session::trust::key_files(repo)
            .into_iter()
            .chain(crate::runner::sandbox::ci_runner_credentials())
            .collect(),
        shown,
        stand_ins,
    }
}

/// What git in `worktree` needs while a command runs there in walls raised by `layers`,
/// held until dropped: where the walls cannot show the config's credential-free copy in its
/// place, the worktree names a shadow of the common dir that holds it
/// ([`crate::git::CommandShadow`]).
pub fn command_shadow(
    repo: &session::Repo,
    layers: &crate::runner::sandbox::Layers,
    worktree: &std::path::Path,
) -> Result<Option<session::CommandShadow>, Error> {
    if layers.can_stand_in() || !layers.any() {
        return Ok(None);
    }
    Ok(repo.git(crate::git::Direct).command_shadow(worktree)?)
}

/// The session of the worktree `repo` was opened in, if it is a session worktree.
pub fn current_session(repo: &Repo) -> Option<session::Session> {
    if !repo.git_dir().join(session::SESSION_MARKER).exists() {
        return None;
    }
    session::locate(session::Repo::of(repo), None).ok()
}

/// Record a refusal in the journal of the session it happened in (if any). A journal that
/// cannot be written must not turn a refusal into an acceptance, so errors are only logged.
///
/// In reference-transaction git holds ref locks (packed-refs among them) until the hook
/// returns, so writing the journal there would wait on git and git on us. That hook keeps the
/// record in a file ([`session::defer`]) for the next journal write, and starts a detached
/// `git bmad journal flush` that makes it once git has let go.
pub fn record_violation(repo: &Repo, hook: &str, rule: RuleId, subject: &str, reason: &str) {
    let Some(s) = current_session(repo) else {
        return;
    };
    let violation = session::schema::PolicyViolation {
        hook: hook.to_owned(),
        rule: rule.to_string(),
        // A blocked command or a pushed URL may carry a token.
        subject: secrets::redact(subject),
        reason: secrets::redact(reason),
        paths: Vec::new(),
    };
    let body = session::Body::PolicyViolation(violation);
    // Inside a run, the agent's environment names its step: the violation belongs to it.
    let step = crate::env::Var::BmadStep.get().filter(|_| {
        crate::env::Var::BmadSession
            .get()
            .is_some_and(|id| id == s.id.as_str())
    });
    // Contained, the journal is out of reach: the record waits in the step's walls for the
    // supervisor, which takes violations (and nothing else) from there after the step.
    if crate::env::Var::Contained.is_set() {
        if let Err(e) = session::defer(repo, &s.id, &body, step, Some(rule.to_string())) {
            tracing::warn!(error = %e, "could not keep a policy violation for the supervisor");
        }
        return;
    }
    if hook == "reference-transaction" {
        // Kept in a file now, before git returns; a detached flusher (its own process group,
        // so a step's cleanup does not kill it) journals it once git lets go of the refs.
        if let Err(e) = session::defer(repo, &s.id, &body, step, Some(rule.to_string())) {
            tracing::warn!(error = %e, "could not keep a policy violation for the journal");
            return;
        }
        let spawned = std::env::current_exe().and_then(|exe| {
            let mut flusher = crate::runner::Program::new(
                exe,
                [
                    "-C".into(),
                    repo.workdir().as_os_str().to_owned(),
                    "journal".into(),
                    "flush".into(),
                    s.id.as_str().into(),
                ],
            );
            flusher.env_remove = vec!["GIT_DIR".into(), "GIT_INDEX_FILE".into()];
            flusher.start_detached()
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start the journal flusher");
        }
        return;
    }
    let event = session::NewEvent::new(body)
        .step(step)
        .decision(Some(session::Decision::Auto))
        .trigger(Some(rule.to_string()));
    if let Err(e) = session::record(session::Repo::of(repo), &s, event) {
        tracing::warn!(error = %e, "could not journal a policy violation");
    }
}

/// The command line of the process that ran us (git, for a hook): the hook shims `exec`
/// git-bmad, so our parent is the git command that fired the hook.
pub fn parent_argv() -> Option<Vec<String>> {
    let ppid = std::os::unix::process::parent_id();
    let raw = std::fs::read(format!("/proc/{ppid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// The git subcommand in an argv (`git -C x -c a=b commit -m …` → `commit`).
pub fn git_subcommand(argv: &[String]) -> Option<&str> {
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
            | "--config-env" => {
                args.next();
            }
            a if a.starts_with('-') => {}
            a => return Some(a),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::git_subcommand;

    #[test]
    fn finds_the_subcommand() {
        let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            git_subcommand(&argv("git -C /x -c a=b commit -m hi")),
            Some("commit")
        );
        assert_eq!(
            git_subcommand(&argv("git --no-pager merge topic")),
            Some("merge")
        );
        assert_eq!(git_subcommand(&argv("git")), None);
    }
}
