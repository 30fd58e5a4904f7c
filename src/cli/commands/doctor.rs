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
///
/// With --fix, the safe repairs are applied first: locks whose git process is gone are
/// removed, interrupted rollbacks finished, moved worktrees recorded, `.git` links repaired.
/// What needs a choice (restore a deleted worktree or record it gone) is only reported.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Apply the safe repairs, then check again
    #[arg(long)]
    pub fix: bool,
}

/// Run `doctor`.
pub fn cmd_doctor(ctx: &Context, args: &DoctorArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let mut findings = session::doctor(&repo, &crate::runner::config_problems)?;
    let mut applied = Vec::new();
    if args.fix {
        let mut repairs: Vec<&session::Repair> =
            findings.iter().filter_map(|f| f.repair.as_ref()).collect();
        repairs.dedup();
        // Locks first: every other repair runs git, which a dead process's lock blocks.
        repairs.sort_by_key(|r| !matches!(r, session::Repair::RemoveLock { .. }));
        for repair in repairs {
            let outcome = session::apply_repair(&repo, repair).map_err(|e| e.to_string());
            applied.push((repair.clone(), outcome));
        }
        if !applied.is_empty() {
            findings = session::doctor(&repo, &crate::runner::config_problems)?;
        }
    }
    let containment = crate::runner::sandbox::available();
    findings.extend(containment_finding(&repo, &containment));
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
        let repairs: Vec<_> = applied
            .iter()
            .map(|(repair, outcome)| {
                json!({"repair": repair, "done": outcome.is_ok(), "error": outcome.as_ref().err()})
            })
            .collect();
        ctx.ui.print_json(&json!({
            "ok": problems == 0,
            "problems": problems,
            "findings": findings,
            "repairs": repairs,
            "containment": match &containment {
                Ok(bwrap) => json!({"works": true, "bwrap": bwrap}),
                Err(why) => json!({"works": false, "why": why}),
            },
        }));
        return Ok(code);
    }
    let ui = &ctx.ui;
    for (repair, outcome) in &applied {
        match outcome {
            Ok(()) => ui.line(format!(
                "{}: {}",
                ui.paint("fixed", Style::Green),
                repair.describe()
            )),
            Err(e) => ui.line(format!(
                "{}: {}: {e}",
                ui.paint("not fixed", Style::Red),
                repair.describe()
            )),
        }
    }
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
            let auto = if f.repair.is_some() && !args.fix {
                " (git bmad doctor --fix does it)"
            } else {
                ""
            };
            ui.line(format!("  fix: {fix}{auto}"));
        }
        for alternative in &f.alternatives {
            ui.line(format!("  or:  {alternative}"));
        }
        if let Some(note) = &f.note {
            ui.line(format!("  ({note})"));
        }
    }
    if let Ok(bwrap) = &containment {
        ui.line(format!(
            "containment: agents run in walls here ({})",
            bwrap.display()
        ));
    }
    if problems == 0 {
        ui.line(ui.paint("All invariants hold.", Style::Green));
    } else {
        ui.line(format!("{problems} problem(s) found."));
    }
    Ok(code)
}

/// What `doctor` says of containment when it does not work here: a problem under
/// `runners.sandbox: required`, a warning under `auto`, nothing when it is off.
fn containment_finding(
    repo: &session::Repo,
    containment: &Result<std::path::PathBuf, String>,
) -> Option<session::Finding> {
    let why = containment.as_ref().err()?;
    let mode = session::load_config(repo).ok()?.runners.sandbox;
    let severity = match mode {
        crate::config::Sandbox::Off => return None,
        crate::config::Sandbox::Auto => Severity::Warning,
        crate::config::Sandbox::Required => Severity::Problem,
    };
    Some(session::Finding {
        severity,
        session: None,
        message: format!("agents cannot be contained here: {why}"),
        fix: Some("apt install bubblewrap".into()),
        alternatives: Vec::new(),
        note: Some(match mode {
            crate::config::Sandbox::Required => {
                "runners.sandbox is `required`: no step runs until this is fixed".into()
            }
            _ => {
                "runners.sandbox is `auto`: steps run uncontained, and their journal says so".into()
            }
        }),
        repair: None,
    })
}
