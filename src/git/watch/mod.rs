//! The change feed: which paths of a worktree changed since its last snapshot, told by a
//! watcher process (see [`daemon`]) so that a snapshot reads those and nothing else.
//!
//! Why: without it a snapshot must `lstat` every file of the worktree to find the few that
//! changed (git's fsmonitor daemon, which does this job for `git status`, does not exist on
//! Linux). With it a checkpoint costs what changed, not the repository's size.
//!
//! A snapshot asks the watcher for the paths changed since the token saved with the last
//! snapshot (in the snapshot cache), and saves the new token with its own. Anything unsure
//! gets "all", and the snapshot scans the whole worktree as it would without a watcher: no
//! watcher running (the snapshot starts one for next time), a token of another watcher or of
//! another snapshot cache, lost events, a changed `.gitignore`, `info/exclude` or
//! `core.excludesFile`, a file the last snapshot refused (it must be vetted again), a
//! changed file with other names (a hard link: the write shows under one name only). A
//! skip-worktree mark set or cleared changes the index, not the worktree: the snapshot
//! compares marks with the index itself.
//!
//! What inotify cannot see, the feed cannot either: a file changed through a memory mapping
//! or through a hard link outside the worktree, or by another machine on a network
//! filesystem. `git config bmad.watch false` turns the feed off for such a repository.

#[cfg(target_os = "linux")]
mod daemon;
#[cfg(target_os = "linux")]
mod inotify;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::feed_setting::FeedSetting;
use super::repo::Repo;

/// Where a watcher that could not start says why, in the worktree's git dir: no snapshot
/// starts another for [`RETRY_AFTER`] (each would walk the worktree to fail again).
const FAILED_FILE: &str = "bmad-watch-failed";
const RETRY_AFTER: Duration = Duration::from_secs(60 * 60);
/// How long a snapshot waits for the watcher's answer before it scans everything.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(1);
/// How long `start` waits for the watcher it started to watch the whole worktree before it
/// goes on without a token.
const READY_WAIT: Duration = Duration::from_secs(1);

/// A point in a watcher's history: the watcher (`epoch`) and the answer (`stamp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Token {
    pub epoch: u64,
    pub stamp: u64,
}

impl Token {
    /// The token as the snapshot cache keeps it: `<epoch>:<stamp>:<fingerprint>`, with the
    /// fingerprint of the ignore rules outside the worktree (which the watcher cannot see)
    /// when it was handed out.
    fn field(&self, fingerprint: &str) -> String {
        format!("{}:{}:{fingerprint}", self.epoch, self.stamp)
    }

    /// The token of a [`Self::field`], if the ignore rules outside the worktree are still
    /// those it was saved with (`fingerprint`).
    fn from_field(field: &str, fingerprint: &str) -> Option<Token> {
        let mut parts = field.split(':');
        let token = Token {
            epoch: parts.next()?.parse().ok()?,
            stamp: parts.next()?.parse().ok()?,
        };
        let saved = parts.next()?;
        (parts.next().is_none() && saved == fingerprint).then_some(token)
    }

    /// `<epoch> <stamp>`.
    fn parse(text: &str) -> Option<Token> {
        let mut fields = text.split_whitespace();
        let token = Token {
            epoch: fields.next()?.parse().ok()?,
            stamp: fields.next()?.parse().ok()?,
        };
        fields.next().is_none().then_some(token)
    }
}

/// What the feed says before one snapshot.
#[derive(Debug, Default)]
pub(super) struct Feed {
    /// The watcher's new token, if one answered.
    token: Option<Token>,
    /// The paths (files or directories, relative to the worktree root) changed since the
    /// given token; `None`: anything may have changed.
    pub changed: Option<Vec<String>>,
    /// The ignore rules outside the worktree as the question found them.
    fingerprint: String,
}

impl Feed {
    /// What the snapshot cache keeps for the next snapshot to ask with, if anything.
    pub fn token_field(&self) -> Option<String> {
        self.token.map(|t| t.field(&self.fingerprint))
    }
}

/// The executable that runs the watcher (`<exe> watch <worktree> --failed <file>`); set by
/// the command line, so a library user (or a test harness) never starts one by accident.
static WATCHER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Let snapshots start a watcher where none runs, with `exe`.
pub fn enable_watcher(exe: PathBuf) {
    let _ = WATCHER_EXE.set(exe);
}

impl FeedSetting {
    /// The setting of `repo`: the watcher where snapshots may use one (Linux, a watcher
    /// executable set by the command line, `bmad.watch` not false), else none.
    pub fn of(repo: &Repo) -> FeedSetting {
        let wanted = repo
            .gix()
            .config_snapshot()
            .boolean("bmad.watch")
            .unwrap_or(true);
        if cfg!(target_os = "linux") && WATCHER_EXE.get().is_some() && wanted {
            FeedSetting::Watcher
        } else {
            FeedSetting::None
        }
    }

    /// What changed since the token the last snapshot saved (as [`Feed::token_field`] gave
    /// it).
    pub(super) fn ask(&self, repo: &Repo, saved: Option<&str>) -> Feed {
        match self {
            FeedSetting::Watcher => ask_watcher(repo, saved),
            FeedSetting::Test { changed } => Feed {
                changed: Some(changed.clone()),
                ..Feed::default()
            },
            FeedSetting::None => Feed::default(),
        }
    }
}

impl Repo {
    /// This handle with its snapshots told what changed by `feed` instead of the
    /// repository's setting.
    pub fn with_feed(mut self, feed: FeedSetting) -> Repo {
        self.feed = Some(feed);
        self
    }

    /// The change feed this handle's snapshots ask.
    pub fn feed_setting(&self) -> FeedSetting {
        self.feed.clone().unwrap_or_else(|| FeedSetting::of(self))
    }

    /// Why this worktree has no change feed, when a watcher failed to start here lately:
    /// until one starts, every snapshot scans the whole worktree (exact, only slower).
    pub fn feed_off_reason(&self) -> Option<String> {
        let failed = self.git_dir().join(FAILED_FILE);
        if !failed_lately(&failed) {
            return None;
        }
        let reason = crate::fs::read_private(&failed).ok()?;
        let reason = String::from_utf8_lossy(&reason);
        Some(reason.trim().to_owned()).filter(|r| !r.is_empty())
    }

    /// Start this worktree's watcher now, if snapshots may use one and none runs, and give
    /// it up to [`READY_WAIT`] to answer, so that the first snapshot already gets a token
    /// and the second reads only what changed.
    pub fn start_watching(&self) {
        if self.feed_setting() != FeedSetting::Watcher {
            return;
        }
        let (feed, started) = ask_or_start_watcher(self, None);
        if feed.token.is_some() || !started {
            return;
        }
        // Asked directly, not through `ask_watcher`: a watcher still walking the worktree
        // does not answer yet, and a second one must not be started for that.
        let failed = self.git_dir().join(FAILED_FILE);
        let waiting = std::time::Instant::now();
        while waiting.elapsed() < READY_WAIT && !failed_lately(&failed) {
            std::thread::sleep(Duration::from_millis(2));
            if question(self.workdir(), None).is_ok() {
                return;
            }
        }
    }
}

/// Ask the worktree's watcher what changed since `saved`; start a watcher if none answers.
fn ask_watcher(repo: &Repo, saved: Option<&str>) -> Feed {
    ask_or_start_watcher(repo, saved).0
}

/// [`ask_watcher`], and whether it started a watcher.
fn ask_or_start_watcher(repo: &Repo, saved: Option<&str>) -> (Feed, bool) {
    let fingerprint = ignore_fingerprint(repo);
    let since = saved.and_then(|field| Token::from_field(field, &fingerprint));
    // In walls the watcher is out of reach, by design: scan, and start none there.
    if crate::env::Var::Contained.is_set() {
        return (Feed::default(), false);
    }
    // The workdir is canonical: the watcher's socket is named by the same path.
    let root = repo.workdir();
    match question(root, since) {
        Ok(feed) => (
            Feed {
                fingerprint,
                ..feed
            },
            false,
        ),
        Err(e) => {
            tracing::debug!("change feed of {}: {e}", root.display());
            let failed = repo.git_dir().join(FAILED_FILE);
            let none_runs = matches!(e.raw_os_error(), Some(libc::ECONNREFUSED | libc::ENOENT));
            let started = none_runs && !failed_lately(&failed) && start_watcher(root, &failed);
            (Feed::default(), started)
        }
    }
}

/// Whether a watcher failed to start less than [`RETRY_AFTER`] ago.
fn failed_lately(marker: &Path) -> bool {
    std::fs::metadata(marker)
        .and_then(|m| m.modified())
        .is_ok_and(|at| at.elapsed().is_ok_and(|age| age < RETRY_AFTER))
}

/// Watch the worktree at `root` until the watcher ends (see [`daemon`]). If it cannot start
/// (no inotify, too many directories for the watch limit), the reason goes to `failed`, so
/// that snapshots stop starting watchers for a while; another watcher already serving the
/// worktree is no failure.
#[cfg(target_os = "linux")]
pub fn run_watcher(root: &Path, failed: Option<&Path>) -> std::io::Result<()> {
    let served = daemon::serve(root);
    if let (Err(e), Some(failed)) = (&served, failed) {
        if e.kind() != std::io::ErrorKind::AddrInUse {
            let reason = match e.raw_os_error() {
                Some(libc::ENOSPC) => format!("the user's inotify watches are spent, raise fs.inotify.max_user_watches ({e})"),
                Some(libc::EMFILE) => format!("the user's inotify instances are spent, raise fs.inotify.max_user_instances ({e})"),
                _ => e.to_string(),
            };
            let _ = crate::fs::replace_unsynced(failed, format!("{reason}\n").as_bytes());
        }
    }
    served
}

fn question(root: &Path, since: Option<Token>) -> std::io::Result<Feed> {
    let stream = connect(root)?;
    if peer_uid(&stream) != Some(current_uid()) {
        return Err(std::io::Error::other(
            "the watcher's socket belongs to another user",
        ));
    }
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
    let line = match since {
        Some(t) => format!("since {} {}\n", t.epoch, t.stamp),
        None => "since -\n".to_owned(),
    };
    (&stream).write_all(line.as_bytes())?;
    let mut reply = Vec::new();
    (&stream).read_to_end(&mut reply)?;
    parse_answer(&reply).ok_or_else(|| std::io::Error::other("the watcher's answer is malformed"))
}

/// `token <epoch> <stamp> all\n`, or `token <epoch> <stamp> paths\n` and NUL-terminated
/// paths. A `.gitignore` among the paths, or a path that is not UTF-8, makes it "all": the
/// first can bring back files nobody touched, the second a snapshot never holds.
fn parse_answer(reply: &[u8]) -> Option<Feed> {
    let newline = reply.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&reply[..newline]).ok()?;
    let rest = header.strip_prefix("token ")?;
    let (token, kind) = rest.rsplit_once(' ')?;
    let token = Some(Token::parse(token)?);
    let body = &reply[newline + 1..];
    match kind {
        "all" => Some(Feed {
            token,
            ..Feed::default()
        }),
        "paths" => {
            let mut paths = Vec::new();
            for raw in body.split(|b| *b == 0).filter(|p| !p.is_empty()) {
                let Ok(path) = std::str::from_utf8(raw) else {
                    return Some(Feed {
                        token,
                        ..Feed::default()
                    });
                };
                if path.rsplit('/').next() == Some(".gitignore") {
                    return Some(Feed {
                        token,
                        ..Feed::default()
                    });
                }
                paths.push(path.to_owned());
            }
            Some(Feed {
                token,
                changed: Some(paths),
                ..Feed::default()
            })
        }
        _ => None,
    }
}

#[cfg(target_os = "linux")]
fn connect(root: &Path) -> std::io::Result<UnixStream> {
    UnixStream::connect(socket_path(root)?)
}

#[cfg(not(target_os = "linux"))]
fn connect(_root: &Path) -> std::io::Result<UnixStream> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// The watcher's socket: a file named by the worktree in the user's private folder for
/// git-bmad's sockets ([`crate::env::runtime_dir`]), where no contained step can connect to
/// it or answer in its place (an abstract socket is shared by every process of the network
/// namespace, walls and all).
#[cfg(target_os = "linux")]
fn socket_path(root: &Path) -> std::io::Result<PathBuf> {
    Ok(private_dir()?.join(format!("{}.sock", worktree_name(root))))
}

/// The file a watcher holds locked for as long as it serves `root`: one watcher per
/// worktree, and a socket file left by a killed one is known to be stale.
#[cfg(target_os = "linux")]
fn lock_path(root: &Path) -> std::io::Result<PathBuf> {
    Ok(private_dir()?.join(format!("{}.lock", worktree_name(root))))
}

fn worktree_name(root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha256::digest(root.as_os_str().as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The user's folder for git-bmad's sockets, made if missing; refused unless it is a
/// folder of the user's own that nobody else may enter (in `/tmp`, another user could have
/// made it first to answer in the watcher's place).
#[cfg(target_os = "linux")]
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = crate::env::runtime_dir(current_uid());
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != current_uid() || meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a private folder of this user's",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Start a watcher for `root` in a session of its own (a kill of this command's process
/// group leaves it be), with nothing of this process open but what it asks for. Whether
/// one was started.
fn start_watcher(root: &Path, failed: &Path) -> bool {
    use std::os::unix::process::CommandExt;
    let Some(exe) = WATCHER_EXE.get() else {
        return false;
    };
    let mut command = std::process::Command::new(exe);
    command
        .arg("watch")
        .arg(root)
        .arg("--failed")
        .arg(failed)
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid and close_range are async-signal-safe; nothing is allocated.
    unsafe {
        command.pre_exec(|| {
            let _ = rustix::process::setsid();
            // Descriptors this process inherited without close-on-exec stay with it.
            const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
    match command.spawn() {
        // Reaped when it exits, if this process still runs then.
        Ok(mut child) => {
            // With no thread to be had, it stays a zombie until this process exits: no panic.
            let _ = std::thread::Builder::new().spawn(move || child.wait());
            true
        }
        Err(e) => {
            tracing::debug!("could not start the watcher of {}: {e}", root.display());
            false
        }
    }
}

/// What the ignore rules outside the worktree are now: `info/exclude` and the excludes
/// file (as configured, and git's default place), by size, time and inode. The watcher
/// sees only the worktree, so a change there must make the next snapshot scan everything.
fn ignore_fingerprint(repo: &Repo) -> String {
    use std::os::unix::fs::MetadataExt;
    let configured = repo
        .gix()
        .config_snapshot()
        .string("core.excludesFile")
        .map(|s| s.to_string());
    let home = crate::env::Var::Home.path();
    let xdg = crate::env::config_home();
    let mut files = vec![repo.common_dir().join("info/exclude")];
    if let Some(xdg) = xdg {
        files.push(xdg.join("git/ignore"));
    }
    if let Some(configured) = &configured {
        match (configured.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => files.push(home.join(rest)),
            _ => files.push(PathBuf::from(configured)),
        }
    }
    let mut hasher = Sha256::new();
    hasher.update(configured.unwrap_or_default().as_bytes());
    for file in files {
        let stamp = match std::fs::metadata(&file) {
            Ok(m) => format!("{} {} {} {}\n", m.len(), m.mtime(), m.mtime_nsec(), m.ino()),
            Err(_) => "-\n".to_owned(),
        };
        hasher.update(stamp.as_bytes());
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The user id of the process at the other end of `stream`.
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    rustix::net::sockopt::socket_peercred(stream)
        .ok()
        .map(|cred| cred.uid.as_raw())
}

fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(reply: &[u8]) -> Option<(Option<Token>, Option<Vec<String>>)> {
        parse_answer(reply).map(|f| (f.token, f.changed))
    }

    #[test]
    fn answers_name_the_paths_or_say_all() {
        let token = Some(Token { epoch: 7, stamp: 3 });
        assert_eq!(
            feed(b"token 7 3 paths\nsrc/a.txt\0new dir\0"),
            Some((token, Some(vec!["src/a.txt".into(), "new dir".into()])))
        );
        assert_eq!(feed(b"token 7 3 paths\n"), Some((token, Some(vec![]))));
        assert_eq!(feed(b"token 7 3 all\n"), Some((token, None)));
    }

    #[test]
    fn what_could_bring_back_untouched_files_or_cannot_be_a_path_means_all() {
        let token = Some(Token { epoch: 7, stamp: 3 });
        assert_eq!(
            feed(b"token 7 3 paths\nsrc/a.txt\0docs/.gitignore\0"),
            Some((token, None))
        );
        assert_eq!(feed(b"token 7 3 paths\nbad-\xff\0"), Some((token, None)));
    }

    #[test]
    fn a_watcher_that_cannot_start_says_why_and_one_already_serving_is_no_failure() {
        let dir = tempfile::tempdir().unwrap();
        let failed = dir.path().join("failed");
        let gone = dir.path().join("no such worktree");
        assert!(run_watcher(&gone, Some(&failed)).is_err());
        assert!(failed_lately(&failed), "the reason is written");
        std::fs::remove_file(&failed).unwrap();

        let root = std::fs::canonicalize(dir.path()).unwrap();
        let serving = {
            let root = root.clone();
            std::thread::spawn(move || run_watcher(&root, None))
        };
        let mut answered = None;
        for _ in 0..100 {
            answered = question(&root, None).ok();
            if answered.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let token = answered.expect("the watcher answers").token;
        assert!(token.is_some());
        let second = run_watcher(&root, Some(&failed));
        assert_eq!(
            second.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::AddrInUse)
        );
        assert!(!failed.exists(), "another watcher serving is no failure");
        let stream = connect(&root).unwrap();
        (&stream).write_all(b"stop\n").unwrap();
        serving.join().unwrap().unwrap();
    }

    #[test]
    fn a_question_without_end_is_cut_off_and_the_watcher_serves_on() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let serving = {
            let root = root.clone();
            std::thread::spawn(move || run_watcher(&root, None))
        };
        let mut answered = false;
        for _ in 0..100 {
            answered = question(&root, None).is_ok();
            if answered {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(answered, "the watcher answers");
        // Its socket is a file of the user's private folder, not an abstract name.
        let socket = socket_path(&root).unwrap();
        assert!(socket.starts_with(crate::env::runtime_dir(current_uid())));
        // A client that streams a question with no newline is cut off after a bounded read;
        // its writes then fail instead of growing the watcher.
        let stream = connect(&root).unwrap();
        stream
            .set_write_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let chunk = vec![b'x'; 64 << 10];
        let mut sent = 0usize;
        while sent < 64 << 20 {
            match (&stream).write(&chunk) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
        assert!(
            sent < 64 << 20,
            "the watcher read {sent} bytes of one question"
        );
        assert!(question(&root, None).is_ok(), "the watcher still serves");
        let stream = connect(&root).unwrap();
        (&stream).write_all(b"stop\n").unwrap();
        serving.join().unwrap().unwrap();
        assert!(!socket.exists(), "the socket goes with the watcher");
    }

    #[test]
    fn a_malformed_answer_is_no_answer() {
        for reply in [
            &b""[..],
            b"token 7 3 paths",
            b"token 7 paths\n",
            b"token x 3 all\n",
            b"token 7 3 some\n",
            b"hello\n",
        ] {
            assert_eq!(feed(reply), None, "{}", String::from_utf8_lossy(reply));
        }
    }
}
