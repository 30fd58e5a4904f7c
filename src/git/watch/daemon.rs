//! The watcher: one process per worktree that keeps an inotify watch on each of its
//! directories and tells a snapshot which paths changed since its last question.
//!
//! It answers on a Unix socket in the user's private folder for git-bmad's sockets (hidden
//! by the walls), to processes of its own user only, one line of a bounded length a question. Each answer first reads every event
//! the kernel has queued: inotify queues an event before the write that caused it returns,
//! so whatever happened before the question is in the answer.
//!
//! It exits when its worktree is removed or moved, when another watcher already serves it,
//! after [`IDLE`] without a question, or when asked to stop. It is only ever an accelerator:
//! when it is gone, or lost events (a queue overflow), or was started after a snapshot, the
//! answer is "all", and the snapshot scans the whole worktree as it would without it.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use super::inotify::{Event, Inotify};
use super::{current_uid, lock_path, peer_uid, socket_path, Token};

/// How long the watcher waits for a question before it exits.
const IDLE: Duration = Duration::from_secs(30 * 60);
/// How many changed paths it remembers; past that it answers "all" to older tokens.
const MAX_PATHS: usize = 100_000;
/// How long one client may take to ask.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(500);

/// Watch the worktree at `root` and answer questions about it until one of the reasons in
/// the module's documentation ends it. An error means it could not start (no inotify, too
/// many watches, another watcher serving).
pub fn serve(root: &Path) -> std::io::Result<()> {
    let mut watcher = Watcher::new(root)?;
    // One watcher a worktree: the lock is held for as long as this one serves.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(root)?)?;
    if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(std::io::ErrorKind::AddrInUse.into());
    }
    // A socket file here is a killed watcher's: nobody holds the lock.
    let socket = socket_path(root)?;
    let _ = std::fs::remove_file(&socket);
    // Bound only once every directory is watched: a token handed out covers every change
    // made after it.
    let listener = UnixListener::bind(&socket)?;
    listener.set_nonblocking(true)?;
    let served = watcher.run(&listener);
    // Still ours while the lock is held: no later watcher's socket is removed.
    let _ = std::fs::remove_file(&socket);
    drop(lock);
    served
}

/// The longest question (`since <epoch> <stamp>`): a client that sends more without a
/// newline is cut off, not buffered.
const MAX_QUESTION: u64 = 128;

/// What the watcher knows.
struct Watcher {
    root: PathBuf,
    inotify: Inotify,
    /// Each watched directory, relative to the root (`""` for the root itself).
    dirs: HashMap<i32, Vec<u8>>,
    /// The same, by path, to drop a moved directory's watches.
    wds: BTreeMap<Vec<u8>, i32>,
    root_wd: i32,
    /// A random number of this watcher, so a token of another never counts.
    epoch: u64,
    /// The stamp of the next answer; events read now carry it.
    stamp: u64,
    /// Tokens older than this get "all": events after them were lost or forgotten.
    lost_after: u64,
    /// Each changed path and the stamp it last changed at.
    changed: HashMap<Vec<u8>, u64>,
    last_question: Instant,
    stop: bool,
}

impl Watcher {
    fn new(root: &Path) -> std::io::Result<Watcher> {
        let inotify = Inotify::new()?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut watcher = Watcher {
            root: root.to_path_buf(),
            inotify,
            dirs: HashMap::new(),
            wds: BTreeMap::new(),
            root_wd: -1,
            epoch: nanos ^ (u64::from(std::process::id()) << 32),
            stamp: 1,
            lost_after: 0,
            changed: HashMap::new(),
            last_question: Instant::now(),
            stop: false,
        };
        watcher.watch_tree(Vec::new())?;
        watcher.root_wd = match watcher.wds.get(&Vec::new()) {
            Some(wd) => *wd,
            None => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{} is not a directory to watch", root.display()),
                ))
            }
        };
        Ok(watcher)
    }

    fn run(&mut self, listener: &UnixListener) -> std::io::Result<()> {
        while !self.stop {
            let idle_left = IDLE.saturating_sub(self.last_question.elapsed());
            if idle_left.is_zero() {
                return Ok(());
            }
            let mut fds = [
                PollFd::new(&self.inotify, PollFlags::IN),
                PollFd::new(listener, PollFlags::IN),
            ];
            let timeout = Timespec::try_from(idle_left).unwrap_or(Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            });
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let (inotify_ready, listener_ready) =
                (!fds[0].revents().is_empty(), !fds[1].revents().is_empty());
            if inotify_ready {
                self.drain()?;
            }
            if listener_ready {
                match listener.accept() {
                    Ok((stream, _)) => self.answer(stream),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Read and record every queued event.
    fn drain(&mut self) -> std::io::Result<()> {
        for event in self.inotify.read()? {
            self.record(event);
        }
        Ok(())
    }

    fn record(&mut self, event: Event) {
        if event.mask & libc::IN_Q_OVERFLOW != 0 {
            self.forget();
            return;
        }
        if event.mask & libc::IN_IGNORED != 0 {
            if let Some(dir) = self.dirs.remove(&event.wd) {
                self.wds.remove(&dir);
            }
            if event.wd == self.root_wd {
                self.stop = true;
            }
            return;
        }
        if event.wd == self.root_wd && event.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0
        {
            // The worktree is gone or elsewhere: every path this watcher knows is wrong.
            self.stop = true;
            return;
        }
        let Some(dir) = self.dirs.get(&event.wd) else {
            return;
        };
        if event.name.is_empty() || event.name == b".git" {
            return;
        }
        let mut path = dir.clone();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(&event.name);
        if event.mask & libc::IN_ISDIR != 0 {
            if event.mask & (libc::IN_DELETE | libc::IN_MOVED_FROM) != 0 {
                self.unwatch_tree(&path);
            } else if event.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0 {
                if self.watch_tree(path.clone()).is_err() {
                    // A directory it cannot watch (the user's inotify watches ran out): it
                    // would be blind there from now on, so it stops. Snapshots scan until a
                    // watcher can see everything again.
                    tracing::warn!(
                        dir = %String::from_utf8_lossy(&path),
                        "the watcher could not watch a new directory: it stops, and snapshots scan"
                    );
                    self.forget();
                    self.stop = true;
                    return;
                }
            } else {
                // A directory's own mode or times mean nothing to a snapshot.
                return;
            }
        }
        self.changed.insert(path, self.stamp);
        if self.changed.len() > MAX_PATHS {
            self.forget();
        }
    }

    /// Lose what was recorded: every token handed out so far gets "all".
    fn forget(&mut self) {
        self.changed.clear();
        self.lost_after = self.stamp;
    }

    /// Watch the directory `rel` and every directory under it but `.git`.
    fn watch_tree(&mut self, rel: Vec<u8>) -> std::io::Result<()> {
        let mut pending = vec![rel];
        while let Some(rel) = pending.pop() {
            let full = self.root.join(std::ffi::OsStr::from_bytes(&rel));
            let wd = match self.inotify.watch(&full) {
                Ok(wd) => wd,
                // Gone or no longer a directory: its parent's events say so.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                    continue
                }
                Err(e) => return Err(e),
            };
            if let Some(old) = self.dirs.insert(wd, rel.clone()) {
                self.wds.remove(&old);
            }
            self.wds.insert(rel.clone(), wd);
            let Ok(entries) = std::fs::read_dir(&full) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir && name != ".git" {
                    let mut sub = rel.clone();
                    if !sub.is_empty() {
                        sub.push(b'/');
                    }
                    sub.extend_from_slice(name.as_bytes());
                    pending.push(sub);
                }
            }
        }
        Ok(())
    }

    /// Drop the watches of the directory `rel` and of every directory under it.
    fn unwatch_tree(&mut self, rel: &[u8]) {
        let mut under = rel.to_vec();
        under.push(b'/');
        let gone: Vec<(Vec<u8>, i32)> = self
            .wds
            .range(rel.to_vec()..)
            .take_while(|(path, _)| path.starts_with(rel))
            .filter(|(path, _)| path.as_slice() == rel || path.starts_with(&under))
            .map(|(path, wd)| (path.clone(), *wd))
            .collect();
        for (path, wd) in gone {
            self.inotify.unwatch(wd);
            self.wds.remove(&path);
            self.dirs.remove(&wd);
        }
    }

    /// Answer one question: `since <epoch> <stamp>` (or `since -`) gets a new token and the
    /// paths changed since, NUL-terminated; `stop` ends the watcher.
    fn answer(&mut self, stream: UnixStream) {
        let mut reader = match stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_read_timeout(Some(CLIENT_TIMEOUT)))
            .and_then(|()| stream.set_write_timeout(Some(CLIENT_TIMEOUT)))
        {
            Ok(()) => std::io::BufReader::new(&stream),
            Err(_) => return,
        };
        // Only its own user may ask: the paths of a worktree are its owner's business.
        if peer_uid(&stream) != Some(current_uid()) {
            return;
        }
        let mut question = String::new();
        if std::io::Read::take(&mut reader, MAX_QUESTION)
            .read_line(&mut question)
            .is_err()
        {
            return;
        }
        self.last_question = Instant::now();
        let question = question.trim();
        if question == "stop" {
            self.stop = true;
            return;
        }
        let Some(since) = question.strip_prefix("since ") else {
            return;
        };
        if self.drain().is_err() {
            self.forget();
        }
        if self.stop {
            // The worktree went while the question waited: no answer is right any more.
            return;
        }
        let token = Token {
            epoch: self.epoch,
            stamp: self.stamp,
        };
        self.stamp += 1;
        let mut reply = format!("token {} {} ", token.epoch, token.stamp).into_bytes();
        match Token::parse(since).filter(|t| {
            t.epoch == self.epoch && t.stamp >= self.lost_after && t.stamp < token.stamp
        }) {
            Some(since) => {
                reply.extend_from_slice(b"paths\n");
                // What changed up to `since` was answered: forget it, and answer "all" to
                // any older token (only a lost token file could bring one).
                self.changed.retain(|_, stamp| *stamp > since.stamp);
                self.lost_after = self.lost_after.max(since.stamp);
                for path in self.changed.keys() {
                    reply.extend_from_slice(path);
                    reply.push(0);
                }
            }
            None => reply.extend_from_slice(b"all\n"),
        }
        let _ = (&stream).write_all(&reply);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Ask `watcher` one question through a socket pair; the answer's header and paths.
    fn ask(watcher: &mut Watcher, question: &str) -> (String, Vec<String>) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        (&theirs).write_all(question.as_bytes()).unwrap();
        watcher.answer(ours);
        let mut reply = Vec::new();
        (&theirs).read_to_end(&mut reply).unwrap();
        let text = String::from_utf8(reply).unwrap();
        let (header, body) = text.split_once('\n').unwrap();
        let mut paths: Vec<String> = body
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        paths.sort();
        (header.to_owned(), paths)
    }

    #[test]
    fn answers_hold_what_changed_since_the_token_and_all_when_unsure() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/.git")).unwrap();
        std::fs::write(dir.path().join("a/b.txt"), "b").unwrap();
        let mut watcher = Watcher::new(dir.path()).unwrap();
        let epoch = watcher.epoch;
        let (first, _) = ask(&mut watcher, "since -\n");
        assert_eq!(first, format!("token {epoch} 1 all"));

        std::fs::write(dir.path().join("a/b.txt"), "changed").unwrap();
        std::fs::write(dir.path().join("a/.git/HEAD"), "not ours").unwrap();
        std::fs::create_dir(dir.path().join("n")).unwrap();
        std::fs::write(dir.path().join("n/x"), "x").unwrap();
        let (second, paths) = ask(&mut watcher, &format!("since {epoch} 1\n"));
        assert_eq!(second, format!("token {epoch} 2 paths"));
        // The new directory is named whole: the snapshot scans it.
        assert_eq!(paths, ["a/b.txt", "n"]);

        // Watched since: its files are named one by one.
        std::fs::write(dir.path().join("n/y"), "y").unwrap();
        let (_, paths) = ask(&mut watcher, &format!("since {epoch} 2\n"));
        assert_eq!(paths, ["n/y"]);
        // Once a newer token was answered, what came before it is forgotten.
        let (older, _) = ask(&mut watcher, &format!("since {epoch} 1\n"));
        assert!(older.ends_with(" all"), "an older token: {older}");

        let (other, _) = ask(&mut watcher, &format!("since {} 4\n", epoch ^ 1));
        assert!(other.ends_with(" all"), "another watcher's token: {other}");
        watcher.forget();
        let (lost, _) = ask(&mut watcher, &format!("since {epoch} 5\n"));
        assert!(
            lost.ends_with(" all"),
            "a token from before lost events: {lost}"
        );
        let (_, paths) = ask(&mut watcher, &format!("since {epoch} 6\n"));
        assert!(paths.is_empty());
        let (future, _) = ask(&mut watcher, &format!("since {epoch} 99\n"));
        assert!(
            future.ends_with(" all"),
            "a token never handed out: {future}"
        );

        assert!(!watcher.stop);
        ask_stop(&mut watcher);
        assert!(watcher.stop);
    }

    /// A new directory it cannot watch (here a path longer than the kernel takes, as a
    /// spent watch limit refuses one) stops the watcher with no answer: the snapshot asking
    /// scans, and so does every later one until a new watcher sees everything.
    #[test]
    fn a_directory_it_cannot_watch_stops_it_rather_than_leave_it_blind() {
        use rustix::fs::{mkdirat, openat, Mode, OFlags};
        let dir = tempfile::tempdir().unwrap();
        let mut watcher = Watcher::new(dir.path()).unwrap();
        let epoch = watcher.epoch;
        ask(&mut watcher, "since -\n");
        // Created relative to each parent: no single call sees the whole path.
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut fd = openat(rustix::fs::CWD, dir.path(), flags, Mode::empty()).unwrap();
        let name = "d".repeat(200);
        for _ in 0..25 {
            mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            fd = openat(&fd, name.as_str(), flags, Mode::empty()).unwrap();
        }
        let (ours, theirs) = UnixStream::pair().unwrap();
        (&theirs)
            .write_all(format!("since {epoch} 1\n").as_bytes())
            .unwrap();
        watcher.answer(ours);
        let mut reply = Vec::new();
        (&theirs).read_to_end(&mut reply).unwrap();
        assert!(
            reply.is_empty(),
            "answered: {}",
            String::from_utf8_lossy(&reply)
        );
        assert!(watcher.stop);
    }

    fn ask_stop(watcher: &mut Watcher) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        (&theirs).write_all(b"stop\n").unwrap();
        watcher.answer(ours);
    }

    #[test]
    fn a_directory_moved_away_stops_being_watched_and_one_moved_in_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("d/e")).unwrap();
        let mut watcher = Watcher::new(dir.path()).unwrap();
        let epoch = watcher.epoch;
        ask(&mut watcher, "since -\n");
        std::fs::rename(dir.path().join("d"), outside.path().join("d")).unwrap();
        let (_, paths) = ask(&mut watcher, &format!("since {epoch} 1\n"));
        assert_eq!(paths, ["d"]);
        // Changes out there are not this worktree's.
        std::fs::write(outside.path().join("d/e/f"), "f").unwrap();
        let (_, paths) = ask(&mut watcher, &format!("since {epoch} 2\n"));
        assert!(paths.is_empty(), "{paths:?}");
        std::fs::rename(outside.path().join("d"), dir.path().join("back")).unwrap();
        std::fs::write(dir.path().join("back/e/g"), "g").unwrap();
        let (_, paths) = ask(&mut watcher, &format!("since {epoch} 3\n"));
        assert_eq!(paths, ["back"]);
        std::fs::write(dir.path().join("back/e/h"), "h").unwrap();
        let (_, paths) = ask(&mut watcher, &format!("since {epoch} 4\n"));
        assert_eq!(paths, ["back/e/h"]);
    }
}
