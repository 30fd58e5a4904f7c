//! `git bmad analyze`.

use std::io::Read;

use clap::{Args, Subcommand};

use std::path::PathBuf;

use crate::bmad::analysis::{confidence, menu, project, review, validation, xref};
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
    /// The validation type of a workflow or checklist (custom, verdict-, error- or
    /// checklist-based, or unknown), and with --output whether that output passed
    Validation {
        /// The workflow or checklist file
        file: PathBuf,
        /// An output to judge
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// A Senior Developer Review (a file, or stdin): outcome, findings with severity and
    /// location, MUST-FIX count, checklist; exit 1 unless the outcome is Approve
    Review {
        /// The review (default: stdin)
        file: Option<PathBuf>,
    },
    /// PRD requirements the architecture misses (HIGH) and decisions no story takes up
    /// (MEDIUM); exit 1 unless ALIGNED
    Xref {
        /// The PRD
        #[arg(long)]
        prd: PathBuf,
        /// The architecture document
        #[arg(long)]
        architecture: PathBuf,
        /// The stories folder (every .md in it is read)
        #[arg(long)]
        stories: PathBuf,
    },
    /// Greenfield or brownfield, with the signals, and the tier a description suggests
    Project {
        /// The project directory (default: here)
        dir: Option<PathBuf>,
        /// What the project is about, for the tier
        #[arg(long, value_name = "TEXT")]
        describe: Option<String>,
    },
}

fn read(ctx: &Context, path: &std::path::Path) -> Result<String, CommandError> {
    let path = ctx.cwd.join(path);
    std::fs::read_to_string(&path)
        .map_err(|e| CommandError::failed(format!("could not read {}: {e}", path.display())))
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
        AnalyzeAction::Validation { file, output } => {
            let d = validation::detect(&read(ctx, file)?);
            let passed = match output {
                Some(o) => validation::passed(&d, &read(ctx, o)?),
                None => None,
            };
            if ui.json() {
                ui.print_json(&serde_json::json!({"detection": d, "passed": passed}));
            } else {
                ui.line(format!(
                    "validation_type: {} (confidence {})",
                    d.validation_type, d.confidence
                ));
                if !d.patterns.is_empty() {
                    ui.line(format!("  patterns: {}", d.patterns.join(", ")));
                }
                if let Some((done, total)) = d.checkbox_count {
                    ui.line(format!("  checkboxes: {done} of {total} checked"));
                }
                if let Some(e) = d.error {
                    ui.line(format!("  error: {e}: {}", d.failures.join("; ")));
                }
                if output.is_some() {
                    ui.line(format!(
                        "  output: {}",
                        match passed {
                            Some(true) => "passed",
                            Some(false) => "failed",
                            None => "cannot tell",
                        }
                    ));
                }
            }
            if d.error.is_some() {
                return Ok(exit::USAGE);
            }
            return Ok(if passed == Some(false) {
                exit::FAILED
            } else {
                exit::OK
            });
        }
        AnalyzeAction::Review { file } => {
            let text = match file {
                Some(f) => read(ctx, f)?,
                None => {
                    let mut t = String::new();
                    std::io::stdin()
                        .read_to_string(&mut t)
                        .map_err(|e| CommandError::failed(format!("could not read stdin: {e}")))?;
                    t
                }
            };
            let r = review::parse(&text);
            if ui.json() {
                ui.print_json(&r);
            } else {
                ui.line(format!(
                    "outcome: {} → {}",
                    serde_json::json!(r.outcome).as_str().unwrap_or_default(),
                    r.next
                ));
                for f in &r.findings {
                    ui.line(format!(
                        "  [{}]{} {}{}{}",
                        f.severity,
                        if f.must_fix { " MUST-FIX" } else { "" },
                        f.text,
                        f.location
                            .as_deref()
                            .map(|l| format!(" ({l})"))
                            .unwrap_or_default(),
                        if f.done { " (done)" } else { "" }
                    ));
                }
                ui.line(format!(
                    "  {} finding(s), {} MUST-FIX open{}",
                    r.findings.len(),
                    r.must_fix_open,
                    if r.adversarial_count_ok {
                        ""
                    } else {
                        "; the review should name 3 to 10 specific problems"
                    }
                ));
                if let Some((d, t)) = r.checklist {
                    ui.line(format!(
                        "  checklist: {d}/{t}{}",
                        if r.checklist_complete {
                            ""
                        } else {
                            " (the code-review checklist has 19 items, all to be checked)"
                        }
                    ));
                }
            }
            return Ok(if r.outcome == review::Outcome::Approve {
                exit::OK
            } else {
                exit::FAILED
            });
        }
        AnalyzeAction::Xref {
            prd,
            architecture,
            stories,
        } => {
            let dir = ctx.cwd.join(stories);
            let mut text = String::new();
            let entries = std::fs::read_dir(&dir).map_err(|e| {
                CommandError::failed(format!("could not list {}: {e}", dir.display()))
            })?;
            for entry in entries.flatten() {
                if entry.path().extension().is_some_and(|e| e == "md") {
                    text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
                    text.push('\n');
                }
            }
            let a = xref::compare(&read(ctx, prd)?, &read(ctx, architecture)?, &text);
            if ui.json() {
                ui.print_json(&a);
            } else {
                ui.line(format!("alignment: {}", a.alignment_status));
                for i in &a.issues {
                    ui.line(format!("  {} {}: {}", i.severity, i.id, i.message));
                }
            }
            return Ok(if a.issues.is_empty() {
                exit::OK
            } else {
                exit::FAILED
            });
        }
        AnalyzeAction::Project { dir, describe } => {
            let root = dir
                .as_ref()
                .map(|d| ctx.cwd.join(d))
                .unwrap_or_else(|| ctx.cwd.clone());
            let p = project::detect(&root);
            let tier = describe.as_deref().map(|d| project::suggest(d, Some(&p)));
            if ui.json() {
                ui.print_json(&serde_json::json!({"project": p, "tier": tier}));
            } else {
                ui.line(format!(
                    "project_type: {} ({} source files)",
                    p.project_type, p.source_files
                ));
                for s in &p.detection_signals {
                    ui.line(format!("  signal: {s}"));
                }
                if let Some(t) = tier {
                    ui.line(format!(
                        "tier: {} (confidence {}, {}%)",
                        t.tier, t.confidence, t.confidence_score
                    ));
                    for (word, tier) in &t.matched {
                        ui.line(format!("  keyword: {word} → tier {tier}"));
                    }
                    if let Some(a) = &t.adjusted {
                        ui.line(format!("  {a}"));
                    }
                }
            }
        }
    }
    Ok(exit::OK)
}
