//! `git bmad stories`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::bmad::project::Project;
use crate::bmad::status::Status;
use crate::bmad::status_change::StatusChange;
use crate::bmad::{queue, stories_json};
use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::epic;

/// BMAD stories: the sprint status and the story files, read together.
///
/// Finds the BMAD install (_bmad/, bmad/ or an older .bmad/), its bmm/config.yaml, the
/// sprint-status.yaml and the stories folder, with the fallbacks of older layouts
/// (docs/sprint-status.yaml, docs/stories/, docs/sprint-artifacts/). A BMAD v7 project is
/// read from its ticket tree ({output_folder}/{active_initiative}: tickets.toml, leaf and
/// plan files), its stories keyed by ticket reference (1.2).
#[derive(Debug, Args)]
pub struct StoriesArgs {
    /// The stories folder (default: found from the BMAD config and sprint status)
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// What to do
    #[command(subcommand)]
    pub action: StoriesAction,
}

/// The `stories` subcommands.
#[derive(Debug, Subcommand)]
pub enum StoriesAction {
    /// Every story: key, title, status (normalised), file, epic
    List,
    /// The story to work on next, and why: BMAD's rule (in progress, review, ready-for-dev,
    /// backlog; lowest epic and story number first), dependencies done (v7: done or in
    /// review); when every story is done, the open optional retrospective
    Next,
    /// Stories in dependency order; a cycle is an error that names it
    Order,
    /// Drift between story files and sprint status, missing files, bad keys; exit 1 if any error
    Check,
    /// Set a story's status in sprint-status.yaml and its story file, signed (v7: in the
    /// ticket's plan, as tickets.py mark writes it); legal transitions only (backlog →
    /// ready-for-dev → in-progress → review → done, and review → in-progress) unless --force
    Set {
        /// The story (or epic) key, e.g. 1-2-account-management (v7: a ticket's 1.2)
        key: String,
        /// The new status (v6 words; alpha and v4 words are accepted)
        status: String,
        /// Who signs the change (default: user_name from the BMAD config, else git's user.name)
        #[arg(long, value_name = "AGENT")]
        by: Option<String>,
        /// Allow a backwards or skipping transition
        #[arg(long)]
        force: bool,
    },
    /// Generate or update stories.json in the stories folder: order kept, new stories
    /// appended, none dropped
    Index {
        /// Show what would change, write nothing
        #[arg(long, short = 'n')]
        dry_run: bool,
        /// Who signs the change
        #[arg(long, value_name = "AGENT")]
        by: Option<String>,
    },
}

/// Run `stories`.
pub fn cmd_stories(ctx: &Context, args: &StoriesArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo().ok();
    let root = repo
        .as_ref()
        .map(|r| r.workdir().to_path_buf())
        .unwrap_or_else(|| ctx.cwd.clone());
    let dir = args.dir.as_ref().map(|d| ctx.cwd.join(d));
    let project = Project::load(&root, dir.as_deref())?;
    let signer = |by: &Option<String>| -> String {
        by.clone()
            .or_else(|| project.layout.user_name.clone())
            .or_else(|| repo.as_ref().and_then(|r| r.config_string("user.name")))
            .unwrap_or_else(|| "user".into())
    };
    let ui = &ctx.ui;
    match &args.action {
        StoriesAction::List => {
            if ui.json() {
                ui.print_json(&project.stories);
                return Ok(exit::OK);
            }
            let rows: Vec<Vec<String>> = project
                .stories
                .iter()
                .map(|s| {
                    vec![
                        s.key.clone(),
                        s.status.to_string(),
                        s.epic.map(|e| e.to_string()).unwrap_or_else(|| "-".into()),
                        s.title.clone().unwrap_or_default(),
                        s.file.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            ui.table(&["KEY", "STATUS", "EPIC", "TITLE", "FILE"], &rows);
        }
        StoriesAction::Next => {
            let rec = project.next()?;
            if ui.json() {
                ui.print_json(&rec);
                return Ok(exit::OK);
            }
            match (&rec.story, &rec.retrospective) {
                (Some(n), _) => {
                    let view = &project.stories[n.index];
                    ui.line(format!(
                        "{}  {}  {}",
                        ui.paint(&n.key, Style::Bold),
                        n.status,
                        view.file.as_deref().unwrap_or("(no story file yet)")
                    ));
                    ui.line(format!("  why: {}", n.reason));
                }
                (None, Some(retro)) => {
                    ui.line(format!(
                        "{}  optional  (every story is done; the retrospective is still open)",
                        ui.paint(retro, Style::Bold)
                    ));
                }
                (None, None) if rec.waiting.is_empty() => {
                    ui.line("Nothing to do: every story is done.")
                }
                (None, None) => ui.line("Nothing to start: every open story waits (see below)."),
            }
            for b in &rec.waiting {
                ui.status(format!("  waiting: {b}"));
            }
        }
        StoriesAction::Order => {
            let items = project.items();
            let (order, missing) = queue::order(&items)?;
            if ui.json() {
                ui.print_json(&json!({
                    "order": order.iter().map(|i| json!({"key": items[*i].key, "status": items[*i].status, "depends_on": items[*i].depends_on})).collect::<Vec<_>>(),
                    "missing": missing,
                }));
                return Ok(exit::OK);
            }
            for (n, i) in order.iter().enumerate() {
                let it = &items[*i];
                let deps = if it.depends_on.is_empty() {
                    String::new()
                } else {
                    format!("  after {}", it.depends_on.join(", "))
                };
                ui.line(format!("{:>4}  {}  {}{deps}", n + 1, it.key, it.status));
            }
            for m in missing {
                ui.status(format!(
                    "warning: {} depends on {}, which is no story here",
                    m.story, m.dependency
                ));
            }
        }
        StoriesAction::Check => {
            let problems = project.check();
            let errors = problems.iter().filter(|p| p.severity == "error").count();
            if ui.json() {
                ui.print_json(&json!({"problems": problems, "errors": errors}));
            } else {
                for p in &problems {
                    let at = match (p.file.as_str(), p.line) {
                        ("", _) => String::new(),
                        (file, 0) => format!("{file}: "),
                        (file, line) => format!("{file}:{line}: "),
                    };
                    ui.line(format!("{}: {at}{}", p.severity, p.message));
                }
                ui.line(format!(
                    "{} stories; {errors} error(s), {} warning(s)",
                    project.stories.len(),
                    problems.len() - errors
                ));
            }
            return Ok(if errors > 0 { exit::FAILED } else { exit::OK });
        }
        StoriesAction::Set {
            key,
            status,
            by,
            force,
        } => {
            let to = Status::parse(status);
            let by = signer(by);
            let change = epic::set_story_status(
                &project,
                repo.as_ref().map(crate::session::Repo::of),
                key,
                &to,
                &by,
                *force,
            )?;
            if ui.json() {
                ui.print_json(&change);
                return Ok(exit::OK);
            }
            print_change(ui, &project, &change);
        }
        StoriesAction::Index { dry_run, by } => {
            return index(ui, &project, dir.as_deref(), &signer(by), *dry_run);
        }
    }
    Ok(exit::OK)
}

/// A status change, for a human: the story, the lines written, the files signed.
fn print_change(ui: &crate::cli::ui::Ui, project: &Project, change: &StatusChange) {
    let from = &change.from;
    ui.line(format!(
        "{}: {} → {} (signed {} at {})",
        change.key,
        if from.is_empty() { "?" } else { from },
        change.to,
        change.by,
        change.at
    ));
    if let Some(s) = &change.sprint {
        ui.line(format!(
            "  {} lines {}",
            project.layout.shown(
                &project
                    .sprint
                    .as_ref()
                    .map(|s| s.path.clone())
                    .unwrap_or_default()
            ),
            s.lines
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(epic) = &s.epic_lifted {
            ui.line(format!("  {epic} → in-progress (its first story started)"));
        }
    }
    if let Some(f) = &change.story_file {
        ui.line(format!("  {f}: Status and Change Log"));
    }
    if let Some(plan) = &change.plan {
        let what = if plan.created {
            "created, frontmatter only"
        } else {
            "its status line"
        };
        ui.line(format!("  {}: {what}", plan.file));
    }
    if let Some(f) = &change.stories_json {
        ui.line(format!("  {f}"));
    }
}

/// `stories index`: `stories.json` brought up to date with the story files.
fn index(
    ui: &crate::cli::ui::Ui,
    project: &Project,
    dir: Option<&std::path::Path>,
    by: &str,
    dry_run: bool,
) -> Result<u8, CommandError> {
    let dir = project
        .files
        .first()
        .and_then(|s| s.path.parent().map(PathBuf::from))
        .or(dir.map(PathBuf::from))
        .ok_or_else(|| {
            CommandError::failed("no story files found to index")
                .hinted("pass --dir <stories folder>")
        })?;
    let path = dir.join(stories_json::FILE_NAME);
    let mut entries = match &project.stories_json {
        Some((_, entries)) => entries.clone(),
        None if path.exists() => stories_json::load(&path)?,
        None => Vec::new(),
    };
    let found: Vec<stories_json::Found> = project
        .files
        .iter()
        .map(|s| stories_json::Found {
            name: s
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            status: s.raw_status.clone().unwrap_or_default(),
            dependencies: s.depends_on.clone(),
        })
        .collect();
    let report = stories_json::update(
        &mut entries,
        &found,
        by,
        &crate::time::Timestamp::now().rfc3339(),
    );
    if !dry_run {
        stories_json::write(&path, &entries)?;
    }
    if ui.json() {
        ui.print_json(
            &json!({"path": path, "written": !dry_run, "report": report, "entries": entries.len()}),
        );
        return Ok(exit::OK);
    }
    ui.line(format!(
        "{} {}: {} stories ({} added, {} updated, {} without a file, kept)",
        if dry_run { "Would write" } else { "Wrote" },
        project.layout.shown(&path),
        entries.len(),
        report.added.len(),
        report.updated.len(),
        report.orphaned.len()
    ));
    Ok(exit::OK)
}
