//! A hermetic world for end-to-end tests: its own HOME, no system or global git config, no
//! inherited `GIT_*`, fixed identity and time zone; real git, the real `git-bmad` binary.

#![allow(dead_code)]

pub mod actions;
pub mod model_api;
pub mod rust_source;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_git-bmad");

/// A temporary directory with a HOME, in which repositories are made.
pub struct TestEnv {
    root: tempfile::TempDir,
}

/// What a command did. Either check its status or read its output: don't drop it.
#[derive(Debug)]
pub struct Run {
    /// The exit code (-1 if killed).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    pub fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Assert exit 0.
    #[track_caller]
    pub fn success(self) -> Run {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Assert a specific exit code.
    #[track_caller]
    pub fn code(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Parse stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

impl TestEnv {
    /// A fresh world whose agents run uncontained (`bmad.sandbox off`): its fake CLIs
    /// read their behaviour from, and log their calls to, the home they share with the test,
    /// which a contained step never sees. [`contained`](Self::contained) is the default.
    pub fn new() -> TestEnv {
        TestEnv::with_global_config("[bmad]\n\tsandbox = off\n")
    }

    /// A fresh world with git-bmad's default configuration: agents run contained.
    pub fn contained() -> TestEnv {
        TestEnv::with_global_config("")
    }

    fn with_global_config(config: &str) -> TestEnv {
        let root = tempfile::Builder::new()
            .prefix("git-bmad-test-")
            .tempdir()
            .expect("temp dir");
        std::fs::create_dir_all(root.path().join("home")).expect("home");
        std::fs::write(root.path().join("home/.gitconfig"), config).expect("global config");
        std::fs::create_dir_all(root.path().join("bin")).expect("bin");
        TestEnv { root }
    }

    /// The world's directory (canonical).
    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.root.path()).expect("canonical root")
    }

    fn hermetic(&self, cmd: &mut Command) {
        // Fake agent CLIs go in <root>/bin, ahead of everything else; the rest is this
        // process's PATH, or its copy without the programs a test took away.
        let mut dirs = vec![self.root().join("bin")];
        let mirrored = self.root().join("path");
        if mirrored.is_dir() {
            let mut mirrors: Vec<PathBuf> = std::fs::read_dir(&mirrored)
                .expect("path mirrors")
                .map(|e| e.expect("mirror").path())
                .collect();
            mirrors.sort();
            dirs.extend(mirrors);
        } else {
            dirs.extend(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            ));
        }
        let path = std::env::join_paths(dirs).expect("PATH");
        let home = self.root().join("home");
        cmd.env_clear()
            .env("PATH", path)
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            .env("GIT_EDITOR", ":")
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
    }

    /// A `git` command in `dir`.
    pub fn git_command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new("git");
        self.hermetic(&mut cmd);
        cmd.current_dir(dir);
        cmd
    }

    /// Run git in `dir`, asserting success; its stdout.
    #[track_caller]
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let run = Run::from(
            self.git_command(dir)
                .args(args)
                .output()
                .expect("spawn git"),
        );
        assert_eq!(run.code, 0, "git {args:?} failed: {}", run.stderr);
        run.stdout
    }

    /// Run a shell script in `dir`, as a user would type it.
    pub fn sh(&self, dir: &Path, script: &str) -> Run {
        let mut cmd = Command::new("sh");
        self.hermetic(&mut cmd);
        Run::from(
            cmd.current_dir(dir)
                .args(["-c", script])
                .output()
                .expect("spawn sh"),
        )
    }

    /// `sh -c script` in `dir`, in the background, with `vars` set (its output dropped).
    pub fn spawn_sh(&self, dir: &Path, script: &str, vars: &[(&str, &str)]) -> std::process::Child {
        let mut cmd = Command::new("sh");
        self.hermetic(&mut cmd);
        cmd.current_dir(dir)
            .args(["-c", script])
            .envs(vars.iter().copied())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn sh")
    }

    /// A `git-bmad` command in `dir`.
    pub fn bmad_command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(BIN);
        self.hermetic(&mut cmd);
        cmd.current_dir(dir);
        cmd
    }

    /// Start `git-bmad` in `dir` as the leader of its own process group, for
    /// [`kill_group`]: a crash kills git-bmad and the git commands it runs alike.
    pub fn spawn_group(&self, dir: &Path, args: &[&str]) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        self.bmad_command(dir)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn git-bmad")
    }

    /// Run `git-bmad` in `dir`.
    #[must_use = "assert on the exit status with .success() or .code(n)"]
    pub fn bmad(&self, dir: &Path, args: &[&str]) -> Run {
        Run::from(
            self.bmad_command(dir)
                .args(args)
                .output()
                .expect("spawn git-bmad"),
        )
    }

    /// Run `git-bmad` in `dir` with `vars` set on top of the test environment (a user's
    /// tokens, say).
    #[must_use = "assert on the exit status with .success() or .code(n)"]
    pub fn bmad_with(&self, dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Run {
        let mut cmd = self.bmad_command(dir);
        cmd.args(args).envs(vars.iter().copied());
        Run::from(cmd.output().expect("spawn git-bmad"))
    }

    /// A repository `name` with one commit (a README and a .gitignore ignoring `*.log`).
    pub fn repo(&self, name: &str) -> PathBuf {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).expect("repo dir");
        self.git(&dir, &["init", "-q", "-b", "main"]);
        write(&dir, "README.md", "# project\n");
        write(&dir, ".gitignore", "*.log\ntarget/\n");
        self.git(&dir, &["add", "-A"]);
        self.git(&dir, &["commit", "-q", "-m", "initial"]);
        dir
    }

    /// A bare repository `remote.git` beside `repo`, added to it as `origin`.
    pub fn bare_remote(&self, repo: &Path) -> PathBuf {
        let remote = self.root().join("remote.git");
        self.git(
            &self.root(),
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                remote.to_str().expect("utf-8 path"),
            ],
        );
        self.git(
            repo,
            &[
                "remote",
                "add",
                "origin",
                remote.to_str().expect("utf-8 path"),
            ],
        );
        remote
    }

    /// Start a session and return (id, worktree).
    #[track_caller]
    pub fn start(&self, repo: &Path, name: &str) -> (String, PathBuf) {
        let run = self.bmad(repo, &["start", name, "--json"]).success();
        let v = run.json();
        (
            v["session"]["id"].as_str().expect("id").to_owned(),
            PathBuf::from(v["session"]["worktree"].as_str().expect("worktree")),
        )
    }

    /// Every ref git-bmad keeps (`refs/bmad/`, `refs/notes/bmad/`), one name per line.
    pub fn bmad_refs(&self, repo: &Path) -> String {
        self.git(
            repo,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/bmad/",
                "refs/notes/bmad/",
            ],
        )
    }

    /// The number of a session's newest checkpoint, as `rollback` takes it.
    pub fn last_checkpoint(&self, wt: &Path) -> String {
        let status = self.bmad(wt, &["status", "--json"]).success().json();
        status["checkpoints"][0]["number"].to_string()
    }

    /// The tree `git add -A` would record for a worktree (git's own view of it: its mode
    /// bits as `core.fileMode` has them, its sparse and intent-to-add entries), computed on a
    /// copy of its index.
    pub fn worktree_tree(&self, dir: &Path) -> String {
        let index = self
            .root()
            .join(format!("tmp-index-{}", std::process::id()));
        let own = self.git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        );
        // The copy keeps the index's time: git reads a file written in the same instant as
        // its index again (racy git), and a copy made now would hide that.
        match std::fs::metadata(own.trim()) {
            Ok(meta) => {
                std::fs::copy(own.trim(), &index).expect("a copy of the index");
                let copy = std::fs::File::options().write(true).open(&index).unwrap();
                copy.set_modified(meta.modified().unwrap()).unwrap();
            }
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
                let _ = std::fs::remove_file(&index);
            }
        }
        let mut add = self.git_command(dir);
        add.env("GIT_INDEX_FILE", &index)
            .args(["add", "-A", "--sparse"]);
        assert!(add.status().expect("git add").success());
        let mut write = self.git_command(dir);
        write.env("GIT_INDEX_FILE", &index).arg("write-tree");
        let out = write.output().expect("git write-tree");
        let _ = std::fs::remove_file(&index);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl TestEnv {
    /// Every object in `repo`'s database, reachable or not, as text (`cat-file --batch`):
    /// what must never hold a secret.
    pub fn all_objects(&self, repo: &Path) -> String {
        let out = self
            .git_command(repo)
            .args(["cat-file", "--batch-all-objects", "--batch", "--unordered"])
            .output()
            .expect("git cat-file");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every command's PATH from now on without the program `name`, as on a machine where
    /// it is not installed: each folder of this process's PATH mirrored by links but to it.
    pub fn without_program(&self, name: &str) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        for (i, dir) in std::env::split_paths(&path).enumerate() {
            let mirror = self.root().join("path").join(format!("{i:03}"));
            std::fs::create_dir_all(&mirror).expect("mirror");
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(|e| e.ok()) {
                if entry.file_name() != name {
                    let _ =
                        std::os::unix::fs::symlink(entry.path(), mirror.join(entry.file_name()));
                }
            }
        }
    }

    /// An executable `name` in the world's `bin`, first on every command's PATH.
    pub fn executable(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.root().join("bin").join(name);
        std::fs::write(&path, script).expect("write executable");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

/// Write a file (creating directories).
pub fn write(dir: &Path, rela: &str, content: &str) {
    let path = dir.join(rela);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("parent dir");
    }
    std::fs::write(path, content).expect("write file");
}

/// Run `f`; if it panics, write the panic's message straight to the process's stderr, then
/// panic on. Why: libtest prints a failing test's captured output only in its summary at the
/// very end, which CI logs cut; a long randomised test (the crash test) must leave its
/// reason next to its `FAILED` line, or a failure that happens only on CI cannot be read.
pub fn shout_on_panic<T>(f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(a panic without a message)");
            use std::io::Write;
            // `io::stderr()` itself is not captured; only the print macros are.
            let _ = writeln!(std::io::stderr().lock(), "\n=== test failed: {message}\n");
            std::panic::resume_unwind(panic)
        }
    }
}

/// Date a file's modification an hour back: a lock its writer abandoned long ago.
pub fn age_an_hour(path: &Path) {
    let aged = Command::new("touch")
        .args(["-d", "1 hour ago"])
        .arg(path)
        .status();
    assert!(aged.is_ok_and(|s| s.success()), "touch -d failed");
}

/// SIGKILL a process group started by [`TestEnv::spawn_group`], and reap its leader.
pub fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.wait();
}

/// Wait until no `git repack` a checkpoint left running on `repo` runs any more: the packs
/// are then as it left them, and `git fsck` does not see one go from under it (git's own
/// race with any repack, as with `gc --auto`).
pub fn wait_for_repacks(repo: &Path) {
    let repo = repo.to_string_lossy().into_owned();
    let repacking = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
            let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let args: Vec<_> = cmdline
                .split(|&b| b == 0)
                .map(String::from_utf8_lossy)
                .collect();
            args.iter().any(|a| a == "repack") && args.iter().any(|a| a.starts_with(&repo))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while repacking() {
        assert!(
            std::time::Instant::now() < deadline,
            "a git repack on {repo} still runs after a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Read a file.
pub fn read(dir: &Path, rela: &str) -> String {
    std::fs::read_to_string(dir.join(rela)).unwrap_or_else(|e| panic!("read {rela}: {e}"))
}

/// Copy a directory tree (fixtures into a test's repository).
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
