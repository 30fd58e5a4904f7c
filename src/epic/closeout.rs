//! A finished story offered for review: its branch pushed and a draft pull request opened
//! with `gh`, or reused if one is open for the branch; without a remote or `gh`, the branch
//! is left ready and the command that opens the pull request is returned. Never merged.

use std::process::Command;

use super::Error;
use crate::session::{closeout, Repo, Session};

/// The pull request's URL, or the command that would open it.
pub fn pull_request(
    repo: &Repo,
    session: &Session,
    base: &str,
    title: &str,
    key: &str,
    remote: &str,
) -> Result<String, Error> {
    let head = session.short_branch();
    let create = format!(
        "git push {remote} {head} && gh pr create --draft --base {base} --head {head} --title {}",
        crate::text::shell_quote(&format!("Story {key}: {title}"))
    );
    let Ok(gh) = which::which("gh") else {
        return Ok(create);
    };
    if !closeout::publish(repo, session, remote)? {
        return Ok(create);
    }
    let cwd = &session.worktree;
    let existing = Command::new(&gh)
        .args([
            "pr", "list", "--head", head, "--json", "url", "--jq", ".[0].url",
        ])
        .current_dir(cwd)
        .output();
    if let Ok(out) = &existing {
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && url.starts_with("http") {
            return Ok(url);
        }
    }
    let body = format!(
        "Story {key}, implemented by git-bmad's epic runner.\n\nThe journal of the work is in `.bmad/sessions/{}/journal.md`.\n\nThis pull request is a draft: git-bmad never merges.",
        session.id
    );
    let out = Command::new(&gh)
        .args([
            "pr", "create", "--draft", "--base", base, "--head", head, "--title",
        ])
        .arg(format!("Story {key}: {title}"))
        .arg("--body")
        .arg(body)
        .current_dir(cwd)
        .output()
        .map_err(|e| Error::Gh(e.to_string()))?;
    if !out.status.success() {
        return Err(Error::Gh(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .split_whitespace()
        .find(|w| w.starts_with("http"))
        .unwrap_or(text.trim())
        .to_owned())
}
