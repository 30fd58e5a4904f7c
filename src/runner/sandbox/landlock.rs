//! The walls' second layer, which needs no user namespace: Landlock (what a process may read,
//! run and write, whom it may signal, which abstract sockets it may reach, whether it has TCP)
//! and a seccomp filter (no new user namespace, no `ptrace`, no kernel keyrings, no eBPF).
//!
//! Both bind the process that raises them and everything it starts, and neither can be lifted
//! from inside, so git-bmad's own executable raises them (`git-bmad __walls RULES -- PROGRAM
//! ARGS…`) and then becomes the program. Inside bubblewrap it runs last, after the mounts
//! (Landlock forbids mounting); without bubblewrap (a kernel that refuses unprivileged user
//! namespaces: Ubuntu 24.04, GitHub's runners) it is the walls, drawn from the same
//! [`Walls`] as grants on the paths as they are.
//!
//! What Landlock alone cannot do: show a different folder at the same path. So the fence
//! gives the step a shadow of the repository's common git dir instead of mounts (see
//! `git::fence`), and a file inside a writable folder (a worktree's `.git` link) is held by
//! being restored after the step, not by the walls during it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{Mount, Walls};

/// The argument that makes git-bmad raise the walls and become the program.
pub const ENTER: &str = "__walls";

/// The Landlock ABI whose rights git-bmad handles (a later kernel's rights are not asked
/// for: each was tested here before it is).
const HANDLED: landlock::ABI = landlock::ABI::V7;

/// What a process may reach, as Landlock grants it: everything else of the file system is
/// neither read nor written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rules {
    /// Read and run beneath these.
    pub read: Vec<PathBuf>,
    /// Read, run and write beneath these.
    pub write: Vec<PathBuf>,
    /// Whether it may connect and listen over TCP.
    pub network: bool,
}

/// The Landlock ABI this kernel has, or why it has none. Asked once per process.
pub fn abi() -> Result<i32, String> {
    use landlock::{Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, ABI};
    static ANSWER: OnceLock<Result<i32, String>> = OnceLock::new();
    ANSWER
        .get_or_init(|| {
            // The newest ABI whose rights the kernel takes as a hard requirement.
            [
                ABI::V7,
                ABI::V6,
                ABI::V5,
                ABI::V4,
                ABI::V3,
                ABI::V2,
                ABI::V1,
            ]
            .into_iter()
            .find(|abi| {
                Ruleset::default()
                    .set_compatibility(CompatLevel::HardRequirement)
                    .handle_access(AccessFs::from_all(*abi))
                    .and_then(|r| r.create())
                    .is_ok()
            })
            .map(|abi| abi as i32)
            .ok_or_else(|| {
                "the kernel has no Landlock (Linux 5.13 or later, with `landlock` among the \
                     security modules it boots with)"
                    .to_owned()
            })
        })
        .clone()
}

/// The rules inside bubblewrap, whose mounts already hide what the step may not see: writes
/// only where the walls show a writable place (a private `/tmp` among them) and to devices.
pub fn stacked(walls: &Walls) -> Rules {
    let mut write: Vec<PathBuf> = walls
        .mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Hide(target) | Mount::Writable { target, .. } => Some(target.clone()),
            _ => None,
        })
        .collect();
    write.push("/dev".into());
    Rules {
        read: vec!["/".into()],
        write,
        network: walls.network,
    }
}

/// Landlock alone: the rules, and what the process is told of where its private places are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Alone {
    /// The grants.
    pub rules: Rules,
    /// `HOME` (its private home) and `TMPDIR` (a private folder in it), when it has one.
    pub env: Vec<(String, String)>,
    /// Folders to make before it starts (its `TMPDIR`).
    pub make: Vec<PathBuf>,
    /// Links to make in its private home before it starts (link, what it names): each place
    /// of the real home the walls show, where `$HOME` leads a program that looks for it
    /// (`~/.cargo`, `~/.rustup`, a wrapper's `"$HOME/.claude/local/claude"`).
    pub links: Vec<(PathBuf, PathBuf)>,
}

/// The walls as grants on the paths as they are, for a process bubblewrap cannot contain.
///
/// A mount's target is seen as its deepest mount says: the read-only system, less what is
/// hidden or blanked; a read-only place, less what is hidden beneath it; a writable place
/// whole (Landlock cannot take a file back out of a writable folder: what the walls show
/// read-only inside one is restored after the step instead). A private home shown in place
/// of the real one (`real_home`) is given as `HOME`, with a `TMPDIR` of its own in place of
/// the hidden `/tmp`.
pub fn alone(walls: &Walls, real_home: Option<&Path>) -> Alone {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let hidden: Vec<PathBuf> = walls
        .mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Hide(target) | Mount::Blank(target) => Some(real(target)),
            Mount::ReadOnly { source, target } | Mount::Writable { source, target }
                if source != target =>
            {
                Some(real(target))
            }
            _ => None,
        })
        .collect();
    let beneath = |top: &Path| -> Vec<PathBuf> {
        hidden
            .iter()
            .filter(|h| h.starts_with(top) && h.as_path() != top)
            .cloned()
            .collect()
    };
    let mut out = Alone::default();
    let private = walls.mounts.iter().find_map(|m| match m {
        Mount::Writable { source, target }
            if source != target && Some(target.as_path()) == real_home =>
        {
            Some(source.clone())
        }
        _ => None,
    });
    if let (Some(private), Some(home)) = (&private, real_home) {
        for mount in &walls.mounts {
            if let Mount::ReadOnly { source, target } | Mount::Writable { source, target } = mount {
                match target.strip_prefix(home) {
                    Ok(rel) if source == target && !rel.as_os_str().is_empty() => {
                        out.links.push((private.join(rel), target.clone()));
                    }
                    _ => {}
                }
            }
        }
    }
    grant_except(Path::new("/"), &hidden, &mut out.rules.read);
    for mount in &walls.mounts {
        match mount {
            Mount::ReadOnly { source, .. } => {
                let source = real(source);
                grant_except(&source, &beneath(&source), &mut out.rules.read);
            }
            Mount::Writable { source, target } => {
                out.rules.write.push(real(source));
                if source != target && Some(target.as_path()) == real_home {
                    let tmp = source.join(".tmp");
                    out.env.push(("HOME".into(), text(source)));
                    out.env.push(("TMPDIR".into(), text(&tmp)));
                    out.make.push(tmp);
                }
            }
            Mount::Hide(_) | Mount::Blank(_) => {}
        }
    }
    out.rules.write.push("/dev".into());
    out.rules.network = walls.network;
    out
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Grant `top` whole, or when something `hidden` lies beneath it, each entry of it but that
/// (Landlock grants are additive: a granted folder cannot have a part taken back).
fn grant_except(top: &Path, hidden: &[PathBuf], out: &mut Vec<PathBuf>) {
    if hidden.iter().any(|h| h == top) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(top)) {
        out.push(top.to_owned());
        return;
    }
    // An unreadable folder on the way grants nothing beneath it: the safe side.
    let Ok(entries) = std::fs::read_dir(top) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        grant_except(&entry.path(), hidden, out);
    }
}

/// Raise the walls `rules` over this process: what it and what it starts may reach from now.
pub fn enter(rules: &Rules) -> Result<(), String> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, Scope,
    };
    let failed = |e: landlock::RulesetError| format!("Landlock refused the rules: {e}");
    let all = AccessFs::from_all(HANDLED);
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(failed)?
        .scope(Scope::from_all(HANDLED))
        .map_err(failed)?;
    if !rules.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(HANDLED))
            .map_err(failed)?;
    }
    let status = ruleset
        .create()
        .map_err(failed)?
        .add_rules(path_beneath_rules(
            &rules.read,
            AccessFs::from_read(HANDLED),
        ))
        .map_err(failed)?
        .add_rules(path_beneath_rules(&rules.write, all))
        .map_err(failed)?
        .restrict_self()
        .map_err(failed)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(abi()
            .err()
            .unwrap_or_else(|| "Landlock was not enforced".into()));
    }
    drop_ptrace_capability()?;
    for filter in syscall_filters()? {
        seccompiler::apply_filter(&filter).map_err(|e| format!("seccomp refused: {e}"))?;
    }
    Ok(())
}

/// Give up `CAP_SYS_PTRACE`, for good: a contained program started as root would else read
/// every process's environment and memory through `/proc`, git-bmad's own included, where
/// no mount hides them (Landlock alone). A program that is not root has nothing to give up.
fn drop_ptrace_capability() -> Result<(), String> {
    use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
    let mut sets = capabilities(None).map_err(|e| format!("cannot read the capabilities: {e}"))?;
    if !sets.permitted.contains(CapabilitySet::SYS_PTRACE) {
        return Ok(());
    }
    // Out of the bounding set first: root's next exec would else be given it again.
    rustix::thread::remove_capability_from_bounding_set(CapabilitySet::SYS_PTRACE)
        .map_err(|e| format!("cannot give up CAP_SYS_PTRACE: {e}"))?;
    for set in [
        &mut sets.effective,
        &mut sets.permitted,
        &mut sets.inheritable,
    ] {
        set.remove(CapabilitySet::SYS_PTRACE);
    }
    set_capabilities(None, sets).map_err(|e| format!("cannot give up CAP_SYS_PTRACE: {e}"))
}

/// The system calls a contained process is refused: new user namespaces (a way around the
/// walls where the kernel allows them), `ptrace` and reading another process's memory, the
/// kernel keyrings (where a desktop keeps credentials), eBPF. `clone3` answers "not here",
/// so that libc falls back to `clone`, whose flags a filter can read.
fn syscall_filters() -> Result<Vec<seccompiler::BpfProgram>, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let failed = |e: seccompiler::BackendError| format!("the seccomp filter is wrong: {e}");
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(failed)?;
    let new_user = libc::CLONE_NEWUSER as u64;
    let with_new_user = || -> Result<Vec<SeccompRule>, String> {
        let flags = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(new_user),
            new_user,
        )
        .map_err(failed)?;
        Ok(vec![SeccompRule::new(vec![flags]).map_err(failed)?])
    };
    let mut refused = std::collections::BTreeMap::new();
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_setns,
    ] {
        refused.insert(call, Vec::new());
    }
    refused.insert(libc::SYS_unshare, with_new_user()?);
    refused.insert(libc::SYS_clone, with_new_user()?);
    let eperm = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(failed)?;
    let clone3 = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(failed)?;
    [eperm, clone3]
        .into_iter()
        .map(|f| f.try_into().map_err(failed))
        .collect()
}

/// The command line that raises `rules` with git-bmad's executable `helper` and runs
/// `program` with `args`.
pub fn command_line(helper: &Path, rules: &Rules, program: &Path, args: &[String]) -> Vec<String> {
    let mut out = vec![
        text(helper),
        ENTER.to_owned(),
        serde_json::to_string(rules).unwrap_or_default(),
        "--".to_owned(),
        text(program),
    ];
    out.extend(args.iter().cloned());
    out
}

/// When this process was started to raise the walls (`git-bmad __walls RULES -- PROGRAM
/// ARGS…`): raise them, run the program inside and keep it (see [`super::keeper`]); how it
/// ended, or what ended it when that could not be done.
pub fn enter_if_asked() -> Option<std::process::ExitCode> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).map(|a| a.as_os_str()) != Some(ENTER.as_ref()) {
        return None;
    }
    Some(run_entered(&args[2..]))
}

fn run_entered(args: &[OsString]) -> std::process::ExitCode {
    // 126 as a shell says "found but cannot be run"; 127, "not found".
    let fail = |code: u8, why: String| {
        eprintln!("git-bmad: {why}");
        std::process::ExitCode::from(code)
    };
    let (Some(rules), Some(dashes), Some(program)) = (args.first(), args.get(1), args.get(2))
    else {
        return fail(
            126,
            format!("usage: git-bmad {ENTER} RULES -- PROGRAM [ARGS…]"),
        );
    };
    let rules: Rules = match serde_json::from_slice(rules.as_encoded_bytes()) {
        Ok(rules) if dashes == "--" => rules,
        Ok(_) => {
            return fail(
                126,
                format!("usage: git-bmad {ENTER} RULES -- PROGRAM [ARGS…]"),
            )
        }
        Err(e) => return fail(126, format!("the walls' rules are not readable: {e}")),
    };
    // Before the walls: what the program leaves running comes back to this process.
    if let Err(why) = super::keeper::adopt_orphans() {
        return fail(126, why);
    }
    if let Err(why) = enter(&rules) {
        return fail(
            126,
            format!("the walls could not be raised, so nothing ran: {why}"),
        );
    }
    super::keeper::keep(program, &args[3..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_places_are_left_out_and_their_siblings_granted() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        for dir in ["home/u/.cargo/bin", "home/u/.ssh", "home/v", "usr/bin"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("home/u/.cargo/credentials.toml"), "t").unwrap();
        let mut out = Vec::new();
        grant_except(&root, &[root.join("home/u")], &mut out);
        out.sort();
        assert_eq!(out, [root.join("home/v"), root.join("usr")]);
        // A folder shown again inside the hidden one, less its credentials.
        let walls = Walls {
            mounts: vec![
                Mount::Hide(root.join("home/u")),
                Mount::read_only(root.join("home/u/.cargo")),
                Mount::Blank(root.join("home/u/.cargo/credentials.toml")),
                Mount::Writable {
                    source: root.join("usr/bin"),
                    target: root.join("home/u"),
                },
                Mount::writable(root.join("home/v")),
            ],
            network: false,
        };
        let plan = alone(&walls, Some(&root.join("home/u")));
        assert!(plan.rules.read.contains(&root.join("home/u/.cargo/bin")));
        assert!(!plan.rules.read.iter().any(|p| p.ends_with(".ssh")
            || p.ends_with("credentials.toml")
            || p.as_path() == root.join("home/u/.cargo")));
        assert_eq!(
            plan.rules.write,
            [root.join("usr/bin"), root.join("home/v"), "/dev".into()]
        );
        assert_eq!(
            plan.env,
            [
                ("HOME".to_owned(), text(&root.join("usr/bin"))),
                ("TMPDIR".to_owned(), text(&root.join("usr/bin/.tmp")))
            ]
        );
        assert!(!plan.rules.network);
        // `$HOME/.cargo` leads where `~/.cargo` is shown.
        assert_eq!(
            plan.links,
            [(root.join("usr/bin/.cargo"), root.join("home/u/.cargo"))]
        );
    }

    #[test]
    fn inside_bubblewrap_only_the_writable_places_are_written() {
        let walls = Walls {
            mounts: vec![
                Mount::Hide("/tmp".into()),
                Mount::read_only("/r/.git"),
                Mount::writable("/r/w"),
            ],
            network: true,
        };
        let rules = stacked(&walls);
        assert_eq!(rules.read, [PathBuf::from("/")]);
        assert_eq!(
            rules.write,
            [PathBuf::from("/tmp"), "/r/w".into(), "/dev".into()]
        );
        assert!(rules.network);
        let line = command_line(
            Path::new("/b/git-bmad"),
            &rules,
            Path::new("/bin/sh"),
            &["-c".into()],
        );
        assert_eq!(line[1], ENTER);
        assert_eq!(serde_json::from_str::<Rules>(&line[2]).unwrap(), rules);
        assert_eq!(&line[3..], ["--", "/bin/sh", "-c"]);
    }
}
