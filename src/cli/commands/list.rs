//! `git bmad list`.

use std::path::Path;

use clap::Args;
use serde::Serialize;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::ago;
use crate::cli::Context;
use crate::session::{self, Session};
use crate::time::Timestamp;

/// List all sessions of the repository, oldest first.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Show how much disk each session worktree uses (walks every worktree)
    #[arg(long)]
    pub disk: bool,
    /// List removed sessions that `git bmad restore` can bring back, instead
    #[arg(long, conflicts_with = "disk")]
    pub removed: bool,
    /// List the sessions REMOTE had at the last `git bmad sync` or `push`, instead
    #[arg(long, value_name = "REMOTE", conflicts_with_all = ["disk", "removed"])]
    pub remote: Option<String>,
}

/// A session with its worktree's disk use (`--disk`).
#[derive(Serialize)]
struct WithDisk<'a> {
    #[serde(flatten)]
    session: &'a Session,
    /// Bytes the worktree's files take on disk (allocated blocks), ignored files included.
    disk_bytes: u64,
}

/// Run `list`.
pub fn cmd_list(ctx: &Context, args: &ListArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    if args.removed {
        return list_removed(ctx, &session::list_removed(&repo)?);
    }
    if let Some(remote) = &args.remote {
        return list_remote(
            ctx,
            remote,
            &session::sync::list_remote(session::Repo::of(&repo), remote)?,
        );
    }
    let sessions = session::list(session::Repo::of(&repo))?;
    let disk: Vec<u64> = if args.disk {
        sessions.iter().map(|s| disk_use(&s.worktree)).collect()
    } else {
        Vec::new()
    };
    if ctx.ui.json() {
        if args.disk {
            let rows: Vec<WithDisk> = sessions
                .iter()
                .zip(&disk)
                .map(|(session, &disk_bytes)| WithDisk {
                    session,
                    disk_bytes,
                })
                .collect();
            ctx.ui.print_json(&rows);
        } else {
            ctx.ui.print_json(&sessions);
        }
        return Ok(exit::OK);
    }
    if sessions.is_empty() {
        ctx.ui
            .status("No sessions yet. Start one with: git bmad start <name>");
        return Ok(exit::OK);
    }
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut row = columns(s);
            if let Some(bytes) = disk.get(i) {
                row.push(human_bytes(*bytes));
            }
            row.push(format!(
                "{}{}",
                s.worktree.display(),
                match (s.worktree_exists, s.elsewhere) {
                    (_, true) => " (on another machine)",
                    (true, false) => "",
                    (false, false) => " (missing)",
                }
            ));
            row
        })
        .collect();
    let mut header = vec!["ID", "NAME", "STATUS", "STEP", "UPDATED", "BRANCH"];
    if args.disk {
        header.push("DISK");
    }
    header.push("WORKTREE");
    ctx.ui.table(&header, &rows);
    if args.disk {
        ctx.ui
            .status(format!("{} in all", human_bytes(disk.iter().sum::<u64>())));
    }
    Ok(exit::OK)
}

fn list_removed(ctx: &Context, removed: &[session::RemovedSession]) -> Result<u8, CommandError> {
    if ctx.ui.json() {
        ctx.ui.print_json(&removed);
        return Ok(exit::OK);
    }
    if removed.is_empty() {
        ctx.ui.status("No removed sessions are kept.");
        return Ok(exit::OK);
    }
    let now = Timestamp::now().secs() as i64;
    let rows: Vec<Vec<String>> = removed
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                r.name.clone(),
                ago(r.removed),
                if r.expired(now) {
                    "expired (git bmad gc deletes it)".to_owned()
                } else {
                    Timestamp::from_secs(r.keep_until.max(0) as u64).rfc3339()
                },
                r.worktree.display().to_string(),
            ]
        })
        .collect();
    ctx.ui
        .table(&["ID", "NAME", "REMOVED", "KEPT UNTIL", "WORKTREE"], &rows);
    ctx.ui
        .status("Bring one back with: git bmad restore <name or id>");
    Ok(exit::OK)
}

/// ID, NAME, STATUS, STEP, UPDATED and BRANCH of a session.
fn columns(s: &Session) -> Vec<String> {
    vec![
        s.id.to_string(),
        s.name.clone(),
        s.status.to_string(),
        s.step.clone().unwrap_or_else(|| "-".into()),
        ago(s.updated),
        s.short_branch().to_owned(),
    ]
}

fn list_remote(
    ctx: &Context,
    remote: &str,
    sessions: &[session::sync::RemoteSession],
) -> Result<u8, CommandError> {
    if ctx.ui.json() {
        ctx.ui.print_json(&sessions);
        return Ok(exit::OK);
    }
    if sessions.is_empty() {
        ctx.ui.status(format!(
            "No sessions of {remote} are known here: git bmad sync --remote {remote} fetches them"
        ));
        return Ok(exit::OK);
    }
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|r| {
            let mut row = columns(&r.session);
            row.push(if r.here { "yes" } else { "no" }.to_owned());
            row
        })
        .collect();
    ctx.ui.table(
        &["ID", "NAME", "STATUS", "STEP", "UPDATED", "BRANCH", "HERE"],
        &rows,
    );
    ctx.ui.status(format!(
        "As of the last sync; git bmad sync --remote {remote} refreshes it"
    ));
    Ok(exit::OK)
}

/// Bytes the files under `dir` take on disk (allocated blocks, so sparse files count as
/// little as they take); symlinks are not followed, and what cannot be read counts nothing.
fn disk_use(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// `1.4 MB`, `320 KB`, `12 B`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
