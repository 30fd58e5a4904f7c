//! `git bmad playbook`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::supervisor::{self, Severity};

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
    Validate {
        /// Playbook files or names
        #[arg(required = true)]
        playbooks: Vec<String>,
    },
    /// The playbooks of this repository and the built-in ones
    List,
}

/// Run `playbook`.
pub fn cmd_playbook(ctx: &Context, args: &PlaybookArgs) -> Result<u8, CommandError> {
    match &args.action {
        PlaybookAction::Validate { playbooks } => validate(ctx, playbooks),
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

fn validate(ctx: &Context, queries: &[String]) -> Result<u8, CommandError> {
    let (repo, dirs) = search_dirs(ctx);
    let config = match &repo {
        Some(repo) => Some(ctx.config(repo)?),
        None => None,
    };
    let mut reports = Vec::new();
    let mut failed = false;
    for query in queries {
        let source = supervisor::resolve(query, &ctx.cwd, &dirs)?;
        let (playbook, mut diagnostics) = supervisor::parse_playbook(&source.text, &source.name);
        let mut commands_checked = false;
        if let (Some(p), Some(repo), Some(config)) = (&playbook, &repo, &config) {
            diagnostics.extend(supervisor::missing_commands(p, repo.workdir(), config));
            commands_checked = true;
        }
        let errors = diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        failed |= errors > 0;
        reports.push((source, playbook, diagnostics, errors, commands_checked));
    }
    if ctx.ui.json() {
        ctx.ui.print_json(&json!(reports
            .iter()
            .map(|(source, playbook, diagnostics, errors, checked)| json!({
                "playbook": source.name,
                "origin": source.origin,
                "valid": *errors == 0,
                "steps": playbook.as_ref().map(|p| p.steps().count()),
                "commands_checked": checked,
                "diagnostics": diagnostics,
            }))
            .collect::<Vec<_>>()));
        return Ok(if failed { exit::USAGE } else { exit::OK });
    }
    let ui = &ctx.ui;
    for (source, playbook, diagnostics, errors, checked) in &reports {
        for d in diagnostics {
            ui.line(d.render(&source.origin));
        }
        match playbook {
            Some(p) if *errors == 0 => ui.line(format!(
                "{} {} ({}): {} step(s) in {} phase(s){}",
                ui.paint("valid", Style::Green),
                source.name,
                source.origin,
                p.steps().count(),
                p.phases.len(),
                if *checked {
                    ""
                } else {
                    "; slash commands not checked (not in a repository)"
                }
            )),
            _ => ui.line(format!(
                "{} {} ({}): {errors} error(s)",
                ui.paint("invalid", Style::Red),
                source.name,
                source.origin
            )),
        }
    }
    Ok(if failed { exit::USAGE } else { exit::OK })
}

fn list(ctx: &Context) -> Result<u8, CommandError> {
    let (_, dirs) = search_dirs(ctx);
    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    for dir in &dirs {
        let dir = dir.join(supervisor::PLAYBOOK_DIR);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let is_yaml = matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            );
            if !is_yaml || name == "index" || rows.iter().any(|r| r.0 == name) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            rows.push(describe(&name, &path.display().to_string(), &text));
        }
    }
    for (name, text) in supervisor::BUILTINS {
        if !rows.iter().any(|r| r.0 == *name) {
            rows.push(describe(name, "built-in", text));
        }
    }
    if ctx.ui.json() {
        ctx.ui.print_json(&json!(rows
            .iter()
            .map(|(name, origin, steps, description)| json!({"name": name, "origin": origin, "steps": steps, "description": description}))
            .collect::<Vec<_>>()));
        return Ok(exit::OK);
    }
    let table: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(a, b, c, d)| vec![a, c, d, b])
        .collect();
    ctx.ui
        .table(&["NAME", "STEPS", "DESCRIPTION", "FROM"], &table);
    Ok(exit::OK)
}

fn describe(name: &str, origin: &str, text: &str) -> (String, String, String, String) {
    let (playbook, _) = supervisor::parse_playbook(text, name);
    match playbook {
        Some(p) => (
            name.to_owned(),
            origin.to_owned(),
            p.steps().count().to_string(),
            p.description.unwrap_or_default(),
        ),
        None => (
            name.to_owned(),
            origin.to_owned(),
            "-".into(),
            "invalid: git bmad playbook validate shows why".into(),
        ),
    }
}
