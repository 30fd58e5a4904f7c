//! `git bmad epic`.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;

mod job;
mod print;
use crate::epic::pipeline::{self, Era, Shape};
use crate::epic::PlanOptions;
use crate::epic::{self, EpicOptions, Gates};
use crate::runner::interrupt;
use crate::session;
use crate::session::epic_state::Cap;
use crate::session::schema::EpicBudget;
use print::{print_plan, print_status};

/// The BMAD epic runner: a whole epic implemented unattended, story by story and in
/// parallel, each story verified, reviewed to convergence and offered as a draft pull
/// request, never merged.
///
/// Each story runs in its own session (branch + worktree) through its BMAD era's pipeline
/// (v6.11: bmad-build-auto then bmad-code-review; v6.0–6.10: create-story, dev-story,
/// code-review; v4: SM, Dev, QA), with review→fix rounds while MUST-FIX findings remain.
/// The run's record is the journal of the session epic-<id>; `epic status` reads it and
/// `epic resume` continues from it after a crash, a reboot or an answered gate.
#[derive(Debug, Args)]
pub struct EpicArgs {
    /// What to do
    #[command(subcommand)]
    pub action: EpicAction,
}

/// Which stories, era and rounds (shared by plan, run and resume).
#[derive(Debug, Args, Clone)]
pub struct Selection {
    /// The epic: its number (3, 2.5) or a stories-mode spec folder
    pub epic: String,
    /// Only these stories (comma-separated keys or unique prefixes: 3-1,3-4)
    #[arg(long, value_delimiter = ',', value_name = "KEYS")]
    pub stories: Vec<String>,
    /// The BMAD era's pipeline (v7, v6.11, v6, v4; default: what the project has installed, else its files)
    #[arg(long, value_name = "ERA")]
    pub era: Option<String>,
    /// Review→fix rounds per story (default 3, at most 5)
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,
    /// Reviewers per round, in parallel, each with its own emphasis (default 1, at most 4);
    /// a reviewer that fails twice is dropped and the others' findings stand
    #[arg(long, value_name = "N")]
    pub reviewers: Option<u32>,
}

/// The `epic` subcommands.
#[derive(Debug, Subcommand)]
pub enum EpicAction {
    /// The plan: stories in dependency order, parallel waves, stacked branches, stories
    /// that may not run together (overlapping `touches`), integration checkpoints, and the
    /// pipeline each story gets
    Plan(Selection),
    /// Run the epic (or continue it): exit 0 all done, 3 the epic or a story waits at a gate
    /// or a story halted blocked, 5 a story failed or was held back or the circuit breaker
    /// stopped the run, 6 it reached its dollar, token or invocation budget, 7 its time in
    /// steps (epic resume with more goes on), 130 interrupted
    Run(RunArgs),
    /// Each story's stage, integration checkpoint, rounds, pull request, cost and gate, and
    /// the epic's gates and answers, from the epic's journal
    Status {
        /// The epic
        epic: String,
        /// Also write the epic report as one self-contained HTML page to FILE
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
    },
    /// Run one story of an epic run as a CI job, from the run the remote holds (what the
    /// story workflow of git bmad ci init github runs): exit 0 done, 3 blocked or gated,
    /// 5 failed, 130 cancelled
    Job(job::JobArgs),
    /// Coordinate an epic run on GitHub Actions from a CI job (what the coordinator workflow
    /// of git bmad ci init github runs): take the run over from the remote and continue it,
    /// or start it with these options, on actions; then hand it back
    Coordinate(RunArgs),
    /// Continue an epic run with the options it was started with; a budget given here
    /// replaces the one it had, for the whole run (what it spent counts against it): exit
    /// codes as run's
    Resume {
        /// The epic
        epic: String,
        /// Where the stories run from now on: here, or actions (default: where the run
        /// was started)
        #[arg(long, value_name = "WHERE")]
        on: Option<String>,
        /// A budget for the whole run from now on, in place of the one it had
        #[command(flatten)]
        budget: BudgetArgs,
    },
    /// Print the pipeline playbook a story gets, to copy into .bmad/playbooks/ and change
    Playbook {
        /// The era (v7, v6.11, v6, v4)
        #[arg(long, default_value = "v6.11")]
        era: String,
        /// Review→fix rounds
        #[arg(long, default_value_t = pipeline::DEFAULT_ROUNDS)]
        rounds: u32,
        /// Reviewers per round, in parallel
        #[arg(long, default_value_t = 1)]
        reviewers: u32,
    },
}

/// An epic's budgets: `epic run` starts with them, `epic resume` gives more.
#[derive(Clone, Debug, Default, Args)]
pub struct BudgetArgs {
    /// Stop starting stories once the epic has spent this many US dollars (as the CLIs
    /// report it, or their tokens at their model's price)
    #[arg(long, value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Stop starting stories once the epic's agents have spent this many tokens, in and out
    /// (as the CLIs report them; a CLI that reports each request is stopped within one)
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<u64>,
    /// Stop starting stories once the epic's agents have spent this many of GitHub's premium
    /// requests (as Copilot CLI counts them when it ends)
    #[arg(long, value_name = "N")]
    pub budget_premium_requests: Option<f64>,
    /// Stop starting stories after this many agent invocations over the epic
    #[arg(long, value_name = "N")]
    pub max_invocations: Option<u32>,
    /// Stop starting stories after this much time in steps over the epic (90m, 8h)
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// What one story's run may spend, in US dollars (its orchestration.budget_usd)
    #[arg(long, value_name = "USD")]
    pub story_budget_usd: Option<f64>,
}

/// `epic run`'s options.
#[derive(Clone, Debug, Args)]
pub struct RunArgs {
    /// Which stories
    #[command(flatten)]
    pub selection: Selection,
    /// Stories run at once, each in its own session
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub parallel: usize,
    /// Where the stories run: here, or actions (one GitHub Actions job per story, from
    /// .github/workflows/bmad-story.yml; git bmad ci init github writes it)
    #[arg(long, default_value = epic::On::Here.as_str(), value_name = "WHERE")]
    pub on: String,
    /// Human checkpoints: none; per-epic (scope confirmation before the first story, an
    /// integration checkpoint that is not green, completion); per-story (those, and each
    /// story waits for a human before its PR). Without them a red integration checkpoint
    /// still holds the dependents back, and the judge still asks a human about a story that
    /// changes its test set-up, removes tests or works outside its scope
    #[arg(long, default_value = "none", value_name = "MODE")]
    pub gates: String,
    /// What the epic may spend
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// When every story is done, run BMAD's headless retrospective (bmad-retrospective -H)
    /// in a close-out session and offer its document as a draft pull request
    #[arg(long)]
    pub retro: bool,
    /// What the stories start from (default: HEAD)
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The remote pull requests go to
    #[arg(long, default_value = epic::resume::DEFAULT_REMOTE)]
    pub remote: String,
    /// Stop starting stories after this many fail in a row (the circuit breaker)
    #[arg(long, default_value_t = epic::resume::DEFAULT_MAX_FAILURES, value_name = "N")]
    pub max_failures: u32,
    /// Print the plan and every action it would take; no agent, no session, no push
    #[arg(long)]
    pub dry_run: bool,
}

fn plan_options(s: &Selection) -> Result<PlanOptions, CommandError> {
    let era = match &s.era {
        Some(word) => Some(Era::parse(word).ok_or_else(|| {
            CommandError::usage(format!("--era {word:?}: use v7, v6.11, v6 or v4"))
        })?),
        None => None,
    };
    Ok(PlanOptions {
        only: s.stories.clone(),
        era,
        rounds: s.rounds,
        reviewers: s.reviewers,
    })
}

/// Run `epic`.
pub fn cmd_epic(ctx: &Context, args: &EpicArgs) -> Result<u8, CommandError> {
    match &args.action {
        EpicAction::Plan(selection) => {
            let repo = ctx.repo()?;
            let plan = epic::plan::plan_epic(
                session::Repo::of(&repo),
                &selection.epic,
                &plan_options(selection)?,
            )?;
            print_plan(ctx, &plan, None);
            Ok(exit::OK)
        }
        EpicAction::Playbook {
            era,
            rounds,
            reviewers,
        } => {
            let era = Era::parse(era).ok_or_else(|| {
                CommandError::usage(format!("--era {era:?}: use v7, v6.11, v6 or v4"))
            })?;
            print!(
                "{}",
                pipeline::playbook(Shape {
                    era,
                    has_file: true,
                    approved: false,
                    rounds: *rounds,
                    reviewers: *reviewers,
                })
            );
            Ok(exit::OK)
        }
        EpicAction::Run(run) => cmd_run(ctx, run),
        EpicAction::Job(args) => job::cmd_job(ctx, args),
        EpicAction::Coordinate(args) => job::cmd_coordinate(ctx, args),
        EpicAction::Resume { epic, on, budget } => resume(ctx, epic, on.as_deref(), budget),
        EpicAction::Status { epic, html } => {
            let repo = ctx.repo()?;
            let sessions = session::Repo::of(&repo);
            let plan = epic::plan::plan_epic(sessions, epic, &PlanOptions::default())?;
            let state = epic::resume::state(sessions, epic)?.unwrap_or_default();
            if let Some(file) = html {
                let page = epic::progress::render_html(&plan, &state);
                crate::fs::write_atomically(file, page.as_bytes(), None).map_err(|e| {
                    CommandError::failed(format!("could not write {}: {e}", file.display()))
                })?;
                ctx.ui
                    .status(format!("Wrote the epic report to {}", file.display()));
            }
            print_status(ctx, &plan, &state);
            Ok(exit::OK)
        }
    }
}

/// Continue an epic run with the options it was started with (`on`: somewhere else;
/// `more`: the budgets given in place of its own).
pub fn resume(
    ctx: &Context,
    epic: &str,
    on: Option<&str>,
    more: &BudgetArgs,
) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let started = epic::resume::resume_options(session::Repo::of(&repo), epic, on)?;
    let had = started.budget;
    cmd_run(
        ctx,
        &RunArgs {
            selection: Selection {
                epic: epic.to_owned(),
                stories: started.stories,
                era: Some(started.era),
                rounds: Some(started.rounds),
                reviewers: Some(started.reviewers),
            },
            parallel: started.parallel as usize,
            on: started.on,
            gates: started.gates,
            budget: BudgetArgs {
                budget_usd: more.budget_usd.or(had.usd),
                budget_tokens: more.budget_tokens.or(had.tokens),
                budget_premium_requests: more.budget_premium_requests.or(had.premium_requests),
                max_invocations: more.max_invocations.or(had.invocations),
                max_time: (more.max_time.clone())
                    .or_else(|| had.time_secs.map(|s| format!("{s}s"))),
                story_budget_usd: more.story_budget_usd.or(had.story_usd),
            },
            retro: started.retro,
            base: Some(started.base),
            remote: started.remote,
            max_failures: started.max_failures,
            dry_run: false,
        },
    )
}

pub(super) fn cmd_run(ctx: &Context, args: &RunArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let gates = Gates::parse(&args.gates).ok_or_else(|| {
        CommandError::usage(format!(
            "--gates {:?}: use none, per-epic or per-story",
            args.gates
        ))
    })?;
    let budget = budget(&args.budget)?;
    let on = epic::On::parse(&args.on)
        .ok_or_else(|| CommandError::usage(format!("--on {:?}: use here or actions", args.on)))?;
    let options = plan_options(&args.selection)?;
    if args
        .selection
        .reviewers
        .is_some_and(|n| !(1..=pipeline::MAX_REVIEWERS).contains(&n))
    {
        return Err(CommandError::usage(format!(
            "--reviewers: give 1 to {} (each reviewer has its own emphasis)",
            pipeline::MAX_REVIEWERS
        )));
    }
    if args.dry_run {
        let plan = epic::plan::plan_epic(sessions, &args.selection.epic, &options)?;
        let config = ctx.config(&repo)?;
        let actions = epic::plan::epic_actions(
            &plan,
            gates,
            args.retro,
            &budget,
            config.checks.test_command.as_deref(),
        );
        let dispatch_ref = match on {
            epic::On::Actions => Some(epic::actions::dispatch_base(
                sessions,
                &args.selection.epic,
                args.base.as_deref(),
            )?),
            epic::On::Here => None,
        };
        let dry = print::DryRun {
            config: &config,
            actions: &actions,
            dispatch_ref,
        };
        print_plan(ctx, &plan, Some(&dry));
        return Ok(exit::OK);
    }
    let config = ctx.config(&repo)?;
    let stop = interrupt::install()
        .map_err(|e| CommandError::failed(format!("could not catch Ctrl-C: {e}")))?;
    let ui = &ctx.ui;
    let progress = |line: &str| ui.status(line);
    let run = epic::run(
        sessions,
        &args.selection.epic,
        &EpicOptions {
            config: &config,
            plan: options,
            parallel: args.parallel,
            on,
            gates,
            base: args.base.clone(),
            remote: args.remote.clone(),
            max_failures: args.max_failures,
            budget,
            retro: args.retro,
            progress: &progress,
            interrupt: &stop,
            policy: &ctx.policy,
        },
    )?;
    let code = if run.interrupted {
        exit::INTERRUPTED
    } else if !run.gated.is_empty() || !run.blocked.is_empty() || run.gate.is_some() {
        exit::GATED
    } else if run.reached == Some(Cap::Time) {
        exit::RUN_TIME_LIMIT
    } else if run.reached.is_some() {
        exit::INVOCATION_LIMIT
    } else if !run.failed.is_empty() || !run.skipped.is_empty() || run.stopped.is_some() {
        exit::STEP_FAILED
    } else {
        exit::OK
    };
    if ui.json() {
        ui.print_json(&json!({ "run": run, "exit_code": code }));
        return Ok(code);
    }
    print_status(ctx, &run.plan, &run.state);
    if let Some(why) = &run.stopped {
        ui.line(ui.paint(why, Style::Red));
    }
    for key in &run.blocked {
        ui.status(format!(
            "{key} is blocked: resolve its blocking condition in the story file and set it back (git bmad stories set {key} ready-for-dev --force), then git bmad epic resume {}",
            run.plan.epic
        ));
    }
    match code {
        exit::GATED if !run.gated.is_empty() => ui.status(format!(
            "Next: answer the gate in each waiting story's worktree (git bmad answer), then git bmad epic resume {}",
            run.plan.epic
        )),
        exit::INTERRUPTED => ui.status(format!(
            "Interrupted; state saved. Continue with git bmad epic resume {}",
            run.plan.epic
        )),
        exit::RUN_TIME_LIMIT | exit::INVOCATION_LIMIT => {
            let flag = match run.reached {
                Some(Cap::Usd) => "--budget-usd",
                Some(Cap::Tokens) => "--budget-tokens",
                Some(Cap::PremiumRequests) => "--budget-premium-requests",
                Some(Cap::Invocations) => "--max-invocations",
                Some(Cap::Time) | None => "--max-time",
            };
            ui.status(format!(
                "Next: git bmad epic resume {} {flag} <more> goes on with that budget for the whole run (what it spent counts against it)",
                run.plan.epic
            ))
        }
        _ => {}
    }
    Ok(code)
}

/// The budgets `epic run` was given, checked.
fn budget(args: &BudgetArgs) -> Result<EpicBudget, CommandError> {
    for (flag, amount, unit) in [
        ("--budget-usd", args.budget_usd, "an amount in US dollars"),
        (
            "--story-budget-usd",
            args.story_budget_usd,
            "an amount in US dollars",
        ),
        (
            "--budget-premium-requests",
            args.budget_premium_requests,
            "number of premium requests",
        ),
    ] {
        if amount.is_some_and(|b| !(b > 0.0 && b.is_finite())) {
            return Err(CommandError::usage(format!(
                "{flag}: give a positive {unit}"
            )));
        }
    }
    if args.budget_tokens == Some(0) {
        return Err(CommandError::usage(
            "--budget-tokens 0 would start nothing; give a positive number of tokens",
        ));
    }
    if args.max_invocations == Some(0) {
        return Err(CommandError::usage(
            "--max-invocations 0 would start nothing; give a positive number",
        ));
    }
    let time_secs = match &args.max_time {
        Some(text) => Some(
            crate::time::parse_duration(text)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    CommandError::usage(format!(
                        "--max-time {text:?}: give a duration such as 90m or 8h"
                    ))
                })?
                .as_secs(),
        ),
        None => None,
    };
    Ok(EpicBudget {
        usd: args.budget_usd,
        tokens: args.budget_tokens,
        premium_requests: args.budget_premium_requests,
        invocations: args.max_invocations,
        time_secs,
        story_usd: args.story_budget_usd,
    })
}
