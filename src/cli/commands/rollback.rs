//! `git bmad rollback`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::{Style, Ui};
use crate::cli::Context;
use crate::git::TreeChange;
use crate::session::schema::{Body, BranchOutcome};
use crate::session::{self, RollbackOutcome, Target};

/// Restore the session to a checkpoint: files, index and branch.
///
/// The current state is saved as a safety checkpoint first, so nothing is lost and
/// `git bmad undo` can come back. Files are restored, re-created or removed to match the
/// checkpoint, the index is what it was, and the session branch moves back to the
/// checkpoint's commit when the commits it drops are on no remote (pushed commits stay on
/// it, and the output says so). Ignored files are never touched, by the rules of the state
/// being left or of the checkpoint. Name the checkpoint by its number in `git bmad status`
/// (1 = the first) or by its id.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// Checkpoint number (as in `git bmad status`) or commit id prefix
    #[arg(required_unless_present_any = ["step", "continue_"], conflicts_with = "step")]
    pub checkpoint: Option<String>,
    /// Restore the files only; the index and the branch stay as they are
    #[arg(long)]
    pub files_only: bool,
    /// Finish a rollback that was interrupted (`git bmad doctor` names one)
    #[arg(long = "continue", conflicts_with_all = ["checkpoint", "step", "dry_run", "files_only"])]
    pub continue_: bool,
    /// Roll back to the first checkpoint of this step
    #[arg(long)]
    pub step: Option<String>,
    /// Show what would change, file by file, and change nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(long, short = 's')]
    pub session: Option<String>,
}

/// Run `rollback`.
pub fn cmd_rollback(ctx: &Context, args: &RollbackArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let s = session::locate(session::Repo::of(&repo), args.session.as_deref())?;
    if args.continue_ {
        let outcome = session::continue_rollback(&repo, &s)?;
        return report(ctx, &outcome, "Finished the interrupted rollback to");
    }
    let target = match (&args.checkpoint, &args.step) {
        (_, Some(step)) => Target::Step(step.clone()),
        (Some(cp), None) => Target::Checkpoint(cp.clone()),
        (None, None) => return Err(CommandError::usage("name a checkpoint or --step")),
    };
    if args.dry_run {
        let plan = session::plan_rollback(&repo, &s, &target)?;
        if ctx.ui.json() {
            ctx.ui.print_json(&json!({"dry_run": true, "plan": plan}));
            return Ok(exit::OK);
        }
        ctx.ui.line(format!(
            "Rolling back to checkpoint {} {} ({}) would change {} file(s):",
            plan.number,
            plan.target.id.to_hex_with_len(10),
            plan.target.label,
            plan.changes.len()
        ));
        print_changes(&ctx.ui, &plan.changes);
        print_kept(&ctx.ui, &plan.protected, &plan.nested);
        ctx.ui.status("Nothing was changed (dry run). The current state would be saved as a checkpoint first; the index and the branch would follow the checkpoint unless --files-only.");
        return Ok(exit::OK);
    }
    let outcome = session::rollback(&repo, &s, &target, args.files_only, &ctx.policy);
    super::checkpoint::report_secrets(&ctx.policy.take_found(), "");
    report(ctx, &outcome?, "Rolled back to")
}

/// Print a rollback's outcome (shared with `undo`).
pub fn report(ctx: &Context, outcome: &RollbackOutcome, verb: &str) -> Result<u8, CommandError> {
    if ctx.ui.json() {
        ctx.ui.print_json(outcome);
        return Ok(exit::OK);
    }
    let ui = &ctx.ui;
    for warning in &outcome.warnings {
        ui.status(warning);
    }
    ui.line(format!(
        "{verb} {} ({}); {} file(s) changed:",
        ui.paint(
            outcome.target.id.to_hex_with_len(10).to_string(),
            Style::Yellow
        ),
        outcome.target.label,
        outcome.changes.len()
    ));
    print_changes(ui, &outcome.changes);
    if let Body::Rollback(detail) = &outcome.event.body {
        print_kept(ui, &detail.protected, &detail.nested);
        ui.status(branch_sentence(detail.files_only, detail.branch.as_ref()));
    }
    ui.status(format!(
        "The previous state is saved as checkpoint {}; `git bmad undo` goes back to it.",
        outcome.safety.id.to_hex_with_len(10)
    ));
    Ok(exit::OK)
}

/// What became of the index and the branch, in one sentence.
fn branch_sentence(files_only: bool, branch: Option<&BranchOutcome>) -> String {
    let short = |b: &str| b.trim_start_matches("refs/heads/").to_owned();
    match branch {
        _ if files_only => {
            "Files only: the index and the branch were left as they were.".to_owned()
        }
        None => "The index is restored.".to_owned(),
        Some(BranchOutcome::Moved { from, to, .. }) if from == to => {
            "The index is restored; the branch did not need to move.".to_owned()
        }
        Some(BranchOutcome::Moved {
            branch,
            to,
            dropped,
            ..
        }) => format!(
            "The index is restored and {} is back at {}{}.",
            short(branch),
            &to[..to.len().min(10)],
            if *dropped > 0 {
                format!(" ({dropped} later commit(s) left it; the safety checkpoint keeps them)")
            } else {
                String::new()
            }
        ),
        Some(BranchOutcome::LeftPushed { branch, pushed }) => format!(
            "The index is restored; {} was left where it is: {pushed} of the commits after the checkpoint are on a remote (revert them with `git revert` instead).",
            short(branch)
        ),
        Some(BranchOutcome::LeftDetached) => {
            "The index is restored; HEAD is not on the session branch, so no branch was moved."
                .to_owned()
        }
    }
}

fn print_kept(ui: &Ui, protected: &[String], nested: &[String]) {
    for path in protected {
        ui.line(format!(
            "  {} {path} (ignored)",
            ui.paint("keep   ", Style::Dim)
        ));
    }
    for path in nested {
        ui.line(format!(
            "  {} {path}/ (a repository of its own: not in any checkpoint, left as it is)",
            ui.paint("keep   ", Style::Dim)
        ));
    }
}

/// Changes under one directory that all do the same thing are shown as one line from this
/// many on: a deleted `node_modules/` is one line, not thousands.
const SUMMARISE_FROM: usize = 10;

fn print_changes(ui: &Ui, changes: &[TreeChange]) {
    let mut changes: Vec<&TreeChange> = changes.iter().collect();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    let word = |status: char| match status {
        'A' => ("restore", Style::Green),
        'D' => ("remove ", Style::Red),
        'T' => ("retype ", Style::Yellow),
        _ => ("revert ", Style::Yellow),
    };
    let mut i = 0;
    while i < changes.len() {
        let c = changes[i];
        let (verb, style) = word(c.status);
        if let Some((dir, n)) = same_change_under_one_dir(&changes[i..]) {
            ui.line(format!("  {} {n} files in {dir}/", ui.paint(verb, style)));
            i += n;
            continue;
        }
        let mode = if c.old_mode != c.new_mode && c.status == 'M' {
            format!("  (mode {} → {})", c.old_mode, c.new_mode)
        } else {
            String::new()
        };
        ui.line(format!("  {} {}{mode}", ui.paint(verb, style), c.path));
        i += 1;
    }
}

/// The shallowest directory of `changes[0]` whose changes (sorted by path, so contiguous)
/// all have its status and number at least [`SUMMARISE_FROM`]; and how many there are.
fn same_change_under_one_dir<'a>(changes: &[&'a TreeChange]) -> Option<(&'a str, usize)> {
    let first = changes.first()?;
    for (end, _) in first.path.match_indices('/') {
        let dir = &first.path[..end];
        let prefix = &first.path[..=end];
        let n = changes
            .iter()
            .take_while(|c| c.path.starts_with(prefix))
            .count();
        if n < SUMMARISE_FROM {
            return None;
        }
        if changes[..n].iter().all(|c| c.status == first.status) {
            return Some((dir, n));
        }
    }
    None
}
