//! `git bmad doctor`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::session::{self, Severity};

/// Check every invariant of the stored state.
///
/// Checkpoint chains, journals (dense seq, every note on a checkpoint), worktrees, branches,
/// locks and config. Exits 1 when something needs repair, and says how.
#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// Run `doctor`.
pub fn cmd_doctor(ctx: &Context, _args: &DoctorArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let findings = session::doctor(&repo, &crate::runner::config_problems)?;
    let problems = findings
        .iter()
        .filter(|f| f.severity == Severity::Problem)
        .count();
    let code = if problems == 0 {
        exit::OK
    } else {
        exit::FAILED
    };
    if ctx.ui.json() {
        ctx.ui
            .print_json(&json!({"ok": problems == 0, "problems": problems, "findings": findings}));
        return Ok(code);
    }
    let ui = &ctx.ui;
    for f in &findings {
        let tag = match f.severity {
            Severity::Problem => ui.paint("problem", Style::Red),
            Severity::Warning => ui.paint("warning", Style::Yellow),
        };
        let who = f
            .session
            .as_deref()
            .map(|s| format!("[{s}] "))
            .unwrap_or_default();
        ui.line(format!("{tag}: {who}{}", f.message));
        if let Some(fix) = &f.fix {
            ui.line(format!("  fix: {fix}"));
        }
    }
    if problems == 0 {
        ui.line(ui.paint("All invariants hold.", Style::Green));
    } else {
        ui.line(format!("{problems} problem(s) found."));
    }
    Ok(code)
}
