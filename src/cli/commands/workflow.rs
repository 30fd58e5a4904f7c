//! `git bmad workflow show|lint`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::bmad::workflow::{self, steps, Env, Severity, Workflow};
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// BMAD workflows as git-bmad reads them: resolved, ordered, linted.
#[derive(Debug, Args)]
pub struct WorkflowArgs {
    /// What to do
    #[command(subcommand)]
    pub action: WorkflowAction,
}

/// Where and how to resolve.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// The module config to resolve `{config_source}:key` with, instead of config_source
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// `{project-root}` (default: the repository's top level, else here)
    #[arg(long, value_name = "DIR")]
    pub project_root: Option<PathBuf>,
}

/// The `workflow` subcommands.
#[derive(Debug, Subcommand)]
pub enum WorkflowAction {
    /// The resolved config and the ordered steps with their tags, conditions and targets
    /// (workflow.yaml, instructions.xml|md, workflow.md, SKILL.md or a step file)
    Show {
        /// The workflow file
        file: PathBuf,
        #[command(flatten)]
        resolve: ResolveArgs,
        /// An output document whose `stepsCompleted` says where a resumed workflow stands
        #[arg(long, value_name = "FILE")]
        output_doc: Option<PathBuf>,
    },
    /// Problems with file:line:col and a fix hint; exit 1 if any is an error
    Lint {
        /// Workflow files
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        resolve: ResolveArgs,
    },
}

/// The environment to resolve in.
pub(super) fn env(ctx: &Context, resolve: &ResolveArgs) -> Env {
    let root = match &resolve.project_root {
        Some(r) => ctx.cwd.join(r),
        None => ctx
            .repo()
            .map(|r| r.workdir().to_path_buf())
            .unwrap_or_else(|_| ctx.cwd.clone()),
    };
    let mut env = Env::new(&root);
    env.config_override = resolve.config.as_ref().map(|c| ctx.cwd.join(c));
    env
}

fn load(ctx: &Context, env: &Env, file: &Path) -> Result<Workflow, CommandError> {
    Ok(workflow::load(&ctx.cwd.join(file), env)?)
}

/// Run `workflow`.
pub fn cmd_workflow(ctx: &Context, args: &WorkflowArgs) -> Result<u8, CommandError> {
    match &args.action {
        WorkflowAction::Show {
            file,
            resolve,
            output_doc,
        } => {
            let env = env(ctx, resolve);
            let wf = load(ctx, &env, file)?;
            let resume = match (output_doc, &wf.chain) {
                (Some(doc), Some(chain)) => {
                    let path = ctx.cwd.join(doc);
                    let text = std::fs::read_to_string(&path).map_err(|e| {
                        CommandError::failed(format!("could not read {}: {e}", path.display()))
                    })?;
                    let done = steps::steps_completed(&text, &env.shown(&path)).unwrap_or_default();
                    Some(steps::resume_point(chain, &done))
                }
                (Some(_), None) => {
                    return Err(CommandError::usage(
                        "--output-doc applies to step-file workflows (workflow.md with steps/)",
                    ))
                }
                _ => None,
            };
            if ctx.ui.json() {
                let mut value = serde_json::json!(wf);
                if let Some(r) = &resume {
                    value["resume"] = serde_json::json!(r);
                }
                ctx.ui.print_json(&value);
                return Ok(exit::OK);
            }
            print_workflow(ctx, &wf);
            if let Some(r) = resume {
                ctx.ui.line(format!(
                    "resume: {} done; next {}",
                    r.completed.len(),
                    r.next.as_deref().unwrap_or("(none: every step is done)")
                ));
                if !r.unknown.is_empty() {
                    ctx.ui.line(format!(
                        "  stepsCompleted entries that name no step: {}",
                        r.unknown.join(", ")
                    ));
                }
            }
            Ok(exit::OK)
        }
        WorkflowAction::Lint { files, resolve } => {
            let env = env(ctx, resolve);
            let mut all = Vec::new();
            for f in files {
                let wf = load(ctx, &env, f)?;
                all.push(wf);
            }
            let errors = all
                .iter()
                .flat_map(|w| &w.diagnostics)
                .filter(|d| d.severity == Severity::Error)
                .count();
            let warnings = all.iter().map(|w| w.diagnostics.len()).sum::<usize>() - errors;
            if ctx.ui.json() {
                let out: Vec<_> = all
                    .iter()
                    .map(|w| serde_json::json!({"file": w.file, "diagnostics": w.diagnostics}))
                    .collect();
                ctx.ui.print_json(
                    &serde_json::json!({"files": out, "errors": errors, "warnings": warnings}),
                );
            } else {
                for d in all.iter().flat_map(|w| &w.diagnostics) {
                    ctx.ui.line(d.to_string());
                }
                ctx.ui.line(format!(
                    "{} file(s): {errors} error(s), {warnings} warning(s)",
                    all.len()
                ));
            }
            Ok(if errors > 0 { exit::FAILED } else { exit::OK })
        }
    }
}

fn print_workflow(ctx: &Context, wf: &Workflow) {
    let ui = &ctx.ui;
    ui.line(format!(
        "{} ({}){}",
        wf.file,
        serde_json::json!(wf.format).as_str().unwrap_or_default(),
        wf.name
            .as_deref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default()
    ));
    if let Some(c) = &wf.config {
        if let Some(f) = &c.config_file {
            ui.line(format!("  config       {f}"));
        }
        for v in &c.variables {
            if v.raw == v.value {
                ui.line(format!("  {:<24} {}", v.name, v.value));
            } else {
                ui.line(format!("  {:<24} {}  (from {})", v.name, v.value, v.raw));
            }
        }
        if !c.runtime_variables.is_empty() {
            ui.line(format!("  at run time: {}", c.runtime_variables.join(", ")));
        }
    }
    if let Some(i) = &wf.instructions {
        ui.line(format!(
            "  {} step(s){}",
            i.steps.len(),
            wf.instructions_file
                .as_deref()
                .map(|f| format!(" in {f}"))
                .unwrap_or_default()
        ));
        for s in &i.steps {
            let mut extras = Vec::new();
            if let Some(c) = &s.condition {
                extras.push(format!("if {c}"));
            }
            if let Some(o) = &s.optional {
                extras.push(format!("optional {o}"));
            }
            if let Some(t) = &s.tag {
                extras.push(format!("tag {t}"));
            }
            ui.line(format!(
                "  step {:<6} {}{}  ({} tag(s), line {})",
                s.n,
                s.purpose(),
                if extras.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", extras.join(", "))
                },
                s.tags.len(),
                s.line
            ));
        }
        for g in &i.gotos {
            ui.line(format!(
                "  goto from {} → {}{}",
                g.from,
                g.step
                    .as_deref()
                    .map(|n| format!("step {n}"))
                    .or(g.anchor.as_deref().map(|a| format!("anchor {a}")))
                    .unwrap_or_default(),
                if g.conditional { " (conditional)" } else { "" }
            ));
        }
        for c in &i.invocations {
            ui.line(format!("  {} {}", c.kind, c.target));
        }
        let counts: Vec<String> = i.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
        ui.line(format!("  tags: {}", counts.join(", ")));
    }
    if let Some(chain) = &wf.chain {
        ui.line(format!("  {} step file(s)", chain.steps.len()));
        for s in &chain.steps {
            let links: Vec<String> = s
                .links
                .iter()
                .map(|l| {
                    format!(
                        "{} → {}{}",
                        l.via,
                        l.target,
                        if l.exists { "" } else { " (missing)" }
                    )
                })
                .collect();
            ui.line(format!(
                "  {}{}",
                s.name,
                if s.terminal {
                    " (terminal)".to_owned()
                } else {
                    format!(": {}", links.join("; "))
                }
            ));
        }
        for (from, to) in &chain.loops {
            ui.line(format!("  loop: {from} → {to}"));
        }
    }
    for d in &wf.diagnostics {
        ui.line(format!("  {d}"));
    }
}
