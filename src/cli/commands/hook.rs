//! `git bmad hook <name> …` (hidden): what the installed shims run.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::git::Repo;
use crate::policy::{self, commit, hooks, push, refs};

/// Run the git-bmad check for a git hook, then any hook it replaced.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook name, as git calls it
    pub name: String,
    /// The hook's arguments
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Run `hook`.
pub fn cmd_hook(ctx: &Context, args: &HookArgs) -> Result<u8, CommandError> {
    // Only these hooks get input; reading stdin in the others could wait on a terminal.
    let mut input = Vec::new();
    if matches!(
        args.name.as_str(),
        "pre-push" | "reference-transaction" | "post-rewrite"
    ) {
        std::io::stdin()
            .read_to_end(&mut input)
            .map_err(|e| CommandError::failed(format!("could not read the hook's input: {e}")))?;
    }
    let repo = ctx.repo()?;
    let code = match args.name.as_str() {
        "pre-push" => pre_push(&repo, args, &input)?,
        "reference-transaction" => reference_transaction(&repo, &input)?,
        "pre-commit" => pre_commit(&repo)?,
        "pre-merge-commit" => {
            commit::stamp(&repo, std::os::unix::process::parent_id()).map_err(policy_error)?;
            exit::OK
        }
        "prepare-commit-msg" => prepare_commit_msg(&repo, args)?,
        _ => exit::OK,
    };
    if code != exit::OK {
        return Ok(code);
    }
    run_chained(&args.args, &input)
}

fn policy_error(e: policy::Error) -> CommandError {
    CommandError::failed(e.to_string())
}

fn refuse(repo: &Repo, hook: &str, what: &str, refusals: &[push::Refusal]) -> u8 {
    let mut err = std::io::stderr().lock();
    for r in refusals {
        let _ = writeln!(
            err,
            "git-bmad: {what} refused [{}] {}: {}",
            r.rule, r.refname, r.reason
        );
        let _ = writeln!(err, "  instead: {}", r.instead);
        policy::record_violation(repo, hook, r.rule, &r.refname, &r.reason);
    }
    exit::POLICY
}

fn pre_push(repo: &Repo, args: &HookArgs, input: &[u8]) -> Result<u8, CommandError> {
    let remote = args.args.first().map(String::as_str).unwrap_or("origin");
    let lines = push::parse_lines(&String::from_utf8_lossy(input));
    // git produces the outgoing patches on the other core while the checks run.
    let scans = push::start_scans(repo, remote, &lines);
    let argv = policy::parent_argv();
    let protected = policy::protected_refs(repo).map_err(policy_error)?;
    let report = push::check(repo, remote, &lines, argv.as_deref(), &protected, scans)
        .map_err(policy_error)?;
    for w in &report.warnings {
        eprintln!(
            "git-bmad: warning: {}: {} [{}] {}",
            w.location(),
            w.description,
            w.rule,
            w.excerpt
        );
    }
    if report.refusals.is_empty() {
        return Ok(exit::OK);
    }
    Ok(refuse(repo, "pre-push", "push", &report.refusals))
}

fn reference_transaction(repo: &Repo, input: &[u8]) -> Result<u8, CommandError> {
    let updates = refs::parse(&String::from_utf8_lossy(input));
    let protected = policy::protected_refs(repo).map_err(policy_error)?;
    let refusals = refs::check(repo, &updates, &protected);
    if refusals.is_empty() {
        return Ok(exit::OK);
    }
    Ok(refuse(
        repo,
        "reference-transaction",
        "ref update",
        &refusals,
    ))
}

fn pre_commit(repo: &Repo) -> Result<u8, CommandError> {
    let outcome =
        commit::pre_commit(repo, std::os::unix::process::parent_id()).map_err(policy_error)?;
    let mut err = std::io::stderr().lock();
    for f in outcome.blocking.iter().chain(&outcome.warnings) {
        let tag = if outcome.blocking.contains(f) {
            "secret"
        } else {
            "warning"
        };
        let _ = writeln!(
            err,
            "git-bmad: {}: {tag}: {} [{}] {}",
            f.location(),
            f.description,
            f.rule,
            f.excerpt
        );
    }
    if !outcome.warnings.is_empty() && !outcome.in_session {
        let _ = writeln!(
            err,
            "  a false positive? put `{}` on its line (humans only; agents cannot)",
            policy::secrets::ALLOW_MARKER
        );
    }
    if outcome.blocking.is_empty() {
        return Ok(exit::OK);
    }
    let _ = writeln!(err, "git-bmad: commit refused: {} secret(s) staged. Unstage them (git restore --staged <file>), keep credentials out of the repository, and rotate any that were real.", outcome.blocking.len());
    for f in &outcome.blocking {
        policy::record_violation(repo, "pre-commit", "secret", &f.location(), f.description);
    }
    Ok(exit::POLICY)
}

fn prepare_commit_msg(repo: &Repo, args: &HookArgs) -> Result<u8, CommandError> {
    let Some(message_file) = args.args.first() else {
        return Ok(exit::OK);
    };
    let argv = policy::parent_argv();
    let path = repo.workdir().join(message_file);
    match commit::prepare_commit_msg(
        repo,
        std::os::unix::process::parent_id(),
        argv.as_deref(),
        &path,
    )
    .map_err(policy_error)?
    {
        commit::Prepared::Bypassed { command } => {
            let refusal = push::Refusal {
                rule: "no-verify",
                refname: "HEAD".into(),
                reason: format!("`git {command}` skipped the pre-commit checks (--no-verify); in a session worktree every commit goes through them"),
                instead: "commit again without --no-verify, and fix what the hooks report",
            };
            Ok(refuse(repo, "prepare-commit-msg", "commit", &[refusal]))
        }
        commit::Prepared::Verified | commit::Prepared::NotASession => Ok(exit::OK),
    }
}

/// Run the hook our shim replaced, with the same arguments and stdin bytes.
fn run_chained(args: &[String], input: &[u8]) -> Result<u8, CommandError> {
    let Some(hook_file) = std::env::var_os("GIT_BMAD_HOOK_FILE") else {
        return Ok(exit::OK);
    };
    let chained = hooks::chained_path(std::path::Path::new(&hook_file));
    if !chained.is_file() {
        return Ok(exit::OK);
    }
    let mut child = Command::new(&chained)
        .args(args)
        .env_remove("GIT_BMAD_HOOK_FILE")
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| {
            CommandError::failed(format!(
                "could not run the chained hook {}: {e}",
                chained.display()
            ))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input is fine.
        let _ = stdin.write_all(input);
    }
    let status = child.wait().map_err(|e| {
        CommandError::failed(format!(
            "the chained hook {} did not finish: {e}",
            chained.display()
        ))
    })?;
    Ok(match status.code() {
        Some(0) => exit::OK,
        Some(code) => u8::try_from(code).unwrap_or(exit::FAILED).max(1),
        None => exit::FAILED,
    })
}
