//! One `git hash-object -w --stdin-paths` for many files: git converts each by its
//! attributes as `git add` does and stores it in a scratch object folder, a file at a time
//! as it is asked, so that a snapshot that stores thousands of such files starts git once.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use super::{describe, GitCli};
use crate::git::error::{Error, Result};
use crate::git::ObjectId;

/// A running `git hash-object -w --stdin-paths`, storing into a scratch object folder.
pub(in crate::git) struct HashPaths {
    child: Child,
    asks: Option<ChildStdin>,
    answers: BufReader<ChildStdout>,
    /// Where git's stderr goes: a file, which no amount of warnings can fill up.
    said: std::fs::File,
    args: String,
}

impl HashPaths {
    /// Start git, storing into the object folder `scratch`, its stderr into `said`.
    pub(in crate::git) fn start(git: &GitCli, scratch: &Path, said: std::fs::File) -> Result<Self> {
        let mut cmd = git.command();
        cmd.env("GIT_OBJECT_DIRECTORY", scratch)
            // An answer a line at a time, as each path is asked.
            .env("GIT_FLUSH", "1")
            .args(["hash-object", "-w", "--stdin-paths"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(
                said.try_clone()
                    .map_err(|e| Error::io("could not open", scratch, e))?,
            );
        let args = describe(&cmd);
        let mut child = cmd.spawn().map_err(|e| Error::Command {
            args: args.clone(),
            code: None,
            stderr: e.to_string(),
        })?;
        let (Some(asks), Some(answers)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Command {
                args,
                code: None,
                stderr: "no pipes to git".to_owned(),
            });
        };
        Ok(HashPaths {
            child,
            asks: Some(asks),
            answers: BufReader::new(answers),
            said,
            args,
        })
    }

    /// The blob git stores for the worktree file at `path` (relative to the worktree; a line
    /// git reads as it is: no newline or carriage return, no leading double quote). When git
    /// refuses it, git has ended: its words are the error's.
    pub(in crate::git) fn hash(&mut self, path: &[u8]) -> Result<ObjectId> {
        let asked = self.asks.as_mut().is_some_and(|asks| {
            asks.write_all(path)
                .and_then(|()| asks.write_all(b"\n"))
                .and_then(|()| asks.flush())
                .is_ok()
        });
        let mut line = String::new();
        if asked && self.answers.read_line(&mut line).is_ok_and(|n| n > 0) {
            return super::parse_id(line.as_bytes());
        }
        Err(self.ended())
    }

    /// Why git ended: its exit and what it said.
    fn ended(&mut self) -> Error {
        use std::io::{Read, Seek};
        self.asks = None;
        let code = self.child.wait().ok().and_then(|status| status.code());
        let mut said = Vec::new();
        let _ = self.said.rewind();
        let _ = self.said.read_to_end(&mut said);
        Error::Command {
            args: self.args.clone(),
            code,
            // A path it names need not be UTF-8.
            stderr: String::from_utf8_lossy(&said).into_owned(),
        }
    }
}

impl Drop for HashPaths {
    fn drop(&mut self) {
        // Closing its input ends git.
        self.asks = None;
        let _ = self.child.wait();
    }
}
