//! The walls' keeper: the process that raised Landlock stays, as the parent of everything the
//! contained program starts, and ends all of it when the program ends or the keeper is
//! asked to stop.
//!
//! Without a pid namespace (Landlock alone) nothing else would: a process that leaves its
//! group (`setsid`, a double fork) outlives the group's kill, and would go on writing in the
//! worktree after its step was judged, holding git-bmad's locks and using the network. The
//! keeper is its children's subreaper, so whatever leaves its parent comes back to the
//! keeper, wherever in the tree it was started.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{Pid, Signal};

/// How often the keeper looks whether the program ended or it was asked to stop.
const POLL: Duration = Duration::from_millis(10);
/// The most rounds of ending the tree: each round ends what the last one orphaned.
const SWEEPS: usize = 200;

/// Make this process the subreaper of what it starts: call before the walls go up (a
/// seccomp filter may not allow it after).
pub(super) fn adopt_orphans() -> Result<(), String> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| format!("cannot keep the program's processes together: {e}"))
}

/// Run `program` with `args`, wait for it (or for SIGTERM to this keeper), end everything it
/// left, and end as it ended (by the same signal, or with its code). A terminal's SIGINT and
/// SIGHUP reach the program too and are its to answer (a shell in `git bmad contain` lives on
/// after a Ctrl-C): the keeper outlives them, so that it still ends what is left.
pub(super) fn keep(program: &OsString, args: &[OsString]) -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    let outlived = Arc::new(AtomicBool::new(false));
    for (signal, flag) in [
        (libc::SIGTERM, &stop),
        (libc::SIGINT, &outlived),
        (libc::SIGHUP, &outlived),
    ] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(flag)) {
            eprintln!("git-bmad: cannot keep the walls: {e}");
            return ExitCode::from(126);
        }
    }
    let mut child = match std::process::Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(e) => {
            // 126 as a shell says "found but cannot be run"; 127, "not found".
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            eprintln!(
                "git-bmad: {} cannot be run inside the walls: {e} (a program, or what a shim or \
                 a link of it leads to, may lie where the walls hide: runners.sandbox_paths \
                 shows a folder)",
                Path::new(program).display()
            );
            return ExitCode::from(code);
        }
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if stop.load(Ordering::SeqCst) => break None,
            Ok(None) => std::thread::sleep(POLL),
            Err(_) => break None,
        }
    };
    end_everything_started();
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(status) => match (status.code(), status.signal()) {
            (Some(code), _) => ExitCode::from(code.clamp(0, 255) as u8),
            (None, Some(signal)) => end_as(signal),
            (None, None) => ExitCode::from(1),
        },
        None => end_as(libc::SIGTERM),
    }
}

/// End this keeper by `signal`, as the program ended (a caller that reads how it ended sees
/// the program's own signal).
fn end_as(signal: i32) -> ExitCode {
    let _ = signal_hook::low_level::emulate_default_handler(signal);
    ExitCode::from((128 + signal).clamp(0, 255) as u8)
}

/// Kill every process this keeper is the parent of, round after round (each round's kills
/// orphan their children, who come back here), and reap them.
fn end_everything_started() {
    for _ in 0..SWEEPS {
        let children = children_of(rustix::process::getpid());
        if children.is_empty() {
            break;
        }
        for child in children {
            let _ = rustix::process::kill_process(child, Signal::KILL);
        }
        while let Ok(Some(_)) = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG)
        {
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    while let Ok(Some(_)) = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG) {}
}

/// The processes whose parent is `parent`, as `/proc` says.
fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            (parent_in_stat(&stat)? == parent.as_raw_nonzero().get()).then_some(())?;
            Pid::from_raw(pid)
        })
        .collect()
}

/// The parent's pid in a `/proc/<pid>/stat` line: the field after the state, which follows
/// the command's name in parentheses (a name may hold spaces and parentheses itself).
fn parent_in_stat(stat: &str) -> Option<i32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_a_name_with_spaces_and_parentheses() {
        assert_eq!(
            parent_in_stat("4242 (my (odd) prog) S 17 4242 4242 0 -1 4194560"),
            Some(17)
        );
        assert_eq!(parent_in_stat("1 (init) S 0 1 1"), Some(0));
        assert_eq!(parent_in_stat("garbage"), None);
    }
}
