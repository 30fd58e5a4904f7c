//! `git bmad start`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::session::{self, StartOptions};
use crate::supervisor;

/// Start a session.
///
/// Creates branch <prefix><name> (default bmad/<name>) and the worktree ../<repo>.<name>,
/// claims a session id, takes the first checkpoint and journals session_started. The current
/// working tree must be clean. With --playbook, the playbook is validated first and
/// `git bmad run` in the new worktree runs it.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The session name: letters, digits, '-', '_' and '.'
    pub name: String,
    /// Start from this commit, branch or tag instead of HEAD
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The playbook to run in this session (a name in .bmad/playbooks/, a built-in, or a file)
    #[arg(long, value_name = "PLAYBOOK")]
    pub playbook: Option<String>,
}

/// Run `start`.
pub fn cmd_start(ctx: &Context, args: &StartArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let playbook = match &args.playbook {
        Some(query) => {
            let main = repo.main_workdir()?;
            let source = supervisor::resolve(
                query,
                &ctx.cwd,
                &[repo.workdir().to_path_buf(), main.clone()],
            )?;
            let config = ctx.config(&repo)?;
            supervisor::validate(&source, repo.workdir(), &config)?;
            Some(source.name)
        }
        None => None,
    };
    let started = session::start(
        session::Repo::of(&repo),
        &StartOptions {
            name: args.name.clone(),
            base: args.base.clone(),
            playbook: playbook.clone(),
        },
        &ctx.policy,
    )?;
    for warning in &started.warnings {
        ctx.ui.warn(warning);
    }
    if ctx.ui.json() {
        ctx.ui.print_json(&started);
        return Ok(exit::OK);
    }
    let s = &started.session;
    let ui = &ctx.ui;
    ui.line(format!(
        "Started session {} ({})",
        ui.paint(s.id.as_str(), Style::Bold),
        s.name
    ));
    ui.line(format!("  branch    {}", s.short_branch()));
    ui.line(format!("  worktree  {}", s.worktree.display()));
    if let Some(name) = &playbook {
        ui.line(format!("  playbook  {name}"));
    }
    ui.line(format!(
        "  checkpoint 1  {}",
        started.checkpoint.id.to_hex_with_len(10)
    ));
    let cd = crate::text::shell_quote(&s.worktree.to_string_lossy());
    if playbook.is_some() {
        ui.status(format!(
            "\nNext, in another terminal if you like (sessions run side by side):\n  cd {cd}\n  git bmad run          # runs the playbook until a gate, a failure or the end\n  git bmad status       # where it stands; `git bmad answer …` at a gate"
        ));
    } else {
        ui.status(format!(
            "\nNext:\n  cd {cd}\n  …let an agent work there, or: git bmad run <playbook>…\n  git bmad checkpoint -m \"what was done\"\n  git bmad status"
        ));
    }
    Ok(exit::OK)
}
