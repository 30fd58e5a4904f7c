//! A finished story offered for review: its branch pushed and a draft pull request opened
//! with `gh`, or reused if one is open for the branch; without a remote or `gh`, the branch
//! is left ready and the command that opens the pull request is returned. Never merged.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::Error;
use crate::runner::{self, Output, Spec};
use crate::session::{closeout, Repo, Session};

/// Held while this process pushes a story's branch or session: two pushes of one ref at
/// once make the remote refuse one (a runner reports stages while its story is published).
pub(super) static PUSHING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The most one `gh` call may take: a hung network call must not hold the run.
const GH_TIMEOUT: Duration = Duration::from_secs(120);

/// What `gh` sees of this process's environment: where it runs and how it logs in, nothing
/// of the repository it was called from or of an agent's step.
const GH_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "GH_CONFIG_DIR",
    "GH_HOST",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTPS_PROXY",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// Run `gh` with `args` in `cwd`, through the runner: a timeout, the interrupt, and an
/// environment of [`GH_ENV`] alone.
pub(super) fn gh(
    program: &Path,
    args: Vec<String>,
    cwd: &Path,
    interrupt: &AtomicBool,
) -> Result<Output, Error> {
    let env = GH_ENV
        .iter()
        .filter_map(|key| Some((key.to_string(), crate::env::named(key)?)))
        .collect();
    let spec = Spec {
        program: program.to_path_buf(),
        args,
        cwd: cwd.to_path_buf(),
        env,
        env_remove: Vec::new(),
        clear_env: true,
        stdin: None,
        timeout: GH_TIMEOUT,
        // git-bmad's own call with the user's token: never an agent's.
        sandbox: None,
    };
    runner::run_process(&spec, interrupt).map_err(|e| Error::Gh(e.to_string()))
}

/// The pull request's URL, or the command that would open it.
pub fn pull_request(
    repo: &Repo,
    session: &Session,
    base: &str,
    title: &str,
    key: &str,
    remote: &str,
    interrupt: &AtomicBool,
) -> Result<String, Error> {
    let head = session.short_branch();
    let create = format!(
        "git push {remote} {head} && gh pr create --draft --base {base} --head {head} --title {}",
        crate::text::shell_quote(&format!("Story {key}: {title}"))
    );
    let Ok(program) = which::which("gh") else {
        return Ok(create);
    };
    let published = {
        let _one = PUSHING.lock().unwrap_or_else(|p| p.into_inner());
        closeout::publish(repo, session, remote)?
    };
    if !published {
        return Ok(create);
    }
    let cwd = &session.worktree;
    let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let list = [
        "pr", "list", "--head", head, "--json", "url", "--jq", ".[0].url",
    ];
    if let Ok(out) = gh(&program, words(&list), cwd, interrupt) {
        let url = String::from_utf8_lossy(out.stdout.head()).trim().to_owned();
        if out.exit.success() && url.starts_with("http") {
            return Ok(url);
        }
    }
    let body = format!(
        "Story {key}, implemented by git-bmad's epic runner.\n\nThe journal of the work is in `.bmad/sessions/{}/journal.md`.\n\nThis pull request is a draft: git-bmad never merges.",
        session.id
    );
    let mut create_args = words(&["pr", "create", "--draft", "--base", base, "--head", head]);
    create_args.extend([
        "--title".to_owned(),
        format!("Story {key}: {title}"),
        "--body".to_owned(),
        body,
    ]);
    let out = gh(&program, create_args, cwd, interrupt)?;
    if !out.exit.success() {
        let said = String::from_utf8_lossy(out.stderr.head()).trim().to_owned();
        return Err(Error::Gh(if said.is_empty() {
            format!("gh pr create {}", out.exit)
        } else {
            said
        }));
    }
    let text = String::from_utf8_lossy(out.stdout.head()).into_owned();
    Ok(text
        .split_whitespace()
        .find(|w| w.starts_with("http"))
        .unwrap_or(text.trim())
        .to_owned())
}
