//! `git bmad answer`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;
use crate::supervisor::{self, Request};

/// Answer the gate the current session's run is waiting at, then continue the run.
///
/// An epic run's own gates (scope, integration checkpoint, dependency, completion) are
/// answered in its session, `-s epic-<id>`; the answer then continues the epic run (`epic
/// resume`).
///
/// continue: run the gated step, or accept an escalated one as done; retry: run the step
/// again; skip: skip it; abort: end the run. The answer and the message are journaled as the
/// human's decision. An answer the gate does not take shows the gate again (exit 3).
///
/// A story of an epic on GitHub Actions is answered in its worktree where its session came
/// back; the answer is journaled, and `epic resume` hands the story to a runner, which goes
/// on from it.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// continue, retry, skip or abort (also: c, y, yes, r, s, a, n, no)
    pub reply: String,
    /// What you did or why, for the journal
    #[arg(short, long, value_name = "TEXT")]
    pub message: Option<String>,
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(long, short = 's')]
    pub session: Option<String>,
    #[command(flatten)]
    pub progress: super::run::ProgressArg,
}

/// Run `answer`.
pub fn cmd_answer(ctx: &Context, args: &AnswerArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = session::locate(sessions, args.session.as_deref())?;
    let journal = session::read_journal(sessions, &s.id)?;
    let epic = crate::epic::EpicState::replay(journal.events());
    if epic.started.is_some() {
        let message = args.message.as_deref();
        let epic = crate::epic::gates::answer(sessions, &s, &epic, &args.reply, message)?;
        return super::epic::resume(ctx, &epic, None, &super::epic::BudgetArgs::default());
    }
    // A story whose pipeline ran on a runner goes on there: its answer is only journaled.
    if let Some(epic) = crate::epic::actions::ran_on_actions(sessions, &s, &journal)? {
        supervisor::record_answer(sessions, &s, &args.reply, args.message.as_deref())?;
        let next = format!("git bmad epic resume {epic}");
        if ctx.ui.json() {
            ctx.ui.print_json(&serde_json::json!({
                "session": s.id.as_str(),
                "answer": args.reply,
                "next": next,
            }));
        } else {
            ctx.ui.status(format!(
                "answered: {} ran on GitHub Actions, and goes on there from this answer: {next}",
                s.name
            ));
        }
        return Ok(exit::OK);
    }
    let request = Request::Answer {
        reply: args.reply.clone(),
        message: args.message.clone(),
    };
    match super::run::supervise_and_report(ctx, &repo, &s, request, &args.progress) {
        Err(e) if e.code == exit::GATED && !ctx.ui.json() => {
            // Show the gate again, so the right answer is on the screen.
            let journal = session::read_journal(sessions, &s.id)?;
            let state = crate::session::run_state::RunState::replay(journal.events());
            if let Some(gate) = &state.gate {
                eprint!("{}", crate::cli::ui::safe_for_terminal(&e.render()));
                let (done, total) = state.progress();
                super::run::print_gate(&ctx.ui, gate, done, total, false);
                return Ok(exit::GATED);
            }
            Err(e)
        }
        other => other,
    }
}
