//! `git bmad rollback`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::{Style, Ui};
use crate::cli::Context;
use crate::git::TreeChange;
use crate::policy::secrets::CheckpointVet;
use crate::session::{self, RollbackOutcome, Target};

/// Restore the session worktree to a checkpoint.
///
/// The current state is saved as a safety checkpoint first, so nothing is lost and
/// `git bmad undo` can come back. Files are restored, re-created or removed to match the
/// checkpoint; ignored files are never touched; HEAD, the branch and the index stay as they
/// are. Name the checkpoint by its number in `git bmad status` (1 = the first) or by its id.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// Checkpoint number (as in `git bmad status`) or commit id prefix
    #[arg(required_unless_present = "step", conflicts_with = "step")]
    pub checkpoint: Option<String>,
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
    let s = session::locate(&repo, args.session.as_deref())?;
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
        ctx.ui.status("Nothing was changed (dry run). The current state would be saved as a checkpoint first.");
        return Ok(exit::OK);
    }
    let mut secrets = CheckpointVet::default();
    let outcome = session::rollback(&repo, &s, &target, &mut |path, bytes| {
        secrets.admit(path, bytes)
    });
    report_secrets(&secrets);
    report(ctx, &outcome?, "Rolled back to")
}

/// Name each secret that stopped a rollback or an undo, redacted, on stderr.
pub fn report_secrets(secrets: &CheckpointVet) {
    for finding in &secrets.found {
        eprintln!(
            "{}: {} ({}, {})",
            finding.location(),
            finding.description,
            finding.rule,
            finding.excerpt
        );
    }
}

/// Print a rollback's outcome (shared with `undo`).
pub fn report(ctx: &Context, outcome: &RollbackOutcome, verb: &str) -> Result<u8, CommandError> {
    if ctx.ui.json() {
        ctx.ui.print_json(outcome);
        return Ok(exit::OK);
    }
    let ui = &ctx.ui;
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
    ui.status(format!(
        "The previous state is saved as checkpoint {}; `git bmad undo` goes back to it.\nHEAD, the branch and the index were not moved: commits made after the checkpoint are still on the branch.",
        outcome.safety.id.to_hex_with_len(10)
    ));
    Ok(exit::OK)
}

fn print_changes(ui: &Ui, changes: &[TreeChange]) {
    for c in changes {
        let (word, style) = match c.status {
            'A' => ("restore", Style::Green),
            'D' => ("remove ", Style::Red),
            'T' => ("retype ", Style::Yellow),
            _ => ("revert ", Style::Yellow),
        };
        let mode = if c.old_mode != c.new_mode && c.status == 'M' {
            format!("  (mode {} → {})", c.old_mode, c.new_mode)
        } else {
            String::new()
        };
        ui.line(format!("  {} {}{mode}", ui.paint(word, style), c.path));
    }
}
