//! What a run on GitHub Actions needs before anything is dispatched, checked where the user
//! starts it, each lack named with the command that mends it: a runner that could not run
//! the story would else fail three times over before anybody learns why.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::super::names::session_name;
use super::super::options::new_base;
use super::super::options::EpicOptions;
use super::super::pipeline::Era;
use super::super::plan::Plan;
use super::super::Error;
use super::api::{self, Failed};
use super::coordinator::gh_program;
use super::workflows::{Workflows, SIGNING_SECRET};
use super::STORY_WORKFLOW;
use crate::session::{self, closeout, sync, trust, Repo};

/// Check everything a run on Actions needs: an era a runner can run, a remote that takes
/// the sessions' state, the story workflow where GitHub dispatches it, the secrets its jobs
/// read, and keys each side trusts.
pub(in crate::epic) fn preflight(
    repo: &Repo,
    main: &Path,
    plan: &Plan,
    options: &EpicOptions<'_>,
) -> Result<(), Error> {
    let remote = &options.remote;
    let fail = |why: String| Err(Error::Actions(why));
    if plan.era == Era::V4 {
        return fail("--on actions runs v6 and v7 epics: a v4 epic signs each story's status into stories.json on the epic's branch as it goes, which only a run here does".into());
    }
    if !session::repository::has_remote(repo, remote)? {
        return fail(format!(
            "--on actions coordinates through a remote, and there is no {remote}: --remote names it"
        ));
    }
    if !sync::sends_sessions_to(repo, remote)? {
        let opt_in = sync::opt_in_key(remote);
        return fail(format!(
            "--on actions hands the run to runners through {remote}, journal and checkpoints included: git config {opt_in} true"
        ));
    }
    let workflow = main.join(".github/workflows").join(STORY_WORKFLOW);
    if !workflow.is_file() {
        return fail(format!(
            "no {}: git bmad ci init github writes it; commit and push it to the default branch",
            workflow.display()
        ));
    }
    let gh = gh_program()?;
    let base = dispatch_base(repo, &plan.epic, options.base.as_deref())?;
    let theirs = |branch: &str| format!("refs/remotes/{remote}/{branch}");
    let has = |rev: &str, path: &str| -> Result<bool, Error> {
        Ok(session::repository::file_at(repo, rev, path)?.is_some())
    };
    let workflow_path = format!(".github/workflows/{STORY_WORKFLOW}");
    // The branches as the remote holds them now (GitHub and the runners read them there),
    // not as this clone last fetched them.
    if !session::repository::fetch_branch(repo, remote, &base)? {
        return fail(format!(
            "GitHub runs a story job on a branch, and {remote} has no branch {base}: push it (git push {remote} {base}), or name one with --base"
        ));
    }
    let interrupt = AtomicBool::new(false);
    let default = default_branch(&gh, main, &interrupt)?;
    if let Some(default) = &default {
        if !session::repository::fetch_branch(repo, remote, default)?
            || !has(&theirs(default), &workflow_path)?
        {
            return fail(format!(
                "GitHub dispatches only workflows its default branch ({default}) holds, and {remote}'s {default} has no {workflow_path}: commit it there and push (git push {remote} {default})"
            ));
        }
    }
    if !has(&theirs(&base), &workflow_path)? {
        return fail(format!(
            "the story jobs run {workflow_path} as {remote}'s {base} holds it, and it holds none: commit it there and push (git push {remote} {base})"
        ));
    }
    missing_secrets(&gh, main, options, &interrupt)?;
    let trusted_on = default.unwrap_or_else(|| "main".to_owned());
    keys_trusted(repo, remote, &trusted_on)
}

/// The branch the story jobs of `epic` are dispatched on: the epic session's base (an
/// earlier run's), else `base` (`--base`), else the branch checked out.
pub fn dispatch_base(repo: &Repo, epic: &str, base: Option<&str>) -> Result<String, Error> {
    if let Some(epic) = closeout::find_by_name(repo, &session_name(epic))? {
        return Ok(epic.base);
    }
    match new_base(repo, base)? {
        Some(base) => Ok(base),
        None => Err(Error::Actions(
            "GitHub runs a story job on a branch, and HEAD is detached: check out the epic's base branch, or name it with --base".into(),
        )),
    }
}

/// The repository's default branch as GitHub says (`None` when it could not be asked).
fn default_branch(gh: &Path, cwd: &Path, interrupt: &AtomicBool) -> Result<Option<String>, Error> {
    let args = ["repo", "view", "--json", "defaultBranchRef"].map(String::from);
    let Ok(json) = api::call(gh, &args, cwd, interrupt)? else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap_or_default();
    Ok(value["defaultBranchRef"]["name"]
        .as_str()
        .map(str::to_owned))
}

/// Refuse when a secret the jobs read is not set; where the list cannot be read (a token
/// that may not list secrets, as a job's may not), the jobs say so themselves.
fn missing_secrets(
    gh: &Path,
    cwd: &Path,
    options: &EpicOptions<'_>,
    interrupt: &AtomicBool,
) -> Result<(), Error> {
    let args = ["secret", "list", "--json", "name"].map(String::from);
    let json = match api::call(gh, &args, cwd, interrupt)? {
        Ok(json) => json,
        Err(Failed::ForNow(said) | Failed::ForGood(said)) => {
            (options.progress)(&format!(
                "could not read the repository's secrets ({said}): a job without one says so"
            ));
            return Ok(());
        }
    };
    let Ok(serde_json::Value::Array(set)) = serde_json::from_slice(&json) else {
        return Ok(());
    };
    let set: Vec<&str> = set.iter().filter_map(|s| s["name"].as_str()).collect();
    let wanted = Workflows::for_config(options.config, "").secrets();
    let missing: Vec<&(String, String)> = wanted
        .iter()
        .filter(|(name, _)| !set.contains(&name.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing
        .iter()
        .map(|(name, what)| format!("{name} ({what})"))
        .collect::<Vec<_>>()
        .join("; ");
    let first = &missing[0].0;
    Err(Error::Actions(format!(
        "the story jobs read repository secrets that are not set: {list}. Set each with gh secret set {first} (git bmad ci init github says how to make the signing key)"
    )))
}

/// Refuse unless `.bmad/allowed_signers` on the remote's `branch` (what every runner's clone
/// reads) names this clone's key, which signs the run, and a key of the runners', which
/// signs their reports.
fn keys_trusted(repo: &Repo, remote: &str, branch: &str) -> Result<(), Error> {
    let rev = format!("refs/remotes/{remote}/{branch}");
    let text = session::repository::file_at(repo, &rev, trust::ALLOWED_SIGNERS)?
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    // Each line's key, `<type> <base64>`.
    let keys: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let at = fields.iter().position(|f| {
                f.starts_with("ssh-") || f.starts_with("ecdsa-") || f.starts_with("sk-")
            })?;
            Some(fields.get(at..at + 2)?.join(" "))
        })
        .collect();
    let own = trust::own_key(repo, true)?.ok_or_else(|| {
        Error::Actions("this clone has no signing key to sign the run with".into())
    })?;
    let file = trust::ALLOWED_SIGNERS;
    if !keys.contains(&own.public) {
        return Err(Error::Actions(format!(
            "the runners take the run only as a key in {file} on {remote}'s {branch} signed it, and this clone's is not there: add the line git bmad trust show prints, commit and push it to {branch}"
        )));
    }
    // A coordinator in a job signs with the runners' key itself.
    let in_a_job = crate::env::Var::GithubActions
        .get()
        .is_some_and(|v| v == "true");
    if !in_a_job && keys.iter().all(|k| *k == own.public) {
        return Err(Error::Actions(format!(
            "{file} on {remote}'s {branch} names no key of the runners': their reports would be taken from nobody. Add the public half of {SIGNING_SECRET} (ssh-keygen -y -f <key>, as one line: bmad-runner <type> <key>), commit and push it to {branch}"
        )));
    }
    Ok(())
}
