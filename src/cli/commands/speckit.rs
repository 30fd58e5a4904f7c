//! `git bmad speckit`.

use clap::{Args, Subcommand};

use crate::bmad::speckit;
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// spec-kit features in this repository.
#[derive(Debug, Args)]
pub struct SpeckitArgs {
    /// What to do
    #[command(subcommand)]
    pub action: SpeckitAction,
}

/// The `speckit` subcommands.
#[derive(Debug, Subcommand)]
pub enum SpeckitAction {
    /// The current feature (SPECIFY_FEATURE_DIRECTORY, .specify/feature.json, SPECIFY_FEATURE or the branch
    /// name, or the only feature), its artifacts, and tasks done/total per phase
    Status,
}

/// Run `speckit`.
pub fn cmd_speckit(ctx: &Context, args: &SpeckitArgs) -> Result<u8, CommandError> {
    let SpeckitAction::Status = args.action;
    let repo = ctx.repo().ok();
    let root = repo
        .as_ref()
        .map(|r| r.workdir().to_path_buf())
        .unwrap_or_else(|| ctx.cwd.clone());
    let branch = repo.as_ref().and_then(|r| r.head_branch().ok().flatten());
    let env = speckit::FeatureEnv::from_process();
    let Some(status) = speckit::status(
        &root,
        &env,
        branch
            .as_deref()
            .map(|b| b.trim_start_matches("refs/heads/")),
    ) else {
        return Err(CommandError::failed("no spec-kit feature found here")
            .hinted("set SPECIFY_FEATURE_DIRECTORY (or SPECIFY_FEATURE, a feature name), write .specify/feature.json ({\"feature_directory\": \"specs/001-x\"}), or run /speckit.specify"));
    };
    if ctx.ui.json() {
        ctx.ui.print_json(&status);
        return Ok(exit::OK);
    }
    let ui = &ctx.ui;
    ui.line(format!(
        "feature   {} (from {})",
        status.feature.dir.display(),
        status.feature.source
    ));
    let present: Vec<&str> = status
        .artifacts
        .iter()
        .filter(|(_, p)| *p)
        .map(|(a, _)| a.as_str())
        .collect();
    let missing: Vec<&str> = status
        .artifacts
        .iter()
        .filter(|(_, p)| !*p)
        .map(|(a, _)| a.as_str())
        .collect();
    ui.line(format!(
        "present   {}",
        if present.is_empty() {
            "-".into()
        } else {
            present.join(", ")
        }
    ));
    ui.line(format!(
        "missing   {}",
        if missing.is_empty() {
            "-".into()
        } else {
            missing.join(", ")
        }
    ));
    match status.tasks {
        Some((done, total)) => ui.line(format!("tasks     {done}/{total} done")),
        None => ui.line("tasks     no tasks.md yet (/speckit.tasks writes it)"),
    }
    for phase in &status.phases {
        ui.line(format!(
            "  {:>3}/{:<3} {}",
            phase.done, phase.total, phase.name
        ));
    }
    Ok(exit::OK)
}
