//! One run of a story's tests as the judge runs them: a clean checkout of exactly the
//! commit judged (a repository of its own), files laid over it, the command in walls with
//! no credential in its environment, ended by a deadline.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use super::{passed, Passed};
use crate::epic::Error;
use crate::policy::secrets::redact;
use crate::runner::{self, Spec};
use crate::session::{self, ObjectId, Repo};
use crate::supervisor::contain;

/// A file laid over a clean checkout before its tests run: a story's tests over its base,
/// the hidden acceptance tests over its commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlay {
    /// Where, relative to the checkout.
    pub path: String,
    /// What it holds.
    pub bytes: Vec<u8>,
    /// Whether it is executable.
    pub executable: bool,
}

impl Overlay {
    /// Write it under `root`. Whatever stands at its path, or at a folder on the way, is
    /// replaced: a link a commit holds is never written through (it could lead out of
    /// `root`, into the user's home).
    pub fn write_under(&self, root: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let parts: Vec<&str> = self.path.split('/').collect();
        let odd =
            |p: &&str| p.is_empty() || *p == "." || *p == ".." || p.eq_ignore_ascii_case(".git");
        if parts.iter().any(odd) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{:?} is no path inside a checkout", self.path),
            ));
        }
        std::fs::create_dir_all(root)?;
        let mut at = root.to_path_buf();
        for (i, part) in parts.iter().enumerate() {
            at.push(part);
            let folder = i + 1 < parts.len();
            match std::fs::symlink_metadata(&at) {
                Ok(m) if folder && m.is_dir() => continue,
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&at)?,
                Ok(_) => std::fs::remove_file(&at)?,
                Err(_) => {}
            }
            if folder {
                std::fs::create_dir(&at)?;
            }
        }
        std::fs::write(&at, &self.bytes)?;
        let mode = if self.executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode))
    }

    /// The regular files under `root`, its `.git` aside, links not followed; only those
    /// modified since `since` when it is given (a second early: coarse file-system clocks).
    pub fn read_under(root: &Path, since: Option<SystemTime>) -> std::io::Result<Vec<Overlay>> {
        use std::os::unix::fs::PermissionsExt;
        let mut out = Vec::new();
        let mut folders = vec![root.to_path_buf()];
        while let Some(dir) = folders.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let kind = entry.file_type()?;
                if kind.is_dir() && entry.file_name() != ".git" {
                    folders.push(entry.path());
                }
                if !kind.is_file() {
                    continue;
                }
                let meta = entry.metadata()?;
                let recent = since.is_none_or(|since| {
                    meta.modified()
                        .is_ok_and(|m| m + Duration::from_secs(1) >= since)
                });
                let path = entry.path();
                let relative = path.strip_prefix(root).ok().and_then(|p| p.to_str());
                if let (true, Some(relative)) = (recent, relative) {
                    out.push(Overlay {
                        path: relative.to_owned(),
                        bytes: std::fs::read(&path)?,
                        executable: meta.permissions().mode() & 0o111 != 0,
                    });
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
}

/// One run of the test command.
pub(super) struct Ran {
    /// It passed.
    pub(super) green: bool,
    /// How it ended.
    pub(super) exit: runner::Exit,
    /// What its runner reported passed.
    pub(super) passed: Option<Passed>,
    /// The end of its output, redacted, when it failed.
    pub(super) excerpt: String,
}

/// The walls the judge's test runs get.
pub struct Walls {
    /// Whether the runs are contained, and by what.
    pub(super) containment: contain::Containment,
    /// Whether they reach the network.
    pub(super) network: crate::config::Network,
    /// The variables the configuration passes to test runs (`runners.env`).
    pub(super) passed_env: Vec<String>,
}

/// A clean checkout of `commit` (a repository of its own) in a temporary folder, with
/// `overlay` laid over it: the folder, removed when dropped, and the checkout.
pub fn checkout(
    repo: &Repo,
    commit: ObjectId,
    overlay: &[Overlay],
) -> Result<(tempfile::TempDir, std::path::PathBuf), Error> {
    let scratch = tempfile::Builder::new()
        .prefix("git-bmad-judge-")
        .tempdir()
        .map_err(|source| Error::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let checkout = scratch.path().join("checkout");
    session::repository::clean_checkout(repo, commit, &checkout)?;
    for file in overlay {
        file.write_under(&checkout).map_err(|source| Error::Write {
            path: checkout.join(&file.path),
            source,
        })?;
    }
    Ok((scratch, checkout))
}

/// Run `command` in a clean checkout of `commit` with `overlay` laid over it, with no
/// credential in its environment, ended by `deadline`.
pub(super) fn run_on(
    repo: &Repo,
    commit: ObjectId,
    overlay: &[Overlay],
    command: &str,
    walls: &Walls,
    deadline: Instant,
    interrupt: &AtomicBool,
) -> Result<Ran, Error> {
    // Past the deadline, a second: a run that cannot start still says it timed out.
    let timeout = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    let (_scratch, checkout) = checkout(repo, commit, overlay)?;
    let walls_env = walls.passed_env.clone();
    let walls = contain::command(&walls.containment, &checkout, repo, walls.network)?;
    let spec = Spec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), command.to_owned()],
        cwd: checkout,
        env: crate::env::child::untrusted(&walls_env),
        env_remove: Vec::new(),
        clear_env: true,
        stdin: None,
        timeout,
        sandbox: walls.as_ref().map(|w| w.contained.clone()),
    };
    let out = runner::run_process(&spec, interrupt).map_err(|e| Error::Judge(e.to_string()))?;
    let text = |c: &runner::Captured| {
        let mut text = String::from_utf8_lossy(c.head()).into_owned();
        if !c.complete() {
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(&c.tail()));
        }
        text
    };
    let all = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    let green = out.exit.success();
    let excerpt = if green {
        String::new()
    } else {
        let said = [
            out.stdout.excerpt("output", 1200),
            out.stderr.excerpt("stderr", 800),
        ];
        redact(format!("{}\n{}", out.exit, said.join("\n")).trim())
    };
    Ok(Ran {
        green,
        exit: out.exit,
        passed: passed(&all),
        excerpt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlay_replaces_links_on_its_way_and_never_writes_through_them() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("checkout"), dir.path().join("home"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        // A commit's folder that is a link out, and a file that is one.
        std::os::unix::fs::symlink(&outside, root.join("tests")).unwrap();
        std::os::unix::fs::symlink(outside.join("key"), root.join("run.sh")).unwrap();
        std::fs::write(outside.join("key"), "secret").unwrap();
        for path in ["tests/accept.sh", "run.sh"] {
            let file = Overlay {
                path: path.into(),
                bytes: b"true\n".to_vec(),
                executable: true,
            };
            file.write_under(&root).unwrap();
            assert_eq!(std::fs::read(root.join(path)).unwrap(), b"true\n");
        }
        assert!(!outside.join("accept.sh").exists());
        assert_eq!(std::fs::read(outside.join("key")).unwrap(), b"secret");
        assert!(std::fs::symlink_metadata(root.join("tests"))
            .unwrap()
            .is_dir());
        // Read back: regular files only, with their mode.
        let read = Overlay::read_under(&root, None).unwrap();
        let paths: Vec<&str> = read.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(paths, ["run.sh", "tests/accept.sh"]);
        assert!(read.iter().all(|o| o.executable));
        for bad in [
            "../escape.sh",
            "tests/../../x",
            "/etc/x",
            ".git/hooks/pre-commit",
        ] {
            let file = Overlay {
                path: bad.into(),
                bytes: Vec::new(),
                executable: false,
            };
            assert!(file.write_under(&root).is_err(), "{bad}");
        }
    }
}
