//! `git bmad epic job` and `epic coordinate`: an epic run's parts as CI jobs.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::epic::actions::{self, JobOptions, JobOutcome};
use crate::runner::interrupt;
use crate::session::schema::Stage;

/// Run one story of an epic run on this machine as a CI job: what the story workflow
/// (`git bmad ci init github`) runs on each runner.
///
/// The run comes from the remote: the epic's journal as the coordinator pushed it, taken
/// only where a key in .bmad/allowed_signers on main signed it. The story runs exactly as
/// it would in `epic run` (its session, pipeline, verification, judge, draft pull request);
/// its stages are journaled in its session, which is pushed after every step, signed with
/// this clone's key, for the coordinator to read. Exit 0 the story is done (or was already),
/// 3 it halted blocked or waits at a gate, 5 it failed, 130 cancelled (its session as of its
/// last step is on the remote; the next dispatch continues there).
#[derive(Debug, Args)]
pub struct JobArgs {
    /// The epic
    pub epic: String,
    /// The story's key
    #[arg(long)]
    pub story: String,
    /// The dispatch's attempt: past 1, the session a lost runner left is taken over
    #[arg(long, default_value_t = 1)]
    pub attempt: u32,
    /// The remote the coordinator and the runners share
    #[arg(long, default_value = "origin")]
    pub remote: String,
}

/// Run `epic job`.
pub fn cmd_job(ctx: &Context, args: &JobArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let config = ctx.config(&repo)?;
    let stop = interrupt::install()
        .map_err(|e| CommandError::failed(format!("could not catch a cancel: {e}")))?;
    let ui = &ctx.ui;
    let progress = |line: &str| ui.status(line);
    let outcome = actions::run_job(
        crate::session::Repo::of(&repo),
        &args.epic,
        &args.story,
        &JobOptions {
            config: &config,
            remote: args.remote.clone(),
            attempt: args.attempt,
            progress: &progress,
            interrupt: &stop,
            policy: &ctx.policy,
            runner: this_run(args.attempt),
        },
    )?;
    let (stage, code) = match outcome {
        JobOutcome::Interrupted => (None, exit::INTERRUPTED),
        JobOutcome::Ended(stage) | JobOutcome::Settled(stage) => (
            Some(stage),
            match stage {
                Stage::Done => exit::OK,
                Stage::Blocked | Stage::Gated => exit::GATED,
                _ => exit::STEP_FAILED,
            },
        ),
    };
    if ui.json() {
        ui.print_json(&serde_json::json!({
            "epic": args.epic,
            "story": args.story,
            "attempt": args.attempt,
            "stage": stage.map(|s| s.as_str()),
            "already": matches!(outcome, JobOutcome::Settled(_)),
            "exit_code": code,
        }));
    } else if let JobOutcome::Settled(stage) = outcome {
        ui.status(format!(
            "{}: the epic's journal says it is {stage} already; nothing to run",
            args.story
        ));
    }
    Ok(code)
}

/// This job's Actions run, from the variables every GitHub Actions job has: its address and
/// the attempt; a plain description elsewhere.
fn this_run(attempt: u32) -> String {
    use crate::env::Var;
    let var = |var: Var| var.get().filter(|v| !v.is_empty());
    match (
        var(Var::GithubServerUrl),
        var(Var::GithubRepository),
        var(Var::GithubRunId),
    ) {
        (Some(server), Some(repo), Some(run)) => {
            format!("attempt {attempt}: {server}/{repo}/actions/runs/{run}")
        }
        _ => format!("attempt {attempt}"),
    }
}

/// Run `epic coordinate`.
pub fn cmd_coordinate(ctx: &Context, args: &super::RunArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let config = ctx.config(&repo)?;
    let epic = &args.selection.epic;
    let name = crate::epic::names::session_name(epic);
    let prefix = &config.sessions.branch_prefix;
    // On actions whatever it began as (this job has no agent CLIs); the run hands the
    // epic's session back at its end.
    if actions::take_over(
        crate::session::Repo::of(&repo),
        &args.remote,
        prefix,
        &name,
        &ctx.policy,
    )? {
        super::resume(ctx, epic, Some("actions"), &super::BudgetArgs::default())
    } else {
        let mut args = args.clone();
        args.on = "actions".into();
        super::cmd_run(ctx, &args)
    }
}
