//! `git bmad analyze`.

use std::io::Read;

use clap::{Args, Subcommand};

use std::path::PathBuf;

use crate::bmad::analysis::{
    batch, confidence, menu, preflight, project, review, tiers, validation, xref,
};
use crate::bmad::layout::Layout;
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
        AnalyzeAction::Confidence { signals, tier } => {
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
            let effects = tier.map(|t| {
                let settings = tiers::Settings::for_tier(t);
                serde_json::json!({
                    "tier": t,
                    "party_mode": settings.party_mode_below.is_some_and(|below| c.score < f64::from(below)),
                    "pre_final_review": settings.pre_final_review,
                })
            });
            if ui.json() {
                let mut value = serde_json::json!(c);
                if let Some(e) = &effects {
                    value["tier"] = e.clone();
                }
                ui.print_json(&value);
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
            if let Some(e) = effects {
                ui.line(format!(
                    "tier {}: party mode {}, pre-final review {}",
                    e["tier"],
                    if e["party_mode"] == true {
                        "starts (below 60)"
                    } else {
                        "not needed"
                    },
                    if e["pre_final_review"] == true {
                        "due"
                    } else {
                        "not needed"
                    },
                ));
            }
        }
        AnalyzeAction::Preflight {
            config,
            workflow,
            keys,
            inputs,
            commands,
        } => {
            let mut keys = keys.clone();
            let mut config = config.clone();
            if let Some(w) = workflow {
                let (needed, source) = workflow_requirements(ctx, w)?;
                for k in needed {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
                config = config.or(source);
            }
            return preflight_cmd(ctx, config.as_deref(), &keys, inputs, commands);
        }
        AnalyzeAction::Tier {
            message,
            base,
            earlier,
        } => return tier_cmd(ctx, message.as_deref(), *base, earlier),
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

/// The config keys a workflow.yaml reads with `{config_source}:key`, and its config file.
fn workflow_requirements(
    ctx: &Context,
    file: &std::path::Path,
) -> Result<(Vec<String>, Option<PathBuf>), CommandError> {
    let path = ctx.cwd.join(file);
    let root = ctx
        .repo()
        .map(|r| r.workdir().to_path_buf())
        .unwrap_or_else(|_| ctx.cwd.clone());
    let mut env = crate::bmad::workflow::Env::new(&root);
    env.lenient_config = true;
    let wf = crate::bmad::workflow::load(&path, &env)?;
    let Some(config) = wf.config else {
        return Err(CommandError::usage(format!(
            "{} is not a workflow.yaml; --workflow reads the config keys a workflow.yaml uses",
            file.display()
        )));
    };
    let mut keys = Vec::new();
    for v in &config.variables {
        let mut rest = v.raw.as_str();
        while let Some(at) = rest.find("{config_source}:") {
            rest = &rest[at + "{config_source}:".len()..];
            let key: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            if !key.is_empty() && !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let source = config
        .variables
        .iter()
        .find(|v| v.name == "config_source")
        .map(|v| PathBuf::from(&v.value))
        .filter(|p| p.is_file());
    Ok((keys, source))
}

fn preflight_cmd(
    ctx: &Context,
    config: Option<&std::path::Path>,
    keys: &[String],
    inputs: &[String],
    commands: &[String],
) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
    if keys.is_empty() && inputs.is_empty() && commands.is_empty() {
        return Err(CommandError::usage(
            "nothing to check: give --workflow, --key, --input or --command",
        ));
    }
    let layout = Layout::discover(&ctx.cwd);
    let file = match config {
        Some(c) => Some(ctx.cwd.join(c)),
        None => layout.config_file.clone(),
    };
    let values = match &file {
        Some(f) => {
            let text = read(ctx, f)?;
            crate::config::yaml::from_str::<crate::config::yaml::Data>(&text)
                .map_err(|e| CommandError::failed(format!("{}: {e}", f.display())))?
                .as_mapping()
                .cloned()
                .unwrap_or_default()
        }
        None => crate::config::yaml::Mapping::new(),
    };
    let req = preflight::Requirements {
        config_keys: keys.to_vec(),
        inputs: inputs.to_vec(),
        commands: commands.to_vec(),
    };
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let cfg = preflight::Config {
        file: file.as_deref().map(|f| layout.shown(f)),
        values: &values,
    };
    let p = preflight::run(&ctx.cwd, &cfg, &req, &path_dirs);
    if ui.json() {
        ui.print_json(&p);
    } else {
        let word = |v: serde_json::Value| v.as_str().map(str::to_owned).unwrap_or_default();
        ui.line(format!(
            "{} ({}% of checks passed)",
            word(serde_json::json!(p.overall_status)),
            p.checks_passed_percent
        ));
        for c in &p.checks {
            ui.line(format!(
                "  {:<16} {}",
                c.check,
                word(serde_json::json!(c.status))
            ));
            for f in &c.validated_files {
                ui.line(format!("    found {f}"));
            }
            if !c.missing.is_empty() {
                ui.line(format!("    missing: {}", c.missing.join(", ")));
            }
            if let Some(r) = &c.remediation {
                ui.line(format!("    fix: {r}"));
            }
        }
    }
    Ok(match p.overall_status {
        preflight::Overall::Ready => exit::OK,
        preflight::Overall::Failed => exit::FAILED,
    })
}

fn tier_cmd(
    ctx: &Context,
    message: Option<&str>,
    base: u8,
    earlier: &[String],
) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
    let parsed = earlier
        .iter()
        .map(String::as_str)
        .chain(message)
        .map(tiers::parse)
        .collect::<Result<Vec<_>, _>>();
    let parsed = match parsed {
        Ok(p) => p,
        Err(blocked) => {
            if ui.json() {
                ui.print_json(&blocked);
                return Ok(exit::POLICY);
            }
            return Err(CommandError::policy(blocked.to_string()));
        }
    };
    let (session, current) = if message.is_some() {
        let (s, c) = parsed.split_at(parsed.len() - 1);
        (s.concat(), c.concat())
    } else {
        (parsed.concat(), Vec::new())
    };
    let r = tiers::resolve(base, &session, &current);
    if ui.json() {
        ui.print_json(&r);
        return Ok(exit::OK);
    }
    let describe = |s: &tiers::Settings| {
        format!(
            "tier {}, batch size {}, party mode below {}, pre-final review {}",
            s.tier,
            s.batch_size.map_or("all".to_owned(), |b| b.to_string()),
            s.party_mode_below
                .map_or("never".to_owned(), |p| p.to_string()),
            if s.pre_final_review { "yes" } else { "no" }
        )
    };
    ui.line(format!("session: {}", describe(&r.settings)));
    if r.operation != r.settings {
        ui.line(format!("this operation: {}", describe(&r.operation)));
    }
    for a in &r.overrides {
        let source = serde_json::json!(a.by.source);
        ui.line(format!(
            "  {} {:?} ({}){}",
            if a.applied { "applied  " } else { "overruled" },
            a.by.text,
            source.as_str().unwrap_or_default().replace('_', " "),
            a.overruled_by
                .map(|s| format!(
                    " by the {}",
                    serde_json::json!(s)
                        .as_str()
                        .unwrap_or_default()
                        .replace('_', " ")
                ))
                .unwrap_or_default()
        ));
    }
    Ok(exit::OK)
}
