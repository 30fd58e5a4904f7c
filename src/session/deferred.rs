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
    // Contained, git-bmad listens for it: sent there, the step cannot take it back.
    if report(&dir(repo, id), &bytes) {
        return Ok(());
    }
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
        .filter_map(|d| violation(d, steps, &otherwise))
        .collect()
}

/// A kept record as the event to journal, when it is a policy violation: of the step it
/// names when that is one of `steps`, else of `otherwise`.
fn violation(d: Deferred, steps: &[&str], otherwise: &Option<String>) -> Option<NewEvent> {
    match Body::from_parts(d.event, d.detail) {
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
    }
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

/// Where, in a session's deferred folder, a contained step's hooks report what they refused
/// (see [`ReportChannel`]).
pub use crate::git::REPORT_SOCKET;

/// How many records a step may report; past that its reports are a flood, which is named.
const MAX_REPORTS: usize = 10_000;

/// How long git-bmad waits for one report's bytes.
const REPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(200);

/// How long closing the channel goes on reading reports still waiting.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The channel a contained step's hooks report what they refused through: a socket git-bmad
/// listens on for the step's length, shown in the walls where the hooks look, mounted over
/// so that the step can neither remove nor replace it. What came through is in git-bmad's
/// memory when the step ends: the step can add to it (which only puts more against its
/// own name), never take from it, as it could with files in a folder it may write.
pub struct ReportChannel {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Reports>>,
}

/// What came through a [`ReportChannel`].
#[derive(Default)]
struct Reports {
    records: Vec<Vec<u8>>,
    /// Why some were not read (a flood, a stall at the end), for the journal.
    lost: Option<String>,
}

impl ReportChannel {
    /// Listen at `dir`/[`REPORT_SOCKET`] (a socket there before is replaced).
    pub fn listen(dir: &std::path::Path) -> std::io::Result<ReportChannel> {
        use std::sync::atomic::Ordering;
        let _ = std::fs::remove_file(dir.join(REPORT_SOCKET));
        let (_dir, path) = socket_path(dir)?;
        let listener = std::os::unix::net::UnixListener::bind(&path)?;
        listener.set_nonblocking(true)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bmad-reports".into())
            .spawn(move || {
                let mut reports = Reports::default();
                let mut drain_until = None;
                loop {
                    match listener.accept() {
                        Ok((stream, _)) => read_report(&stream, &mut reports),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            if drain_until.is_some() {
                                break;
                            }
                            let mut fds = [rustix::event::PollFd::new(
                                &listener,
                                rustix::event::PollFlags::IN,
                            )];
                            let wait = rustix::time::Timespec {
                                tv_sec: 0,
                                tv_nsec: 50_000_000,
                            };
                            let _ = rustix::event::poll(&mut fds, Some(&wait));
                        }
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                    }
                    if stopping.load(Ordering::SeqCst) {
                        let until = *drain_until
                            .get_or_insert_with(|| std::time::Instant::now() + DRAIN_LIMIT);
                        if std::time::Instant::now() >= until {
                            reports.lost = Some(
                                "reports were still waiting when the step ended: the step kept \
                                 its hooks' report channel busy"
                                    .into(),
                            );
                            break;
                        }
                    }
                }
                reports
            })?;
        Ok(ReportChannel {
            stop,
            thread: Some(thread),
        })
    }

    /// Stop listening, once what waits is read; the policy violations reported, as events
    /// to journal, a violation naming one of `steps`, else `otherwise` (as
    /// [`violations_kept_in`]), and why some reports were not read, if some were not.
    pub fn close(
        mut self,
        steps: &[&str],
        otherwise: Option<String>,
    ) -> (Vec<NewEvent>, Option<String>) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let reports = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let events = reports
            .records
            .iter()
            .filter_map(|bytes| serde_json::from_slice::<Deferred>(bytes).ok())
            .filter_map(|d| violation(d, steps, &otherwise))
            .collect();
        (events, reports.lost)
    }
}

impl Drop for ReportChannel {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Read one report from `stream`: a record of at most 64 KiB, from this user's processes.
fn read_report(stream: &std::os::unix::net::UnixStream, reports: &mut Reports) {
    use std::io::Read;
    let ours = rustix::net::sockopt::socket_peercred(stream)
        .is_ok_and(|c| c.uid == rustix::process::getuid());
    if !ours || stream.set_nonblocking(false).is_err() {
        return;
    }
    let _ = stream.set_read_timeout(Some(REPORT_TIMEOUT));
    let mut bytes = Vec::new();
    if stream.take(64 << 10).read_to_end(&mut bytes).is_err() || bytes.is_empty() {
        return;
    }
    if reports.records.len() >= MAX_REPORTS {
        reports.lost = Some(format!(
            "the step sent more than {MAX_REPORTS} reports: the rest were not read"
        ));
        return;
    }
    reports.records.push(bytes);
}

/// Send a record through the report channel in `dir`, when one listens there.
fn report(dir: &std::path::Path, bytes: &[u8]) -> bool {
    use std::io::Write;
    let Ok((_dir, path)) = socket_path(dir) else {
        return false;
    };
    let Ok(mut stream) = std::os::unix::net::UnixStream::connect(&path) else {
        return false;
    };
    let _ = stream.set_write_timeout(Some(std::time::Duration::from_secs(2)));
    stream.write_all(bytes).is_ok()
}

/// The report socket of `dir` by a path that fits a socket address whatever `dir`'s length
/// (a socket's path may not pass 107 bytes): through this process's handle on `dir`, kept
/// open while the path is used.
fn socket_path(dir: &std::path::Path) -> std::io::Result<(rustix::fd::OwnedFd, PathBuf)> {
    use rustix::fd::AsRawFd;
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let path = PathBuf::from(format!("/proc/self/fd/{}/{REPORT_SOCKET}", fd.as_raw_fd()));
    Ok((fd, path))
}
