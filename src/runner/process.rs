//! One child process, run to the end or to its deadline.
//!
//! The child gets a process group of its own, so a timeout or an interrupt kills everything
//! it started (an agent's shell, its test runner, a hung server) and not just the agent; on
//! Linux it is also told to die with the thread that started it, so a supervisor killed with
//! `kill -9` does not leave an agent writing into a worktree nobody watches. When the child
//! exits, what is left of its group is killed too: each step is a fresh context, and a
//! leftover that holds the output pipe open would otherwise keep the step from ending.
//!
//! Output is captured with a cap on memory ([`Captured`]); the journal keeps a smaller excerpt.

use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use super::error::{Error, Result};
use super::sandbox::{self, Contained};
use std::sync::atomic::{AtomicBool, Ordering};

/// How much of a stream is kept from its start (enough to parse an agent's JSON result).
const HEAD_LIMIT: usize = 4 << 20;
/// How much of a stream is kept from its end: what the journal shows of a long output
/// (64 KiB), and a margin so that a secret cut by that edge can still be seen whole.
const TAIL_LIMIT: usize = 80 << 10;
/// How often the wait loop looks at the interrupt flag.
const POLL: Duration = Duration::from_millis(20);

/// What to run.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The program (a path found with `which`, or a name on `PATH`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Variables to set on top of the inherited environment.
    pub env: Vec<(String, String)>,
    /// Inherited variables to remove (`GIT_DIR` and friends when called from a hook).
    pub env_remove: Vec<String>,
    /// Inherit nothing: the child sees `env` alone.
    pub clear_env: bool,
    /// Bytes for stdin; `None` gives the child an empty stdin.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit.
    pub timeout: Duration,
    /// The walls it runs inside, when contained.
    pub sandbox: Option<Contained>,
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "how", content = "value")]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal it did not get from us ended it.
    Signal(i32),
    /// It ran past its timeout and was killed.
    TimedOut,
    /// The user interrupted git-bmad, which killed it.
    Interrupted,
    /// It changed nothing in the worktree for its step's `no_progress` limit and was killed.
    Abandoned,
    /// What it reported as it ran reached what it was given to spend, and it was killed.
    Spent,
}

impl Exit {
    /// Exit code 0.
    pub fn success(&self) -> bool {
        *self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exited with code {code}"),
            Exit::Signal(signal) => write!(f, "was killed by signal {signal}"),
            Exit::TimedOut => f.write_str("timed out and was killed"),
            Exit::Interrupted => f.write_str("was interrupted"),
            Exit::Abandoned => {
                f.write_str("made no progress (nothing changed in the worktree) and was abandoned")
            }
            Exit::Spent => f.write_str("reached what it was given to spend and was stopped"),
        }
    }
}

/// A captured stream: its start, its end, and its size.
#[derive(Clone, Debug, Default)]
pub struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Captured {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = HEAD_LIMIT.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        let keep = bytes.len().min(TAIL_LIMIT);
        self.tail.extend(&bytes[bytes.len() - keep..]);
        let excess = self.tail.len().saturating_sub(TAIL_LIMIT);
        self.tail.drain(..excess);
    }

    /// How many bytes the stream had.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether every byte was kept.
    pub fn complete(&self) -> bool {
        self.total as usize == self.head.len()
    }

    /// The whole stream when it was kept whole, else its first bytes.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The last bytes of the stream (at most 80 KiB).
    pub fn tail(&self) -> Vec<u8> {
        if self.complete() {
            let start = self.head.len().saturating_sub(TAIL_LIMIT);
            return self.head[start..].to_vec();
        }
        self.tail.iter().copied().collect()
    }

    /// The stream as text for the journal: whole when it fits in `limit` bytes, else its last
    /// bytes after a line that says how big it was.
    pub fn excerpt(&self, name: &str, limit: usize) -> String {
        if self.complete() && self.head.len() <= limit {
            return String::from_utf8_lossy(&self.head).into_owned();
        }
        let tail = self.tail();
        let keep = limit.min(tail.len());
        let text = String::from_utf8_lossy(&tail[tail.len() - keep..]).into_owned();
        format!(
            "[git-bmad: {name} truncated: {} bytes in all, the last {keep} kept]\n{text}",
            self.total
        )
    }

    /// Text from bytes (for tests and callers that build results by hand).
    pub fn from_bytes(bytes: &[u8]) -> Captured {
        let mut c = Captured::default();
        c.push(bytes);
        c
    }
}

/// What a finished child left.
#[derive(Clone, Debug)]
pub struct Output {
    /// How it ended.
    pub exit: Exit,
    /// Its stdout.
    pub stdout: Captured,
    /// Its stderr.
    pub stderr: Captured,
    /// How long it ran.
    pub duration: Duration,
}

/// Run `spec` to its end, its timeout, or an interrupt.
pub fn run(spec: &Spec, interrupt: &AtomicBool) -> Result<Output> {
    run_inner(spec, interrupt, None)
}

/// What a watched child's lines are put to, a line at a time, with where each was written:
/// `true` stops it.
pub type Watch<'w> = dyn FnMut(Source, &[u8]) -> bool + Send + 'w;

/// Where a watched child wrote a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Its stdout.
    Stdout,
    /// Its log.
    Log,
}

/// Where a watched child's log is, once it is known (a file it was told to write, or one
/// it names as it runs).
pub type LogPlace<'l> = dyn Fn() -> Option<PathBuf> + Sync + 'l;

/// Run `spec` as [`run`] does, each line of its stdout put to `watch` as it is printed, and
/// each line it appends to its `log` (a file it writes as it runs) as it is written: the
/// first line `watch` answers `true` to kills the child and its group at once, which then
/// ends [`Exit::Spent`]. What the log holds when the child has ended is heard too.
pub fn run_watching(
    spec: &Spec,
    interrupt: &AtomicBool,
    log: Option<&LogPlace<'_>>,
    watch: &mut Watch<'_>,
) -> Result<Output> {
    run_inner(spec, interrupt, Some((watch, log)))
}

fn run_inner(
    spec: &Spec,
    interrupt: &AtomicBool,
    watch: Option<(&mut Watch<'_>, Option<&LogPlace<'_>>)>,
) -> Result<Output> {
    let started = Instant::now();
    let mut child = spawn(spec, spec.stdin.is_some())?;
    let group = Group::of(&child, spec);
    let stdin = child.stdin.take();
    let input = spec.stdin.clone();
    let writer = std::thread::spawn(move || {
        if let (Some(mut pipe), Some(bytes)) = (stdin, input) {
            // The child may not read it all; a broken pipe is its business.
            let _ = pipe.write_all(&bytes);
        }
    });
    let stderr = child.stderr.take().map(reader);
    let spent = AtomicBool::new(false);
    let (mut ended, stdout) = match (watch, child.stdout.take()) {
        (Some((watch, log)), Some(pipe)) => {
            let watch = Mutex::new(watch);
            let hear = |source: Source, line: &[u8]| {
                let mut watch = watch.lock().unwrap_or_else(|e| e.into_inner());
                if !spent.load(Ordering::SeqCst) && watch(source, line) {
                    spent.store(true, Ordering::SeqCst);
                    // At once: the poll's moment is time for another request.
                    group.kill();
                }
            };
            std::thread::scope(|scope| {
                let listener =
                    scope.spawn(|| read_lines(pipe, &mut |line| hear(Source::Stdout, line)));
                let mut tailing = Tailing {
                    log: log.map(Tail::new),
                    hear: &hear,
                };
                let ended = wait(
                    child,
                    group,
                    started + spec.timeout,
                    interrupt,
                    &mut tailing,
                );
                // Its last lines, written as it ended.
                tailing.tick();
                (ended, listener.join().unwrap_or_default())
            })
        }
        (_, pipe) => {
            let stdout = pipe.map(reader);
            let ended = wait(child, group, started + spec.timeout, interrupt, &mut Quiet);
            (ended, stdout.map(join_reader).unwrap_or_default())
        }
    };
    if spent.load(Ordering::SeqCst) && ended.killed.is_none() {
        ended.killed = Some(Exit::Spent);
    }
    let _ = writer.join();
    let stderr = stderr.map(join_reader).unwrap_or_default();
    finish(spec, ended, stdout, stderr, started)
}

/// Read `pipe` to its end, each whole line (without its newline) put to `hear`. A line
/// longer than any message is kept in the capture and never heard: a child that prints
/// without end cannot make git-bmad hold it all.
fn read_lines<R: Read>(pipe: R, hear: &mut dyn FnMut(&[u8])) -> Captured {
    let mut captured = Captured::default();
    let mut lines = std::io::BufReader::new(pipe);
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        line.clear();
        match (&mut lines).take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        captured.push(&line);
        let Some(text) = line.strip_suffix(b"\n") else {
            overlong = true;
            continue;
        };
        if std::mem::take(&mut overlong) {
            continue;
        }
        hear(text);
    }
    captured
}

/// A child that is talked to: it reads lines on stdin and answers with lines on stdout (a
/// JSON-RPC peer), until the conversation is over. It does not end by itself then: it is
/// ended, with its group.
pub trait Dialogue: Send {
    /// What to write first.
    fn opening(&mut self) -> Vec<u8>;
    /// One line the child printed (without its newline); what to write back.
    fn hear(&mut self, line: &[u8]) -> Vec<u8>;
    /// Whether the conversation is over.
    fn over(&self) -> bool;
    /// What asks the child to stop what it is doing (at a timeout or an interrupt); it is
    /// given a moment to answer before it is killed.
    fn cancel(&mut self) -> Vec<u8>;
}

/// The longest line that is heard (by a [`Dialogue`] or a watch) (a message with a whole file in it fits).
const MAX_LINE: u64 = 16 << 20;

/// How long a child asked to stop has to end its turn before it is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(3);
/// How long the walls' keeper has to end, once told, before its group is killed: it ends
/// what its program left in that time.
const KEEPER_GRACE: Duration = Duration::from_millis(500);

/// Run `spec` as one side of `dialogue`, to the conversation's end, the child's, its
/// timeout or an interrupt. The child's stdout is kept as it is for any other child.
pub fn converse(
    spec: &Spec,
    dialogue: &mut dyn Dialogue,
    interrupt: &AtomicBool,
) -> Result<Output> {
    let started = Instant::now();
    let mut child = spawn(spec, true)?;
    let group = Group::of(&child, spec);
    let stdin = Mutex::new(child.stdin.take());
    let stdout = child.stdout.take();
    let stderr = child.stderr.take().map(reader);
    let dialogue = Mutex::new(dialogue);
    let say = |bytes: Vec<u8>| {
        if bytes.is_empty() {
            return;
        }
        let mut pipe = stdin.lock().unwrap_or_else(|e| e.into_inner());
        // A child that stopped reading has ended or is about to; its end decides.
        if let Some(p) = pipe.as_mut() {
            if p.write_all(&bytes).and_then(|_| p.flush()).is_err() {
                *pipe = None;
            }
        }
    };
    let over = AtomicBool::new(false);
    let (ended, stdout) = std::thread::scope(|scope| {
        let listener = scope.spawn(|| {
            let Some(pipe) = stdout else {
                return Captured::default();
            };
            say(lock(&dialogue).opening());
            read_lines(pipe, &mut |text| {
                let mut talk = lock(&dialogue);
                let reply = talk.hear(text);
                let done = talk.over();
                drop(talk);
                say(reply);
                if done {
                    over.store(true, Ordering::SeqCst);
                }
            })
        });
        let mut talk = Talk {
            over: &over,
            cancel: &mut || say(lock(&dialogue).cancel()),
        };
        let ended = wait(child, group, started + spec.timeout, interrupt, &mut talk);
        // Its pipes are closed with its group; what is left to read ends the listener.
        *stdin.lock().unwrap_or_else(|e| e.into_inner()) = None;
        (ended, listener.join().unwrap_or_default())
    });
    let stderr = stderr.map(join_reader).unwrap_or_default();
    finish(spec, ended, stdout, stderr, started)
}

fn lock<'a, 'd>(
    dialogue: &'a Mutex<&'d mut dyn Dialogue>,
) -> std::sync::MutexGuard<'a, &'d mut dyn Dialogue> {
    dialogue.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the wait for a child listens to besides its end.
trait Listener {
    /// Look at what the child has written since the last look (each poll).
    fn tick(&mut self) {}
    /// Whether the child's work is over although it still runs.
    fn over(&self) -> bool {
        false
    }
    /// Ask the child to stop; `true` when it was asked (and gets a moment to).
    fn cancel(&mut self) -> bool {
        false
    }
}

/// A child that is not talked to.
struct Quiet;

impl Listener for Quiet {}

/// A watched child, whose log is read as it grows.
struct Tailing<'a> {
    log: Option<Tail<'a>>,
    hear: &'a (dyn Fn(Source, &[u8]) + Sync),
}

impl Listener for Tailing<'_> {
    fn tick(&mut self) {
        for line in self.log.as_mut().map(Tail::lines).unwrap_or_default() {
            (self.hear)(Source::Log, &line);
        }
    }
}

/// A file a child appends lines to as it runs, read from its start as it grows. It is
/// opened as git-bmad's own files are (no symlink followed, no FIFO waited on), once it is
/// known and exists; a line longer than any record is skipped.
struct Tail<'a> {
    place: &'a LogPlace<'a>,
    file: Option<std::fs::File>,
    partial: Vec<u8>,
    overlong: bool,
}

impl<'a> Tail<'a> {
    fn new(place: &'a LogPlace<'a>) -> Tail<'a> {
        Tail {
            place,
            file: None,
            partial: Vec::new(),
            overlong: false,
        }
    }

    /// The whole lines appended since the last look, without their newlines.
    fn lines(&mut self) -> Vec<Vec<u8>> {
        if self.file.is_none() {
            self.file = (self.place)().and_then(|path| crate::fs::open_private(&path).ok());
        }
        let Some(file) = &mut self.file else {
            return Vec::new();
        };
        let mut read = Vec::new();
        // What is there now; more comes at the next look.
        let _ = file.take(MAX_LINE).read_to_end(&mut read);
        let mut lines = Vec::new();
        for piece in read.split_inclusive(|b| *b == b'\n') {
            self.partial.extend_from_slice(piece);
            if let Some(line) = self.partial.strip_suffix(b"\n") {
                if !std::mem::take(&mut self.overlong) {
                    lines.push(line.to_vec());
                }
                self.partial.clear();
            } else if self.partial.len() as u64 > MAX_LINE {
                self.overlong = true;
                self.partial.clear();
            }
        }
        lines
    }
}

/// A child in a [`Dialogue`].
struct Talk<'a> {
    over: &'a AtomicBool,
    cancel: &'a mut dyn FnMut(),
}

impl Listener for Talk<'_> {
    fn over(&self) -> bool {
        self.over.load(Ordering::SeqCst)
    }

    fn cancel(&mut self) -> bool {
        (self.cancel)();
        true
    }
}

/// How a wait ended: the child's status, and why git-bmad ended it if it did.
struct Ended {
    status: std::io::Result<std::process::ExitStatus>,
    killed: Option<Exit>,
    over: bool,
}

/// Start the child of `spec`, in a process group of its own, inside its walls.
fn spawn(spec: &Spec, piped_stdin: bool) -> Result<std::process::Child> {
    let launch = match &spec.sandbox {
        None => None,
        Some(contained) => Some(
            sandbox::launch(
                &contained.layers,
                &contained.walls,
                &spec.cwd,
                &spec.program,
                &spec.args,
            )
            .map_err(|e| Error::Spawn {
                program: spec.program.clone(),
                source: e,
            })?,
        ),
    };
    let mut command = match &launch {
        None => {
            let mut command = Command::new(&spec.program);
            command.args(&spec.args);
            command
        }
        Some(launch) => {
            let mut command = Command::new(&launch.program);
            command.args(&launch.args);
            command
        }
    };
    command
        .current_dir(&spec.cwd)
        .stdin(if piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if spec.clear_env {
        command.env_clear();
    }
    for key in &spec.env_remove {
        command.env_remove(key);
    }
    command.envs(spec.env.iter().map(|(k, v)| (k, v)));
    // After the environment is settled: a cleared one keeps it too.
    if let Some(launch) = &launch {
        command.envs(launch.env.iter().map(|(k, v)| (k, v)));
        command.env(crate::env::CONTAINED, "1");
    }
    die_with_parent(&mut command);
    command.spawn().map_err(|e| Error::Spawn {
        program: spec.program.clone(),
        source: e,
    })
}

/// Wait for `child` to end, to be over, to reach `deadline` or to be interrupted; then kill
/// its group (whatever it left running goes with it). A child that can be asked to stop is
/// asked first, and killed if it has not ended a moment later.
fn wait(
    mut child: std::process::Child,
    group: Group,
    deadline: Instant,
    interrupt: &AtomicBool,
    listener: &mut dyn Listener,
) -> Ended {
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let mut killed: Option<Exit> = None;
    let mut kill_at: Option<Instant> = None;
    let mut over = false;
    let status = loop {
        let wait = POLL.min(deadline.saturating_duration_since(Instant::now()));
        match done_rx.recv_timeout(wait.max(Duration::from_millis(1))) {
            Ok(status) => break status,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(std::io::Error::other("the child's waiter thread stopped"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        listener.tick();
        if !over && listener.over() {
            over = true;
            group.kill();
        }
        if killed.is_none() && !over {
            if interrupt.load(Ordering::SeqCst) {
                killed = Some(Exit::Interrupted);
            } else if Instant::now() >= deadline {
                killed = Some(Exit::TimedOut);
            }
            if killed.is_some() {
                if listener.cancel() {
                    kill_at = Some(Instant::now() + CANCEL_GRACE);
                } else {
                    group.kill();
                }
            }
        }
        if kill_at.is_some_and(|at| Instant::now() >= at || listener.over()) {
            kill_at = None;
            group.kill();
        }
    };
    group.kill();
    let _ = waiter.join();
    Ended {
        status,
        killed,
        over,
    }
}

/// What a wait left, as an [`Output`]: a child whose conversation was over exited well,
/// whatever ending it took.
fn finish(
    spec: &Spec,
    ended: Ended,
    stdout: Captured,
    stderr: Captured,
    started: Instant,
) -> Result<Output> {
    let status = ended.status.map_err(|e| Error::Wait {
        program: spec.program.clone(),
        source: e,
    })?;
    let exit = match ended.killed {
        Some(exit) => exit,
        None if ended.over => Exit::Code(0),
        None => match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            (None, None) => Exit::Code(-1),
        },
    };
    Ok(Output {
        exit,
        stdout,
        stderr,
        duration: started.elapsed(),
    })
}

fn reader<R: Read + Send + 'static>(mut pipe: R) -> std::thread::JoinHandle<Captured> {
    std::thread::spawn(move || {
        let mut captured = Captured::default();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => captured.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        captured
    })
}

fn join_reader(handle: std::thread::JoinHandle<Captured>) -> Captured {
    handle.join().unwrap_or_default()
}

/// A child's process group: its id (the child's pid: it was started with
/// `process_group(0)`), and whether its leader is the walls' keeper.
#[derive(Clone, Copy, Debug)]
struct Group {
    id: i32,
    kept: bool,
}

impl Group {
    fn of(child: &std::process::Child, spec: &Spec) -> Group {
        Group {
            id: child.id() as i32,
            kept: spec
                .sandbox
                .as_ref()
                .is_some_and(|c| c.layers.keeper_leads()),
        }
    }

    /// Kill the group; one that is already gone is fine. A keeper is told first, and given
    /// a moment: it ends what left the group (see `sandbox::keeper`), which a kill of the
    /// group would leave running.
    fn kill(self) {
        use rustix::process::{kill_process, kill_process_group, Signal};
        let Some(leader) = (self.id > 0)
            .then(|| rustix::process::Pid::from_raw(self.id))
            .flatten()
        else {
            return;
        };
        if self.kept && kill_process(leader, Signal::TERM).is_ok() {
            let until = Instant::now() + KEEPER_GRACE;
            while Instant::now() < until && is_running(leader) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let _ = kill_process_group(leader, Signal::KILL);
    }
}

/// Whether `pid` runs (a zombie, ended but not yet reaped, does not).
fn is_running(pid: rustix::process::Pid) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()));
    let state = stat.ok().and_then(|s| {
        s.rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next().map(str::to_owned))
    });
    state.is_some_and(|s| s != "Z" && s != "X")
}

#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> Output {
        run(
            &Spec {
                program: "/bin/sh".into(),
                args: vec!["-c".into(), script.into()],
                cwd: std::env::temp_dir(),
                env: vec![("GREETING".into(), "hi".into())],
                env_remove: vec![],
                clear_env: false,
                stdin: Some(b"from stdin".to_vec()),
                timeout,
                sandbox: None,
            },
            &AtomicBool::new(false),
        )
        .unwrap()
    }

    #[test]
    fn exit_output_and_env() {
        let out = sh(
            "cat; echo \" $GREETING\"; echo oops >&2; exit 3",
            Duration::from_secs(10),
        );
        assert_eq!(out.exit, Exit::Code(3));
        assert_eq!(out.stdout.head(), b"from stdin hi\n");
        assert_eq!(out.stderr.excerpt("stderr", 100), "oops\n");
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let started = Instant::now();
        // The grandchild holds stdout open; only killing the group ends the step.
        let out = sh(
            "sleep 30 & sleep 30; echo never",
            Duration::from_millis(300),
        );
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(out.stdout.head().is_empty());
    }

    #[test]
    fn leftovers_do_not_hold_a_finished_step() {
        let started = Instant::now();
        let out = sh("sleep 30 & echo done", Duration::from_secs(20));
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(out.stdout.head(), b"done\n");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    /// `script` in `cwd`, with nothing given and 20 seconds.
    fn watched(script: &str, cwd: &std::path::Path) -> Spec {
        Spec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: cwd.to_owned(),
            env: vec![],
            env_remove: vec![],
            clear_env: false,
            stdin: None,
            timeout: Duration::from_secs(20),
            sandbox: None,
        }
    }

    #[test]
    fn a_watched_child_is_killed_at_the_line_its_watch_stops_at() {
        let spec = |script: &str| watched(script, &std::env::temp_dir());
        let mut seen = Vec::new();
        let started = Instant::now();
        let out = run_watching(
            &spec("echo one; echo two; sleep 30 & sleep 30; echo three"),
            &AtomicBool::new(false),
            None,
            &mut |_, line| {
                seen.push(String::from_utf8_lossy(line).into_owned());
                line == b"two"
            },
        )
        .unwrap();
        assert_eq!(out.exit, Exit::Spent);
        assert_eq!(seen, ["one", "two"]);
        assert_eq!(out.stdout.head(), b"one\ntwo\n");
        assert!(started.elapsed() < Duration::from_secs(10));
        // A watch that never stops it leaves the child its own end.
        let out = run_watching(
            &spec("echo one; exit 4"),
            &AtomicBool::new(false),
            None,
            &mut |_, _| false,
        )
        .unwrap();
        assert_eq!(out.exit, Exit::Code(4));
        assert_eq!(out.stdout.head(), b"one\n");
    }

    #[test]
    fn a_watched_childs_log_is_heard_as_it_grows() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        // Written a piece at a time, as a CLI's exporter appends, with nothing on stdout.
        let script = format!(
            "printf 'one\\nt' >> {log}; sleep 0.2; printf 'wo\\n' >> {log}; sleep 30 & sleep 30",
            log = log.display()
        );
        let spec = watched(&script, dir.path());
        let mut seen = Vec::new();
        let started = Instant::now();
        let place = || Some(log.clone());
        let out = run_watching(
            &spec,
            &AtomicBool::new(false),
            Some(&place),
            &mut |source, line| {
                assert_eq!(source, Source::Log);
                seen.push(String::from_utf8_lossy(line).into_owned());
                line == b"two"
            },
        )
        .unwrap();
        assert_eq!(out.exit, Exit::Spent);
        assert_eq!(seen, ["one", "two"]);
        assert!(started.elapsed() < Duration::from_secs(10));
        // A FIFO in its place is not waited on: the child keeps its own end.
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // What it writes as it ends is heard too.
        let last = dir.path().join("last");
        let ending = watched(
            &format!("printf 'last\\n' >> {}", last.display()),
            dir.path(),
        );
        let place = || Some(last.clone());
        let mut heard = Vec::new();
        run_watching(
            &ending,
            &AtomicBool::new(false),
            Some(&place),
            &mut |_, line| {
                heard.push(line.to_vec());
                false
            },
        )
        .unwrap();
        assert_eq!(heard, [b"last".to_vec()]);
        let quick = watched("sleep 0.2; exit 3", dir.path());
        let place = || Some(fifo.clone());
        let out = run_watching(
            &quick,
            &AtomicBool::new(false),
            Some(&place),
            &mut |_, _| true,
        )
        .unwrap();
        assert_eq!(out.exit, Exit::Code(3));
    }

    /// Says `hello`, and is over when the child answers `heard`; asks it to `stop`.
    struct Greeting {
        heard: Vec<String>,
    }

    impl Dialogue for Greeting {
        fn opening(&mut self) -> Vec<u8> {
            b"hello\n".to_vec()
        }
        fn hear(&mut self, line: &[u8]) -> Vec<u8> {
            self.heard.push(String::from_utf8_lossy(line).into_owned());
            Vec::new()
        }
        fn over(&self) -> bool {
            self.heard.iter().any(|l| l.starts_with("heard"))
        }
        fn cancel(&mut self) -> Vec<u8> {
            b"stop\n".to_vec()
        }
    }

    fn talk(script: &str, timeout: Duration) -> (Output, Vec<String>) {
        let mut greeting = Greeting { heard: Vec::new() };
        let spec = Spec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: vec![],
            env_remove: vec![],
            clear_env: false,
            stdin: None,
            timeout,
            sandbox: None,
        };
        let out = converse(&spec, &mut greeting, &AtomicBool::new(false)).unwrap();
        (out, greeting.heard)
    }

    #[test]
    fn a_conversation_ends_the_child_when_it_is_over() {
        let started = Instant::now();
        // The child would go on for ever: the conversation's end ends it, and its group.
        let (out, heard) = talk(
            "echo log line; read word; echo \"heard $word\"; sleep 30 & sleep 30",
            Duration::from_secs(20),
        );
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(heard, ["log line", "heard hello"]);
        assert_eq!(out.stdout.head(), b"log line\nheard hello\n");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_line_longer_than_any_message_is_not_heard_and_the_talk_goes_on() {
        let (out, heard) = talk(
            "head -c 40000000 /dev/zero | tr '\\0' a; echo; echo heard after; sleep 30",
            Duration::from_secs(60),
        );
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(heard, ["heard after"]);
        assert_eq!(out.stdout.total(), 40_000_000 + 1 + 12);
    }

    #[test]
    fn a_conversation_past_its_deadline_is_asked_to_stop_then_killed() {
        // It answers the request to stop: over at once, still a timeout.
        let (out, heard) = talk(
            "read first; read second; echo \"heard $second\"; sleep 30",
            Duration::from_millis(300),
        );
        assert_eq!(out.exit, Exit::TimedOut);
        assert_eq!(heard, ["heard stop"]);
        // It does not: killed after the grace.
        let started = Instant::now();
        let (out, heard) = talk("sleep 30", Duration::from_millis(300));
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(heard.is_empty());
        assert!(started.elapsed() < CANCEL_GRACE + Duration::from_secs(5));
        // A child that ends before the conversation does keeps its own exit.
        let (out, _) = talk("exit 7", Duration::from_secs(20));
        assert_eq!(out.exit, Exit::Code(7));
    }

    #[test]
    fn capture_keeps_head_tail_and_size() {
        let mut c = Captured::default();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..5 {
            c.push(&chunk);
        }
        c.push(b"THE END");
        assert_eq!(c.total(), (5 << 20) + 7);
        assert!(!c.complete());
        assert_eq!(c.head().len(), HEAD_LIMIT);
        let excerpt = c.excerpt("stdout", 1000);
        assert!(excerpt.starts_with(
            "[git-bmad: stdout truncated: 5242887 bytes in all, the last 1000 kept]\n"
        ));
        assert!(excerpt.ends_with("THE END"));
        assert_eq!(
            Captured::from_bytes(b"short").excerpt("stdout", 1000),
            "short"
        );
    }
}
