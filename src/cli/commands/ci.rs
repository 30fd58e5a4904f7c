//! `git bmad ci init github`.

use clap::{Args, Subcommand};

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::epic::actions::workflows::Workflows;
use crate::epic::actions::{EPIC_WORKFLOW, STORY_WORKFLOW};

/// Continuous integration that runs an epic's stories: the GitHub Actions workflow behind
/// `git bmad epic run <epic> --on actions`.
#[derive(Debug, Args)]
pub struct CiArgs {
    /// What to do
    #[command(subcommand)]
    pub action: CiAction,
}

/// The `ci` actions.
#[derive(Debug, Subcommand)]
pub enum CiAction {
    /// Write .github/workflows/bmad-story.yml (one job per story, run from the pushed state
    /// on a fresh runner) and say which secrets and settings it needs
    Init(InitArgs),
}

/// `ci init`'s options.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The CI service (github)
    #[arg(value_name = "SERVICE")]
    pub service: String,
    /// git-bmad's git URL, for `cargo install --git` on runners that do not have it
    #[arg(long, default_value = "", value_name = "URL")]
    pub source: String,
    /// The runner label the jobs run on
    #[arg(long, default_value = "ubuntu-latest", value_name = "LABEL")]
    pub runs_on: String,
    /// A job's time limit in minutes (GitHub-hosted runners stop at 360); a story's job is
    /// dispatched with less when the epic run's time budget (--max-time) leaves the story less
    #[arg(long, default_value_t = 360, value_name = "MINUTES")]
    pub timeout_minutes: u32,
    /// Replace a workflow file that differs from what git-bmad writes (it is yours to change,
    /// so it is kept otherwise)
    #[arg(long)]
    pub force: bool,
}

/// Run `ci`.
pub fn cmd_ci(ctx: &Context, args: &CiArgs) -> Result<u8, CommandError> {
    let CiAction::Init(init) = &args.action;
    if init.service != "github" {
        return Err(CommandError::usage(format!(
            "ci init {:?}: git-bmad writes workflows for github (GitHub Actions)",
            init.service
        )));
    }
    if !(1..=4320).contains(&init.timeout_minutes) {
        return Err(CommandError::usage(
            "--timeout-minutes: give 1 to 4320 (GitHub-hosted runners stop at 360)",
        ));
    }
    let repo = ctx.repo()?;
    let config = ctx.config(&repo)?;
    let mut workflow = Workflows::for_config(&config, &init.source);
    workflow.runs_on.clone_from(&init.runs_on);
    workflow.timeout_minutes = init.timeout_minutes;
    let main = repo.main_workdir().map_err(crate::session::Error::from)?;
    let mut files = Vec::new();
    for (name, text) in [
        (STORY_WORKFLOW, workflow.render()),
        (EPIC_WORKFLOW, workflow.render_epic()),
    ] {
        let rel = format!(".github/workflows/{name}");
        let outcome = write_workflow(&main.join(&rel), &rel, &text, init.force)?;
        files.push((rel, outcome));
    }
    let secrets = workflow.secrets();
    let next = [
        "ssh-keygen -t ed25519 -N '' -C bmad-runner -f bmad-runner   # the runners' signing key".to_owned(),
        "gh secret set BMAD_SIGNING_KEY < bmad-runner && rm bmad-runner".to_owned(),
        "echo \"bmad-runner $(cut -d' ' -f1,2 bmad-runner.pub)\" >> .bmad/allowed_signers   # on main, reviewed".to_owned(),
        "git config bmad.origin.pushSessions true   # where you run the coordinator".to_owned(),
        "git add .github/workflows .bmad/allowed_signers && git commit && git push   # to the epic's base branch".to_owned(),
        "git bmad epic run <epic> --on actions --parallel 4".to_owned(),
    ];
    let ui = &ctx.ui;
    if ui.json() {
        ui.print_json(&serde_json::json!({
            "files": files.iter().map(|(f, o)| serde_json::json!({"file": f, "outcome": o})).collect::<Vec<_>>(),
            "secrets": secrets.iter().map(|(n, h)| serde_json::json!({"name": n, "holds": h})).collect::<Vec<_>>(),
            "next": next,
        }));
        return Ok(exit::OK);
    }
    for (rel, outcome) in &files {
        ui.status(format!("{rel}: {outcome}"));
    }
    ui.line("Repository secrets the job reads (gh secret set NAME):");
    for (name, holds) in &secrets {
        ui.line(format!("  {name}: {holds}"));
    }
    ui.line("Then:");
    for step in &next {
        ui.line(format!("  {step}"));
    }
    Ok(exit::OK)
}

/// Write a workflow file unless it is as git-bmad would write it; one that differs is the
/// user's and is kept unless `force`. What was done.
fn write_workflow(
    path: &std::path::Path,
    rel: &str,
    text: &str,
    force: bool,
) -> Result<&'static str, CommandError> {
    let outcome = match std::fs::read_to_string(path) {
        Ok(old) if old == text => return Ok("up to date"),
        Ok(_) if !force => {
            return Err(CommandError::failed(format!(
                "{rel} exists and differs from what git-bmad writes (it is yours to change); --force replaces it"
            )))
        }
        Ok(_) => "replaced",
        Err(_) => "written",
    };
    let dir = path.parent().unwrap_or(path);
    std::fs::create_dir_all(dir)
        .and_then(|()| crate::fs::write_atomically(path, text.as_bytes(), None))
        .map_err(|e| CommandError::failed(format!("could not write {rel}: {e}")))?;
    Ok(outcome)
}
