//! `git bmad conformance` (hidden; `scripts/conformance.sh` calls it): run git-bmad's
//! loaders over every BMAD and spec-kit file under a directory, one line per file.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::bmad::{
    speckit,
    sprint::SprintStatus,
    stories_json,
    story::{self, Story},
    ticket_tree::{self, TicketTree},
    workflow::{self, template},
    Finding,
};
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// Load every BMAD / spec-kit file under the directories: ok, warning or error (file:line).
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// Directories to walk
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

/// Run `conformance`.
pub fn cmd_conformance(ctx: &Context, args: &ConformanceArgs) -> Result<u8, CommandError> {
    let mut files = Vec::new();
    for dir in &args.dirs {
        let dir = ctx.cwd.join(dir);
        let mut found = Vec::new();
        walk(&dir, &mut found);
        files.extend(found.into_iter().map(|f| (f, dir.clone())));
    }
    files.sort();
    let (mut loaded, mut skipped, mut errors, mut warnings) = (0, 0, 0, 0);
    for (path, root) in &files {
        let Some((kind, result)) = load(path, root) else {
            skipped += 1;
            continue;
        };
        loaded += 1;
        let shown = path
            .strip_prefix(&ctx.cwd)
            .unwrap_or(path)
            .display()
            .to_string();
        match result {
            Ok(findings) if findings.is_empty() => {
                ctx.ui.line(format!("ok       {shown} ({kind})"))
            }
            Ok(findings) => {
                for f in findings {
                    if f.severity == crate::diagnostic::Severity::Error {
                        errors += 1;
                    } else {
                        warnings += 1;
                    }
                    ctx.ui.line(format!(
                        "{:<8} {shown}:{}: {} ({kind})",
                        f.severity.as_str(),
                        f.line,
                        f.message
                    ));
                }
            }
            Err(message) => {
                errors += 1;
                ctx.ui.line(format!("error    {shown}: {message} ({kind})"));
            }
        }
    }
    ctx.ui.line(format!("{loaded} file(s) loaded, {skipped} not BMAD/spec-kit files; {errors} error(s), {warnings} warning(s)"));
    Ok(if errors > 0 { exit::FAILED } else { exit::OK })
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        if dir.is_file() {
            out.push(dir.to_path_buf());
        }
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != ".git" {
                walk(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

type Loaded = Result<Vec<Finding>, String>;

/// The loader for a file, by its name and place; `None` for files no loader claims.
fn load(path: &Path, root: &Path) -> Option<(&'static str, Loaded)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let in_dir = |d: &str| {
        path.parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == d)
    };
    if name.contains("sprint-status") && (name.ends_with(".yaml") || name.ends_with(".yml")) {
        return Some((
            "sprint status",
            SprintStatus::load(path)
                .map(|s| s.warnings)
                .map_err(|e| e.to_string()),
        ));
    }
    if name == ticket_tree::BREAKDOWN {
        return Some(("ticket tree", load_ticket_tree(path)));
    }
    if name == stories_json::FILE_NAME {
        return Some((
            "stories.json",
            stories_json::load(path)
                .map(|_| Vec::new())
                .map_err(|e| e.to_string()),
        ));
    }
    if name.ends_with(".md") && name.starts_with("tasks") && !in_dir("commands") {
        return Some((
            "spec-kit tasks",
            std::fs::read_to_string(path)
                .map(|t| {
                    let _ = speckit::phases(&t);
                    Vec::new()
                })
                .map_err(|e| e.to_string()),
        ));
    }
    let workflow_file = matches!(
        name.as_str(),
        "workflow.yaml" | "workflow.md" | "SKILL.md" | "workflow.xml"
    ) || name.starts_with("instructions.")
        || (name.starts_with("step-") && name.ends_with(".md") && in_dir("steps"));
    // A SKILL.md with neither frontmatter nor a <workflow> block is no agent skill: BMAD's
    // web bundles (`web-bundles/*/SKILL.md`) are chat protocols in plain prose, for pasting
    // into a web assistant.
    let prose_skill = name == "SKILL.md"
        && std::fs::read_to_string(path).is_ok_and(|t| !workflow::is_workflow_skill(&t));
    if workflow_file && !prose_skill {
        return Some(("workflow", load_workflow(path, root)));
    }
    if name == "template.md" {
        return Some((
            "template",
            std::fs::read_to_string(path)
                .map_err(|e| e.to_string())
                .and_then(|t| {
                    template::variables(&t)
                        .map(|_| Vec::new())
                        .map_err(|e| format!("line {}: {}", e.line, e.message))
                }),
        ));
    }
    let text = std::fs::read_to_string(path).ok();
    let story_like = name.ends_with(".md")
        && (story::is_story_name(&name)
            || in_dir("stories")
            || text
                .as_deref()
                .is_some_and(|t| first_heading(t).is_some_and(|h| h.starts_with("# Story "))));
    if story_like {
        // The text was read above; only a file that is not UTF-8 is read again (lossily).
        let loaded = match text {
            Some(text) => Ok(Story::parse(path, text)),
            None => Story::load(path).map_err(|e| e.to_string()),
        };
        return match loaded {
            Ok(story) if !story.says_it_is_a_story() && !in_dir("stories") => None,
            loaded => Some(("story", loaded.map(|s| s.findings))),
        };
    }
    if name == "feature.json" && in_dir(".specify") {
        return Some((
            "spec-kit feature",
            text.ok_or("unreadable".to_owned()).and_then(|t| {
                serde_json::from_str::<serde_json::Value>(&t)
                    .map(|_| Vec::new())
                    .map_err(|e| e.to_string())
            }),
        ));
    }
    if name == "config.yaml" && in_dir("bmm") {
        return Some((
            "BMAD module config",
            text.ok_or("unreadable".to_owned()).and_then(|t| {
                crate::config::yaml::from_str::<crate::config::yaml::Data>(&t)
                    .map(|_| Vec::new())
                    .map_err(|e| e.to_string())
            }),
        ));
    }
    None
}

/// A v7 `tickets.toml`: the tree it heads, read as `stories` reads it, its problems reported
/// here with the file each concerns. An epic's, inside an initiative, is read with the
/// initiative (its cross-epic `after` names need the epics' ids), which reports for it.
fn load_ticket_tree(path: &Path) -> Loaded {
    let folder = path.parent().ok_or("no folder")?;
    if folder
        .parent()
        .is_some_and(|up| up.join(ticket_tree::BREAKDOWN).is_file())
    {
        return Ok(Vec::new());
    }
    let tree = TicketTree::load(folder);
    Ok(tree
        .problems
        .iter()
        .map(|(file, severity, message)| {
            let file = file.strip_prefix(folder).unwrap_or(file).display();
            let message = format!("{file}: {message}");
            match *severity {
                "error" => Finding::error(&file.to_string(), 0, 0, message),
                _ => Finding::warning(&file.to_string(), 0, 0, message),
            }
        })
        .collect())
}

/// Load a workflow file the way `git bmad workflow lint` does, except that a module config
/// missing (BMAD's own sources have none) is a warning.
fn load_workflow(path: &Path, root: &Path) -> Loaded {
    let mut env = workflow::Env::new(root);
    env.lenient_config = true;
    let wf = workflow::load(path, &env).map_err(|e| e.to_string())?;
    Ok(wf
        .diagnostics
        .into_iter()
        .map(|d| {
            let message = format!(
                "{}{}",
                if d.file == wf.file {
                    String::new()
                } else {
                    format!("{}: ", d.file)
                },
                d.message
            );
            Finding {
                file: String::new(),
                message,
                ..d
            }
        })
        .collect())
}

/// The first `# ` heading of a Markdown text, frontmatter skipped.
fn first_heading(text: &str) -> Option<&str> {
    text.lines().find(|l| l.starts_with("# "))
}
