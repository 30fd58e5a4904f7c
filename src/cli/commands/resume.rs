//! `git bmad resume`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session::{self};
use crate::supervisor::{self, Request, UntrustedPlaybook};

/// Continue the playbook run of a session, after a crash, Ctrl-C, a stop or an answered
/// gate; or bring a session pushed from another machine here and continue it.
///
/// Needs no arguments: the session is the one whose worktree you are in. The journal says
/// where the run stands; a step that was running when it crashed is marked done if its
/// postconditions are met, else run again. Finished steps never run twice.
///
/// A session that is not here but that `git bmad sync` found on the remote is brought here
/// first: its journal and checkpoints, its branch, and a worktree with the files and index
/// of its newest checkpoint (untracked files included). A session that was active there in
/// the last 15 minutes is refused unless `--steal`: one machine runs a session at a time.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub session: super::SessionArg,
    /// Where to look for a session that is not here (as of the last `git bmad sync`)
    #[arg(long, default_value = "origin")]
    pub remote: String,
    /// Resume a session even if another machine was working on it moments ago
    #[arg(long)]
    pub steal: bool,
    /// Go on with this dollar budget for the run (what it spent so far counts against it),
    /// over orchestration.budget_usd: a run stopped at its budget goes on with more
    #[arg(long, value_name = "USD", value_parser = positive_usd)]
    pub budget_usd: Option<f64>,
    #[command(flatten)]
    pub progress: super::run::ProgressArg,
}

/// Run `resume`.
pub fn cmd_resume(ctx: &Context, args: &ResumeArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let query = args.session.query();
    let mut adopted = false;
    let s = match session::locate(sessions, query) {
        // It lives in another clone now: taking it back is an adoption too.
        Ok(s) if s.elsewhere => {
            let (here, warnings) = session::adopt(
                sessions,
                &args.remote,
                s.id.as_str(),
                args.steal,
                &ctx.policy,
            )?;
            for warning in &warnings {
                ctx.ui.warn(warning);
            }
            ctx.ui.status(format!(
                "Session {} ({}) is back here: {}",
                here.id,
                here.name,
                here.worktree.display()
            ));
            adopted = true;
            here
        }
        Ok(s) => s,
        Err(session::LocateError::Unknown { query }) => {
            let (here, warnings) =
                session::adopt(sessions, &args.remote, &query, args.steal, &ctx.policy).map_err(
                    |e| match e {
                        session::Error::Locate(session::LocateError::Unknown { .. }) => {
                            CommandError::from(session::LocateError::Unknown {
                                query: query.clone(),
                            })
                            .hinted(format!(
                        "a session pushed from another machine: git bmad sync --remote {} first",
                        args.remote
                    ))
                        }
                        other => other.into(),
                    },
                )?;
            ctx.ui.status(format!(
                "Session {} ({}) is here now, from {}: {}",
                here.id,
                here.name,
                args.remote,
                here.worktree.display()
            ));
            for warning in &warnings {
                ctx.ui.warn(warning);
            }
            adopted = true;
            here
        }
        Err(session::LocateError::NotInSession { workdir }) => {
            return Err(CommandError::failed(format!(
                "no active session here: {} is not a git-bmad session worktree",
                workdir.display()
            ))
            .hinted(
                "cd into the session's worktree (git bmad list shows them), or name the session",
            ))
        }
        Err(other) => return Err(other.into()),
    };
    let journal = session::read_journal(sessions, &s.id)?;
    let has_run = crate::session::run_state::RunState::replay(journal.events())
        .manifest
        .is_some();
    if !has_run {
        // A run only another clone's untrusted events speak of: its playbook never runs here.
        let newest = journal
            .untrusted()
            .filter_map(|e| match &e.body {
                session::Body::RunStarted(run) => Some((e, run)),
                _ => None,
            })
            .last();
        if let Some(started) = newest {
            return Err(untrusted_run(ctx, sessions, &s, started.0, started.1));
        }
    }
    if adopted && !has_run {
        // Brought here with no run to continue: the session is ready to work in.
        if ctx.ui.json() {
            ctx.ui
                .print_json(&serde_json::json!({"session": s, "run": null}));
        } else {
            ctx.ui.line(format!(
                "Session {} has no playbook run to continue; work in {}",
                s.name,
                s.worktree.display()
            ));
        }
        return Ok(exit::OK);
    }
    let request = Request::Resume {
        budget_usd: args.budget_usd,
    };
    super::run::supervise_and_report(ctx, &repo, &s, request, &args.progress)
}

/// A dollar amount above zero.
fn positive_usd(text: &str) -> Result<f64, String> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(format!(
            "{text:?} is not an amount of US dollars above 0 (for example 20 or 7.5)"
        )),
    }
}

/// The refusal of a run only untrusted events speak of: how its playbook compares with the
/// reviewed one of that name (the diff), and the commands that accept it.
fn untrusted_run(
    ctx: &Context,
    repo: &session::Repo,
    s: &session::Session,
    started: &session::Event,
    run: &session::schema::RunStarted,
) -> CommandError {
    let error = CommandError::policy(format!(
        "the run of session {} was started {}: its playbook {} does not run here",
        s.name,
        started.untrusted_note(),
        run.playbook
    ))
    .hinted(session::trust::how_to_trust());
    match supervisor::compare_untrusted_playbook(repo, s, &run.playbook, &run.blob) {
        Err(e) => error.hinted(format!("its playbook could not be compared: {e}")),
        Ok(UntrustedPlaybook::Unreviewed) => error.hinted(format!(
            "no reviewed playbook is named {} (none committed on a protected branch, no built-in): read the one it stored with `git cat-file -p {}`",
            run.playbook, run.blob
        )),
        Ok(UntrustedPlaybook::Differs { origin, diff }) => {
            ctx.ui.status(format!(
                "Its playbook {} differs from the reviewed one ({origin}):\n{}",
                run.playbook,
                diff.trim_end()
            ));
            error.hinted(format!(
                "the playbook it stored is not the reviewed {origin}: see the diff above"
            ))
        }
        Ok(UntrustedPlaybook::Reviewed { origin, runnable }) => {
            let error = error.hinted(format!("its playbook is the reviewed {origin} word for word"));
            if runnable {
                error.hinted(format!(
                    "to run it here as your own run (from its first step): git bmad run {} -s {}",
                    run.playbook, s.name
                ))
            } else {
                error.hinted(format!(
                    "`git bmad run {}` here would not read the reviewed text: review the session's {} first",
                    run.playbook,
                    supervisor::PLAYBOOK_DIR
                ))
            }
        }
    }
}
