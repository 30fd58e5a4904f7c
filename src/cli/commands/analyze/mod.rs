//! `git bmad analyze`: the decision engine's judgements, one subcommand each; the larger
//! ones have a file of their own here.

mod confidence;
mod preflight;
mod review;
mod tier;

use std::io::Read;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::bmad::analysis::{batch, menu, project, validation, xref};
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
        /// The project tier (0–4): adds whether party mode starts (confidence below 60 at
        /// tier 2 and up) and whether a pre-final review is due (tiers 3–4)
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=4))]
        tier: Option<u8>,
    },
    /// Is everything a workflow needs there? Config keys, input documents, commands on PATH:
    /// READY, or FAILED with what is missing and how to fix it (exit 1)
    Preflight {
        /// The config to look keys up in (default: the workflow's config_source, else the
        /// BMAD install's bmm/config.yaml)
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// A workflow.yaml: every `{config_source}:key` it uses is a required key
        #[arg(long, value_name = "FILE")]
        workflow: Option<PathBuf>,
        /// A config key that must be set (repeatable)
        #[arg(long = "key", value_name = "KEY")]
        keys: Vec<String>,
        /// An input document, relative to the project; `*` and `?` in the file name
        /// (repeatable)
        #[arg(long = "input", value_name = "PATH")]
        inputs: Vec<String>,
        /// A program that must be on PATH (repeatable)
        #[arg(long = "command", value_name = "NAME")]
        commands: Vec<String>,
    },
    /// The tier settings after overrides: explicit tier > profile > specific settings >
    /// natural language; inline modifiers ([thorough]) for this message only. Switching off
    /// final approval, stall detection or the push policy is refused (exit 4)
    Tier {
        /// This operation's message, e.g. "draft the PRD [thorough]"
        message: Option<String>,
        /// The project's tier before overrides
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=4))]
        base: u8,
        /// An earlier override in this session, oldest first (repeatable), e.g. "use tier 3"
        #[arg(long = "earlier", value_name = "TEXT")]
        earlier: Vec<String>,
    },
    /// Where a BMB validation result sends the workflow: party mode (more than 3 blocking
    /// errors or 5 major issues), advanced elicitation (compliance below 70), or continue
    Bmb {
        /// Blocking errors
        #[arg(long, default_value_t = 0)]
        blocking: u32,
        /// Major issues
        #[arg(long, default_value_t = 0)]
        major: u32,
        /// Compliance score, 0–100
        #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
        compliance: u32,
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
        AnalyzeAction::Menu { default } => return analyze_menu(ctx, default),
        AnalyzeAction::Confidence { signals, tier } => return confidence::run(ctx, signals, *tier),
        AnalyzeAction::Preflight {
            config,
            workflow,
            keys,
            inputs,
            commands,
        } => {
            return preflight::run(
                ctx,
                config.as_deref(),
                workflow.as_deref(),
                keys,
                inputs,
                commands,
            )
        }
        AnalyzeAction::Tier {
            message,
            base,
            earlier,
        } => return tier::run(ctx, message.as_deref(), *base, earlier),
        AnalyzeAction::Bmb {
            blocking,
            major,
            compliance,
        } => {
            let result = batch::BmbResult {
                blocking_errors: *blocking,
                major_issues: *major,
                compliance_score: *compliance,
            };
            let (route, reason) = batch::route_bmb(&result);
            if ui.json() {
                ui.print_json(
                    &serde_json::json!({"result": result, "route": route, "reason": reason}),
                );
            } else {
                ui.line(format!(
                    "{}: {reason}",
                    serde_json::json!(route)
                        .as_str()
                        .unwrap_or_default()
                        .replace('_', " ")
                ));
            }
        }
        AnalyzeAction::Validation { file, output } => {
            return analyze_validation(ctx, file, output.as_deref())
        }
        AnalyzeAction::Review { file } => return review::run(ctx, file.as_ref()),
        AnalyzeAction::Xref {
            prd,
            architecture,
            stories,
        } => {
            let dir = ctx.cwd.join(stories);
            let text = xref::read_stories(&dir).map_err(|e| {
                CommandError::failed(format!("could not list {}: {e}", dir.display()))
            })?;
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

/// `analyze menu`: the menu at the end of what stdin holds, and the option to take.
fn analyze_menu(ctx: &Context, default: &str) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
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
    Ok(exit::OK)
}

/// `analyze validation`: which validation a workflow file uses, and whether `output` passes it.
fn analyze_validation(
    ctx: &Context,
    file: &std::path::Path,
    output: Option<&std::path::Path>,
) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
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
    Ok(if passed == Some(false) {
        exit::FAILED
    } else {
        exit::OK
    })
}
