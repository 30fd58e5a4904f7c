//! What each installed hook checks when git fires it, and the hook it replaced.
//!
//! The shims `exec` git-bmad with the hook's name; this decides which check runs, records
//! every refusal in the session journal, and then runs the user's hook of the same name
//! (the shim found it) with the same arguments and input. The caller only prints.

use std::path::Path;

use super::rules::{self, Refusal};
use super::secrets::Finding;
use super::{commit, live_run, push, refs, Error};
use crate::config::PolicyScope;
use crate::git::Repo;
use crate::runner::sandbox;
use crate::runner::Program;

/// What a hook run found.
#[derive(Debug, Default)]
pub struct HookReport {
    /// What the hook guards, for messages: `push`, `ref update`, `commit`.
    pub what: &'static str,
    /// Refusals; any one fails the hook. Already journaled.
    pub refusals: Vec<Refusal>,
    /// Secrets in a commit (pre-commit), one refusal each in `refusals` too.
    pub secrets: Vec<Finding>,
    /// Lower-confidence findings, reported only.
    pub warnings: Vec<Finding>,
    /// A human may mark a false positive (not in a session worktree, where agents work).
    pub may_allow: bool,
    /// What the hook could not do that costs nothing but should be known, in words.
    pub notes: Vec<String>,
}

impl HookReport {
    /// The hook lets git go on.
    pub fn passed(&self) -> bool {
        self.refusals.is_empty()
    }
}

/// Only these hooks get input on stdin; reading it in the others could wait on a terminal.
pub fn reads_input(hook: &str) -> bool {
    matches!(hook, "pre-push" | "reference-transaction" | "post-rewrite")
}

/// Run git-bmad's check for `hook`. `args` are the hook's arguments, `input` its stdin, and
/// `git_pid` the git process that fired it (the shim `exec`s us, so it is our parent).
pub fn check(
    repo: &Repo,
    hook: &str,
    args: &[String],
    input: &[u8],
    git_pid: u32,
) -> Result<HookReport, Error> {
    // The command line of the git that fired the hook is read (from /proc) only by the
    // checks that need it: reference-transaction runs on every ref update.
    let report = match hook {
        // A contained step has no credential to push with; git-bmad pushes its branch
        // through its own gate. Trying is on the record.
        "pre-push" if crate::env::Var::Contained.is_set() => HookReport {
            what: "push",
            refusals: vec![rules::OUTSIDE_WALLS.refuse(
                args.first().map(String::as_str).unwrap_or("origin"),
                "a contained step does not push; git-bmad pushes the session branch through its own checks (`git bmad push`)",
            )],
            ..Default::default()
        },
        "pre-push" => {
            let remote = args.first().map(String::as_str).unwrap_or("origin");
            let lines = push::parse_lines(&String::from_utf8_lossy(input));
            // git produces the outgoing patches on the other core while the checks run.
            let scans = push::start_scans(repo, &lines);
            let config = crate::session::load_config(repo)?;
            let protected = super::protected_refs_with(crate::session::Repo::of(repo), &config)?;
            let argv = super::parent_argv();
            let bound = binds_push(repo, config.policy.scope);
            let found = push::check(
                repo,
                remote,
                &lines,
                argv.as_deref(),
                &protected,
                bound,
                scans,
            )?;
            HookReport {
                what: "push",
                refusals: found.refusals,
                warnings: found.warnings,
                ..Default::default()
            }
        }
        "reference-transaction" => {
            let place = if super::current_session(repo).is_some() {
                Some(refs::Place::Session)
            } else {
                let live = live_run::live_runs(repo.common_dir());
                (!live.is_empty()).then_some(refs::Place::WhileAgentsRun(live))
            };
            let mut report = HookReport {
                what: "ref update",
                ..Default::default()
            };
            if let Some(place) = place {
                let updates = refs::parse(&String::from_utf8_lossy(input));
                let protected = super::protected_refs(repo)?;
                report.refusals = refs::check(repo, &updates, &protected, &place);
            }
            report
        }
        "pre-commit" => {
            let found = commit::pre_commit(repo, git_pid)?;
            let mut report = HookReport {
                what: "commit",
                refusals: found
                    .blocking
                    .iter()
                    .map(|f| rules::SECRET.refuse(f.location(), f.description))
                    .collect(),
                secrets: found.blocking,
                warnings: found.warnings,
                may_allow: !found.in_session,
                ..Default::default()
            };
            // A session's commit carries its rendered journal. One that cannot be staged
            // (its path is ignored, say) costs the reviewer a file, not the agent its commit.
            if report.passed() {
                let index = crate::env::Var::GitIndexFile.path();
                if let Err(e) = crate::session::stage_for_commit(repo, index.as_deref()) {
                    report.notes.push(format!(
                        "the session journal was not added to this commit: {e}"
                    ));
                }
            }
            report
        }
        "pre-merge-commit" => {
            commit::stamp(repo, git_pid)?;
            HookReport::default()
        }
        "prepare-commit-msg" => {
            let mut report = HookReport {
                what: "commit",
                ..Default::default()
            };
            if let Some(message_file) = args.first() {
                let path = repo.workdir().join(message_file);
                let argv = super::parent_argv();
                if let commit::Prepared::Bypassed { command } =
                    commit::prepare_commit_msg(repo, git_pid, argv.as_deref(), &path)?
                {
                    report.refusals.push(rules::NO_VERIFY.refuse(
                        "HEAD",
                        format!("`git {command}` skipped the pre-commit checks (--no-verify); in a session worktree every commit goes through them"),
                    ));
                }
            }
            report
        }
        _ => HookReport::default(),
    };
    for r in &report.refusals {
        super::record_violation(repo, hook, r.rule, &r.refname, &r.reason);
    }
    Ok(report)
}

/// Whether the push rules bind a push made here: always in a session worktree, from an
/// agent's process (`BMAD_SESSION` is in its environment) and while any agent run is live
/// (an agent can leave its worktree and its environment behind); in the main worktree
/// otherwise only with policy scope `everywhere`.
fn binds_push(repo: &Repo, scope: PolicyScope) -> bool {
    // Cheapest first: the session lookup reads refs.
    scope == PolicyScope::Everywhere
        || crate::env::Var::BmadSession.is_set()
        || !live_run::live_runs(repo.common_dir()).is_empty()
        || super::current_session(repo).is_some()
}

/// Run the user's hook `chained`, by its real path (husky finds its hook from `$0`), with the
/// same arguments and stdin bytes; its exit code.
///
/// A hook in a worktree (`.husky/`, `.githooks/`) is a file an agent could have written:
/// when git-bmad itself fires it (its push carries the user's credentials, its merges and
/// checkouts an agent's tree), it runs in walls like the agent's own commands.
pub fn run_chained(
    repo: &Repo,
    chained: &Path,
    args: &[String],
    input: &[u8],
) -> Result<i32, Error> {
    let mut hook = Program::new(chained, args);
    hook.env_remove
        .push(crate::env::Var::ChainedHook.name().to_owned());
    let walls = hook_walls(repo, chained)?;
    if let Some((sandbox::Scratch { contained, .. }, _)) = &walls {
        let cwd =
            std::env::current_dir().map_err(|e| Error::io("could not read", Path::new("."), e))?;
        let args: Vec<String> = args.to_vec();
        let launch = sandbox::launch(&contained.layers, &contained.walls, &cwd, chained, &args)
            .map_err(|e| Error::io("could not contain the chained hook", chained, e))?;
        hook = Program::new(&launch.program, launch.args);
        hook.env_remove = sandbox::hidden_variables(&[]);
        hook.env_remove
            .push(crate::env::Var::ChainedHook.name().to_owned());
        hook.env
            .extend(launch.env.into_iter().map(|(k, v)| (k.into(), v.into())));
        hook.env.push((crate::env::CONTAINED.into(), "1".into()));
    }
    let code = hook
        .run_in_foreground(Some(input))
        .map_err(|e| Error::io("could not run the chained hook", chained, e))?;
    // Killed by a signal: a failure like any other.
    Ok(code.unwrap_or(1))
}

/// The walls for a chained hook in the worktree that git-bmad's own git fires, with the
/// private home they keep and what git there needs in them, both undone when dropped; `None`
/// when it runs as it is.
fn hook_walls(
    repo: &Repo,
    chained: &Path,
) -> Result<Option<(sandbox::Scratch, Option<crate::session::CommandShadow>)>, Error> {
    let ours = crate::env::Var::OwnGit.is_set() && !crate::env::Var::Contained.is_set();
    let worktree = repo.workdir();
    let real = std::fs::canonicalize(chained).unwrap_or_else(|_| chained.to_owned());
    if !ours || !real.starts_with(worktree) {
        return Ok(None);
    }
    let config = crate::session::load_config(repo)?;
    let layers = match sandbox::Containment::decide(config.runners.sandbox) {
        Ok(sandbox::Containment::On(layers)) => layers,
        Ok(sandbox::Containment::Off(_)) => return Ok(None),
        Err(why) => {
            return Err(Error::Contain(format!(
                "{} is in a worktree and runners.sandbox is `required`, but: {why}",
                chained.display()
            )))
        }
    };
    let hidden = super::hidden_from_steps(crate::session::Repo::of(repo));
    let readable = [repo.common_dir().to_owned()];
    let scratch = sandbox::scratch(
        &layers,
        worktree,
        &hidden,
        &readable,
        repo.identity(),
        true,
        // Not followed: a hook in the worktree is the agent's to write, and so would be
        // what it names.
        None,
    )
    .map_err(|e| Error::io("could not make a private home in", std::env::temp_dir(), e))?;
    let shadow = super::command_shadow(crate::session::Repo::of(repo), &layers, worktree)?;
    Ok(Some((scratch, shadow)))
}
