//! `git bmad hooks install|uninstall|status`.

use clap::{Args, Subcommand};

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::policy::agent;
use crate::policy::hooks::{self, HooksStatus};

/// Install, remove or inspect the git hooks that enforce the policy.
///
/// The hooks refuse force pushes, pushes to and deletions of protected branches, tag rewrites,
/// `--no-verify` commits in session worktrees and committed secrets. They live in a directory
/// of their own (`.git/bmad/hooks`, named by `core.hooksPath`), and each runs your hook of the
/// same name from where git ran it before (husky, lefthook, pre-commit, a global or tracked
/// hooks directory): no hook of yours is written, moved or removed, and uninstall puts
/// `core.hooksPath` back.
#[derive(Debug, Args)]
pub struct HooksArgs {
    /// What to do
    #[command(subcommand)]
    pub action: HooksAction,
}

/// The `hooks` actions.
#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Install (or refresh) the hooks; safe to run again
    Install {
        /// Also wire `git bmad guard` into this agent's hook settings
        #[arg(long, value_enum)]
        agent: Option<Agent>,
        /// Install for every repository of this user (~/.config/git-bmad/hooks, named by the
        /// global core.hooksPath) instead of this one
        #[arg(long)]
        global: bool,
    },
    /// Remove the hooks and put core.hooksPath back as it was
    Uninstall {
        /// Also remove the guard from this agent's hook settings
        #[arg(long, value_enum)]
        agent: Option<Agent>,
        /// Remove the install made for every repository of this user
        #[arg(long)]
        global: bool,
    },
    /// Show which hooks are installed where, what they chain, and how they could be bypassed
    Status,
}

/// Agents whose own hook settings git-bmad can wire the guard into.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: a PreToolUse entry in .claude/settings.json
    Claude,
}

/// Run `hooks`.
pub fn cmd_hooks(ctx: &Context, args: &HooksArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let status = match args.action {
        HooksAction::Install { agent, global } => {
            let binary = std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .map_err(|e| {
                    CommandError::failed(format!("cannot find the git-bmad binary: {e}"))
                })?;
            let status = hooks::install(&repo, &binary, scope(global))?;
            if let Some(Agent::Claude) = agent {
                let path = agent::install_claude(repo.workdir())?;
                ctx.ui.status(format!(
                    "Added `{}` as a PreToolUse hook in {}",
                    agent::GUARD_COMMAND,
                    path.display()
                ));
            }
            status
        }
        HooksAction::Uninstall { agent, global } => {
            if let Some(Agent::Claude) = agent {
                if let Some(path) = agent::uninstall_claude(repo.workdir())? {
                    ctx.ui
                        .status(format!("Removed the guard from {}", path.display()));
                }
            }
            hooks::uninstall(&repo, scope(global))?
        }
        HooksAction::Status => hooks::status(&repo)?,
    };
    if ctx.ui.json() {
        ctx.ui.print_json(&status);
        return Ok(exit::OK);
    }
    print(ctx, &status);
    Ok(exit::OK)
}

fn scope(global: bool) -> hooks::Scope {
    if global {
        hooks::Scope::Global
    } else {
        hooks::Scope::Repository
    }
}

/// Before agents run in `worktree`: put the policy hooks back in front if something
/// repointed `core.hooksPath` since install, and warn when they are still not all installed
/// there: without them nothing refuses an agent's force push, push to a protected branch or
/// committed secret.
pub fn warn_if_unguarded(ctx: &Context, worktree: &crate::git::Repo) {
    for line in hooks::guard(worktree) {
        ctx.ui.warn(line);
    }
}

fn print(ctx: &Context, status: &HooksStatus) {
    let ui = &ctx.ui;
    ui.line(format!("hooks directory: {}", status.dir.display()));
    if let (Some(p), Some(scope)) = (&status.hooks_path, &status.hooks_path_scope) {
        ui.line(format!("core.hooksPath: {p} ({scope} config)"));
    }
    if let Some(chains) = &status.chains {
        ui.line(format!(
            "your hooks: {} (run after the checks)",
            chains.display()
        ));
    }
    if let Some(binary) = &status.binary {
        ui.line(format!("runs: {}", binary.display()));
    }
    for h in &status.hooks {
        let state = if h.installed {
            ui.paint("installed", Style::Green)
        } else if h.foreign {
            ui.paint("not git-bmad's", Style::Yellow)
        } else {
            ui.paint("not installed", Style::Yellow)
        };
        let chained = h
            .chained
            .as_ref()
            .map(|c| format!(", then {}", c.display()))
            .unwrap_or_default();
        ui.line(format!("  {:<22} {state}{chained}", h.name));
    }
    for n in &status.notices {
        ui.status(n.clone());
    }
    for r in &status.risks {
        ui.status(format!("note: {r}"));
    }
}
