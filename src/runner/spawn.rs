//! Processes that are not an agent's step: a program run in the foreground with this
//! process's streams (the user's own hook, the demo's commands), and one left running on its
//! own (a browser, the journal flusher). Every process git-bmad starts outside the git layer
//! starts here or in [`super::process`].

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A program to run.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// The program (a path, or a name on `PATH`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory (default: this process's).
    pub cwd: Option<PathBuf>,
    /// Variables to set on top of the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Inherited variables to remove.
    pub env_remove: Vec<String>,
}

impl Program {
    /// `program` with `args`, nothing else changed.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Program {
        Program {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Program::default()
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        for key in &self.env_remove {
            command.env_remove(key);
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Run it to its end with this process's stdout and stderr, `input` on its stdin (a
    /// program that does not read it is fine); its exit code, `None` when a signal ended it.
    pub fn run_in_foreground(&self, input: Option<&[u8]>) -> std::io::Result<Option<i32>> {
        let mut command = self.command();
        command.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::inherit()
        });
        let mut child = command.spawn()?;
        if let (Some(mut stdin), Some(input)) = (child.stdin.take(), input) {
            let _ = stdin.write_all(input);
        }
        Ok(child.wait()?.code())
    }

    /// Run it to its end with its output captured: (exit code, stdout, stderr).
    pub fn output(&self) -> std::io::Result<(Option<i32>, Vec<u8>, Vec<u8>)> {
        let out = self.command().stdin(Stdio::null()).output()?;
        Ok((out.status.code(), out.stdout, out.stderr))
    }

    /// Start it on its own: a process group of its own (a kill of this command's group
    /// leaves it be), no streams, reaped in the background if this process still runs then.
    pub fn start_detached(&self) -> std::io::Result<()> {
        let mut child = self
            .command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        // With no thread to be had, it stays a zombie until this process exits: no panic.
        let _ = std::thread::Builder::new().spawn(move || child.wait());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreground_passes_input_and_returns_the_code() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut program = Program::new("/bin/sh", ["-c", "cat > \"$OUT\"; exit 3", "sh"]);
        program.env.push(("OUT".into(), out.clone().into()));
        let code = program.run_in_foreground(Some(b"hello")).unwrap();
        assert_eq!(code, Some(3));
        assert_eq!(std::fs::read(&out).unwrap(), b"hello");
        let (code, stdout, _) = Program::new("/bin/sh", ["-c", "echo hi"]).output().unwrap();
        assert_eq!((code, stdout), (Some(0), b"hi\n".to_vec()));
    }
}
