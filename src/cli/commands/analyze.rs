//! `git bmad analyze`.

use std::io::Read;

use clap::{Args, Subcommand};

use crate::bmad::analysis::{confidence, menu};
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// The decision engine's judgements, one at a time (what the supervisor uses unattended).
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// What to analyse
    #[command(subcommand)]
    pub action: AnalyzeAction,
}

/// The `analyze` subcommands.
#[derive(Debug, Subcommand)]
pub enum AnalyzeAction {
    /// Does agent output (on stdin) end in a menu? Score with its parts, options, the
    /// recommended choice and whether to take it (auto ≥ 80, ask with a hint 50–79, ask < 50)
    Menu {
        /// The option to take when offered
        #[arg(long, default_value = "continue", value_name = "LABEL")]
        default: String,
    },
    /// Confidence from signals in 0–1 (verdict, memory, reviewer, party, model): score,
    /// High/Medium/Low, the action and the checkpoint format
    Confidence {
        /// A signal: NAME=VALUE, e.g. verdict=0.9 (repeatable)
        #[arg(long = "signal", value_name = "NAME=VALUE")]
        signals: Vec<String>,
    },
}

/// Run `analyze`.
pub fn cmd_analyze(ctx: &Context, args: &AnalyzeArgs) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
    match &args.action {
        AnalyzeAction::Menu { default } => {
            let mut input = Vec::new();
            std::io::stdin()
                .read_to_end(&mut input)
                .map_err(|e| CommandError::failed(format!("could not read stdin: {e}")))?;
            let a = menu::analyze(&String::from_utf8_lossy(&input), default);
            if ui.json() {
                ui.print_json(&a);
                return Ok(exit::OK);
            }
            let s = &a.score;
            ui.line(format!(
                "menu: {} (score {} = structure {} + position {} + options {}; detected at {})",
                if a.detected { "yes" } else { "no" },
                s.total,
                s.structure,
                s.position,
                s.options,
                menu::DETECTED_AT
            ));
            if let Some(guard) = a.guard {
                ui.line(format!(
                    "  menu-like text ignored: inside a {}",
                    guard.replace('_', " ")
                ));
            }
            for o in &a.options {
                ui.line(format!("  [{}] {}", o.key, o.label));
            }
            if a.detected {
                ui.line(format!(
                    "choice: {} (confidence {}%: {}) — {}",
                    a.recommended
                        .as_ref()
                        .map_or("none".to_owned(), |o| format!("[{}] {}", o.key, o.label)),
                    a.confidence_score,
                    serde_json::to_value(a.action)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    a.selection_reason
                ));
            }
        }
        AnalyzeAction::Confidence { signals } => {
            let mut parsed = Vec::new();
            for s in signals {
                let (name, value) = s.split_once('=').ok_or_else(|| {
                    CommandError::usage(format!(
                        "--signal {s:?}: write NAME=VALUE, e.g. verdict=0.9"
                    ))
                })?;
                let signal = confidence::Signal::parse(name).ok_or_else(|| {
                    CommandError::usage(format!(
                        "unknown signal {name:?}; signals: verdict, memory, reviewer, party, model"
                    ))
                })?;
                let value: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| (0.0..=1.0).contains(v))
                    .ok_or_else(|| {
                        CommandError::usage(format!(
                            "--signal {s:?}: the value is a number from 0 to 1"
                        ))
                    })?;
                parsed.push((signal, value));
            }
            let c = confidence::confidence(&parsed);
            if ui.json() {
                ui.print_json(&c);
                return Ok(exit::OK);
            }
            let word = |v: serde_json::Value| v.as_str().map(str::to_owned).unwrap_or_default();
            ui.line(format!(
                "confidence {} ({}): {}, checkpoint format {}",
                c.score,
                word(serde_json::json!(c.class)),
                word(serde_json::json!(c.action)),
                word(serde_json::json!(c.checkpoint_format))
            ));
            for p in &c.parts {
                ui.line(format!(
                    "  {:<9} {:>5.1} of {:>4.1} points (value {:.0})",
                    word(serde_json::json!(p.signal)),
                    p.points,
                    p.weight,
                    p.value
                ));
            }
            if c.conflict {
                ui.line("  signals more than 30 points apart: priority multipliers applied");
            }
            if c.capped {
                ui.line("  one signal only: capped at 60");
            }
            if let Some(why) = &c.fallback {
                ui.line(format!("  {why}"));
            }
        }
    }
    Ok(exit::OK)
}
