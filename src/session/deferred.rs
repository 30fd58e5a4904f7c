//! Events that cannot be journaled where they happen, kept in a file until they can.
//!
//! The reference-transaction hook runs while git holds the very ref locks a journal append
//! needs, so it cannot append. It writes the event here instead (a plain file, no lock),
//! before git returns to whoever ran it; the next journal write of the session, by any
//! git-bmad process, appends it first. So a supervisor that looks at the journal after a step
//! sees every violation the step caused, with no race against a background writer.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{Error, Result};
use super::event::{Decision, NewEvent};
use super::id::SessionId;
use super::schema::Body;
use crate::git::Repo;

/// An event on its way to the journal (a violation: git-bmad decided it, `auto`).
#[derive(Serialize, Deserialize)]
struct Deferred {
    event: String,
    detail: Value,
    step: Option<String>,
    trigger: Option<String>,
}

fn dir(repo: &Repo, id: &SessionId) -> PathBuf {
    repo.common_dir().join("bmad/deferred").join(id.as_str())
}

/// Keep `event` of session `id` for the next journal write.
pub fn defer(
    repo: &Repo,
    id: &SessionId,
    body: &Body,
    step: Option<String>,
    trigger: Option<String>,
) -> Result<()> {
    let deferred = Deferred {
        event: body.name().to_owned(),
        detail: body.detail(),
        step,
        trigger,
    };
    let bytes = serde_json::to_vec(&deferred)
        .map_err(|e| Error::InvalidInput(format!("event cannot be stored as JSON: {e}")))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = dir(repo, id).join(format!("{nanos:032}-{}.json", std::process::id()));
    crate::fs::write_atomically(&path, &bytes, None)
        .map_err(|e| Error::io("could not keep an event in", &path, e))
}

/// The policy violations a contained step's hooks and guard kept in `dir` (its walls' view
/// of this session's deferred folder), as events to journal: anything else there is the
/// step's own writing and is not taken. A violation names one of `steps`, else `otherwise`.
pub fn violations_kept_in(
    dir: &std::path::Path,
    steps: &[&str],
    otherwise: Option<String>,
) -> Vec<NewEvent> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    files.sort();
    // A violation is a few hundred bytes; a bigger file is the step's own writing.
    files
        .iter()
        .filter(|path| {
            // Not followed: a symlink there could name any file of the user's.
            std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() <= 64 << 10)
        })
        .filter_map(|path| serde_json::from_slice::<Deferred>(&std::fs::read(path).ok()?).ok())
        .filter_map(|d| match Body::from_parts(d.event, d.detail) {
            body @ Body::PolicyViolation(_) => Some(
                NewEvent::new(body)
                    .step(
                        d.step
                            .filter(|s| steps.contains(&s.as_str()))
                            .or_else(|| otherwise.clone()),
                    )
                    .decision(Some(Decision::Auto))
                    .trigger(d.trigger),
            ),
            _ => None,
        })
        .collect()
}

/// Whether another live process has claimed an event of session `id` and not yet journaled
/// it (the detached flusher a hook starts).
pub(super) fn in_flight(repo: &Repo, id: &SessionId) -> bool {
    let Ok(entries) = std::fs::read_dir(dir(repo, id)) else {
        return false;
    };
    let me = std::process::id().to_string();
    entries.filter_map(|e| e.ok()).any(|e| {
        let path = e.path();
        path.extension()
            .and_then(|x| x.to_str())
            .and_then(|x| x.strip_prefix("claimed-"))
            .is_some_and(|pid| pid != me && std::path::Path::new("/proc").join(pid).exists())
    })
}

/// Take the events waiting for session `id`, oldest first, each with the file to remove once
/// it is journaled. Each file is claimed by renaming it (`<name>.claimed-<pid>`), so two
/// processes never both take the same event; a claim whose process died before it
/// journaled the event is taken over.
pub(super) fn take(repo: &Repo, id: &SessionId) -> Vec<(NewEvent, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir(repo, id)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| match p.extension().and_then(|x| x.to_str()) {
            Some("json") => true,
            Some(x) => x
                .strip_prefix("claimed-")
                .is_some_and(|pid| !std::path::Path::new("/proc").join(pid).exists()),
            None => false,
        })
        .collect();
    paths.sort();
    let mut taken = Vec::new();
    for path in paths {
        let claimed = path.with_extension(format!("claimed-{}", std::process::id()));
        if std::fs::rename(&path, &claimed).is_err() {
            continue; // another process took it
        }
        let parsed = std::fs::read(&claimed)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Deferred>(&bytes).ok());
        match parsed {
            Some(d) => taken.push((
                NewEvent::new(Body::from_parts(d.event, d.detail))
                    .step(d.step)
                    .decision(Some(Decision::Auto))
                    .trigger(d.trigger),
                claimed,
            )),
            None => {
                let _ = std::fs::remove_file(&claimed);
            }
        }
    }
    taken
}
