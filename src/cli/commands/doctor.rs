//! `git bmad doctor`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::config::Sandbox;
use crate::runner::sandbox;
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
            let outcome =
                session::apply_repair(&repo, repair, &ctx.policy).map_err(|e| e.to_string());
            applied.push((repair.clone(), outcome));
        }
        if !applied.is_empty() {
            findings = session::doctor(&repo, &crate::runner::config_problems)?;
        }
    }
    let layers = sandbox::Layers::here();
    let mode = session::load_config(&repo)
        .map(|c| c.runners.sandbox)
        .unwrap_or_default();
    let enabled = args.fix.then(|| enable_bubblewrap(&layers)).flatten();
    findings.extend(containment_finding(mode, &layers));
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
            "bubblewrap_enabled": enabled.as_ref().map(|o| json!({"done": o.is_ok(), "error": o.as_ref().err()})),
            "containment": {
                "works": layers.any(),
                "walls": layers.describe(),
                "bwrap": layers.bwrap,
                "landlock_abi": layers.landlock.as_ref().map(|l| l.abi),
                "missing": layers.missing,
                "lacks": layers.lacks(),
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
    match &enabled {
        Some(Ok(())) => ui.line(format!(
            "{}: an AppArmor profile lets bubblewrap make its namespaces (the next run uses it)",
            ui.paint("fixed", Style::Green)
        )),
        Some(Err(e)) => ui.line(format!(
            "{}: bubblewrap's AppArmor profile: {e}",
            ui.paint("not fixed", Style::Red)
        )),
        None => {}
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
    if layers.any() {
        ui.line(format!(
            "containment: agents run in walls here ({})",
            layers.describe()
        ));
    }
    if problems == 0 {
        ui.line(ui.paint("All invariants hold.", Style::Green));
    } else {
        ui.line(format!("{problems} problem(s) found."));
    }
    Ok(code)
}

/// What `doctor` says of containment: a problem when `runners.sandbox` requires what this
/// machine lacks, a warning when `auto` runs steps uncontained or without bubblewrap, and the
/// one command that enables bubblewrap here when it is refused.
fn containment_finding(mode: Sandbox, layers: &sandbox::Layers) -> Option<session::Finding> {
    let refused = sandbox::Containment::decide_for(mode, layers.clone());
    let (severity, message, note) = match (&refused, layers.lacks()) {
        (_, _) if mode == Sandbox::Off => return None,
        (Err(why), _) => (
            Severity::Problem,
            format!("agents cannot be contained as runners.sandbox requires: {why}"),
            "no step runs until this is fixed, or runners.sandbox asks for less".to_owned(),
        ),
        (Ok(sandbox::Containment::Off(why)), _) => (
            Severity::Warning,
            format!("agents cannot be contained here: {why}"),
            "runners.sandbox is `auto`: steps run uncontained, and their journal says so".into(),
        ),
        (Ok(_), Some(lacks)) if layers.bwrap.is_none() => (
            Severity::Warning,
            format!("agents run in walls of {} here", layers.describe()),
            lacks,
        ),
        _ => return None,
    };
    let enable = sandbox::enable_bubblewrap_here();
    Some(session::Finding {
        severity,
        session: None,
        message,
        fix: enable.as_ref().map(|e| e.command.clone()),
        alternatives: enable
            .as_ref()
            .and_then(|e| e.alternative.clone())
            .into_iter()
            .collect(),
        note: Some(match &enable {
            Some(e) => format!("{note}; {}", e.trade_off),
            None => note,
        }),
        repair: None,
    })
}

/// `doctor --fix` as root: the AppArmor profile that lets bubblewrap make its namespaces,
/// written and loaded; `None` when there is nothing of the kind to do here.
fn enable_bubblewrap(layers: &sandbox::Layers) -> Option<Result<(), String>> {
    if layers.bwrap.is_some() || !rustix::process::geteuid().is_root() {
        return None;
    }
    sandbox::enable_bubblewrap_here()?.apply()
}
