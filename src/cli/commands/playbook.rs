//! `git bmad playbook`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::supervisor;

/// Check or list playbooks.
#[derive(Debug, Args)]
pub struct PlaybookArgs {
    /// What to do
    #[command(subcommand)]
    pub action: PlaybookAction,
}

/// The `playbook` subcommands.
#[derive(Debug, Subcommand)]
pub enum PlaybookAction {
    /// Check playbooks strictly: every violation with file:line:col, the field and the
    /// allowed values; slash commands must exist in this project. Exit 2 on any error
    ///
    /// A step nothing checks (an agent step with no postcondition and no `verdict: required`)
    /// is a warning: the agent's word alone would make it done
    Validate {
        /// Playbook files or names
        #[arg(required = true)]
        playbooks: Vec<String>,
        /// Make warnings errors
        #[arg(long)]
        strict: bool,
    },
    /// The playbooks of this repository and the built-in ones
    List,
}

/// Run `playbook`.
pub fn cmd_playbook(ctx: &Context, args: &PlaybookArgs) -> Result<u8, CommandError> {
    match &args.action {
        PlaybookAction::Validate { playbooks, strict } => validate(ctx, playbooks, *strict),
        PlaybookAction::List => list(ctx),
    }
}

fn search_dirs(ctx: &Context) -> (Option<crate::git::Repo>, Vec<PathBuf>) {
    match ctx.repo() {
        Ok(repo) => {
            let mut dirs = vec![repo.workdir().to_path_buf()];
            if let Ok(main) = repo.main_workdir() {
                if main != dirs[0] {
                    dirs.push(main);
                }
            }
            (Some(repo), dirs)
        }
        Err(_) => (None, Vec::new()),
    }
}

fn validate(ctx: &Context, queries: &[String], strict: bool) -> Result<u8, CommandError> {
    let (repo, dirs) = search_dirs(ctx);
    let config = match &repo {
        Some(repo) => Some(ctx.config(repo)?),
        None => None,
    };
    let worktree = repo.as_ref().zip(config.as_ref());
    let mut reports = Vec::new();
    for query in queries {
        let source = supervisor::resolve(query, &ctx.cwd, &dirs)?;
        let checked = supervisor::check(&source, worktree.map(|(r, c)| (r.workdir(), c)), strict);
        reports.push((source, checked));
    }
    let failed = reports.iter().any(|(_, checked)| checked.errors() > 0);
    let code = if failed { exit::USAGE } else { exit::OK };
    if ctx.ui.json() {
        ctx.ui.print_json(&json!(reports
            .iter()
            .map(|(source, checked)| json!({
                "playbook": source.name,
                "origin": source.origin,
                "valid": checked.errors() == 0,
                "steps": checked.playbook.as_ref().map(|p| p.steps().count()),
                "commands_checked": checked.commands_checked,
                "diagnostics": checked.diagnostics,
            }))
            .collect::<Vec<_>>()));
        return Ok(code);
    }
    let ui = &ctx.ui;
    for (source, checked) in &reports {
        for d in &checked.diagnostics {
            ui.line(d.render(&source.origin));
        }
        match &checked.playbook {
            Some(p) if checked.errors() == 0 => ui.line(format!(
                "{} {} ({}): {} step(s) in {} phase(s){}",
                ui.paint("valid", Style::Green),
                source.name,
                source.origin,
                p.steps().count(),
                p.phases.len(),
                if checked.commands_checked {
                    ""
                } else {
                    "; slash commands not checked (not in a repository)"
                }
            )),
            _ => ui.line(format!(
                "{} {} ({}): {} error(s)",
                ui.paint("invalid", Style::Red),
                source.name,
                source.origin,
                checked.errors()
            )),
        }
    }
    Ok(code)
}

fn list(ctx: &Context) -> Result<u8, CommandError> {
    let (_, dirs) = search_dirs(ctx);
    let listed = supervisor::list(&dirs);
    if ctx.ui.json() {
        ctx.ui.print_json(&json!(listed
            .iter()
            .map(|l| json!({
                "name": l.name,
                "origin": l.origin,
                "steps": l.steps.map_or("-".to_owned(), |n| n.to_string()),
                "description": description(l),
            }))
            .collect::<Vec<_>>()));
        return Ok(exit::OK);
    }
    let table: Vec<Vec<String>> = listed
        .iter()
        .map(|l| {
            vec![
                l.name.clone(),
                l.steps.map_or("-".to_owned(), |n| n.to_string()),
                description(l),
                l.origin.clone(),
            ]
        })
        .collect();
    ctx.ui
        .table(&["NAME", "STEPS", "DESCRIPTION", "FROM"], &table);
    Ok(exit::OK)
}

fn description(l: &supervisor::Listed) -> String {
    match (&l.steps, &l.description) {
        (None, _) => "invalid: git bmad playbook validate shows why".into(),
        (Some(_), d) => d.clone().unwrap_or_default(),
    }
}
