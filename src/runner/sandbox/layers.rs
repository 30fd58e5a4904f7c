//! Which layers of walls this machine has (bubblewrap, Landlock), what `runners.sandbox`
//! makes of them, and the one command that lets bubblewrap work where the machine refuses it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{command_line, landlock, private_places, Walls};
use crate::config::Sandbox;

/// The layers that hold the walls on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    /// bubblewrap's path, when it can make a sandbox here.
    pub bwrap: Option<PathBuf>,
    /// Landlock, when the kernel has it.
    pub landlock: Option<Landlock>,
    /// Why each layer that is not here is not (`bubblewrap: …`).
    pub missing: Vec<String>,
}

/// Landlock on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Landlock {
    /// The kernel's Landlock ABI.
    pub abi: i32,
    /// git-bmad's own executable, which raises it and becomes the program.
    pub helper: PathBuf,
}

impl Layers {
    /// What this machine has. Asked once per process: each layer is tried once.
    pub fn here() -> Layers {
        static ANSWER: OnceLock<Layers> = OnceLock::new();
        ANSWER
            .get_or_init(|| {
                let mut layers = Layers::landlock_here();
                layers.bwrap = available()
                    .map_err(|why| layers.missing.insert(0, format!("bubblewrap: {why}")))
                    .ok();
                layers
            })
            .clone()
    }

    /// Landlock alone, as this machine has it (bubblewrap not tried).
    pub fn landlock_here() -> Layers {
        let mut missing = Vec::new();
        let landlock = landlock::abi()
            .and_then(|abi| {
                own_executable()
                    .map(|helper| Landlock { abi, helper })
                    .ok_or_else(|| {
                        "git-bmad's own executable, which raises it, cannot be found".to_owned()
                    })
            })
            .map_err(|why| missing.push(format!("Landlock: {why}")))
            .ok();
        Layers {
            bwrap: None,
            landlock,
            missing,
        }
    }

    /// Whether the walls can show a copy in a file's place (a config without its
    /// credentials): only mounts can; Landlock alone can only deny the file.
    pub fn can_stand_in(&self) -> bool {
        self.bwrap.is_some()
    }

    /// Whether the process these layers launch is the walls' keeper (Landlock alone; under
    /// bubblewrap, bubblewrap is, and its pid namespace ends what is left).
    pub fn keeper_leads(&self) -> bool {
        self.bwrap.is_none() && self.landlock.is_some()
    }

    /// Whether any layer is here.
    pub fn any(&self) -> bool {
        self.bwrap.is_some() || self.landlock.is_some()
    }

    /// Which walls hold, in words (`bubblewrap and Landlock (ABI 7) with a seccomp filter`).
    pub fn describe(&self) -> String {
        let landlock = self
            .landlock
            .as_ref()
            .map(|l| format!("Landlock (ABI {}) with a seccomp filter", l.abi));
        match (&self.bwrap, landlock) {
            (Some(_), Some(landlock)) => format!("bubblewrap and {landlock}"),
            (Some(_), None) => "bubblewrap".to_owned(),
            (None, Some(landlock)) => format!("{landlock} alone"),
            (None, None) => "none".to_owned(),
        }
    }

    /// What the walls lack here, in words, when a layer is missing.
    pub fn lacks(&self) -> Option<String> {
        match (&self.bwrap, &self.landlock) {
            (Some(_), Some(_)) | (None, None) => None,
            (Some(_), None) => Some(format!(
                "{}; without it a step may signal processes outside its walls and make user \
                 namespaces",
                self.missing.join("; ")
            )),
            (None, Some(_)) => Some(format!(
                "{}; without it the repository is fenced by a shadow of its git dir and a \
                 compare-and-swap of the step's branch, not by mounts: the worktree's links \
                 to the repository are restored after each step, not held during it, and \
                 pathname sockets (an ssh agent's in another place) are not walled",
                self.missing.join("; ")
            )),
        }
    }
}

/// git-bmad's own executable, links followed (the hooks it installs name it so), when it is
/// git-bmad (a test harness that links the library is not).
pub fn own_executable() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let name = exe.file_name()?.to_string_lossy().into_owned();
    name.starts_with("git-bmad").then_some(exe)
}

/// Whether steps here run contained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// Contained by these layers.
    On(Layers),
    /// Not contained, for this reason (journaled with every step).
    Off(String),
}

impl Containment {
    /// `runners.sandbox` on this machine; `Err` (why not) when what it requires cannot be had.
    pub fn decide(mode: Sandbox) -> Result<Containment, String> {
        if mode == Sandbox::Off {
            return Ok(Containment::Off("runners.sandbox is off".into()));
        }
        Containment::decide_for(mode, Layers::here())
    }

    /// `runners.sandbox` on a machine that has `layers`.
    pub fn decide_for(mode: Sandbox, layers: Layers) -> Result<Containment, String> {
        let why = || layers.missing.join("; ");
        match mode {
            Sandbox::Off => Ok(Containment::Off("runners.sandbox is off".into())),
            Sandbox::Auto if !layers.any() => Ok(Containment::Off(why())),
            Sandbox::Required if !layers.any() => Err(why()),
            Sandbox::Bubblewrap if layers.bwrap.is_none() => {
                Err(format!("runners.sandbox requires bubblewrap: {}", why()))
            }
            Sandbox::Landlock if layers.landlock.is_none() => {
                Err(format!("runners.sandbox requires Landlock: {}", why()))
            }
            _ => Ok(Containment::On(layers)),
        }
    }

    /// The layers, when on.
    pub fn layers(&self) -> Option<&Layers> {
        match self {
            Containment::On(layers) => Some(layers),
            Containment::Off(_) => None,
        }
    }
}

/// The one command that lets bubblewrap work on this machine, as the machine refuses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enable {
    /// The command.
    pub command: String,
    /// Another way, with a wider effect.
    pub alternative: Option<String>,
    /// What each changes, in words.
    pub trade_off: String,
    /// The AppArmor profile `doctor --fix` writes and loads (its path, its text).
    profile: Option<(PathBuf, String)>,
}

/// Where Ubuntu keeps AppArmor profiles, and the switch that restricts user namespaces.
const APPARMOR_DIR: &str = "/etc/apparmor.d";
const APPARMOR_USERNS: &str = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";

/// What enables bubblewrap here, when it does not work: installed, allowed by AppArmor
/// (Ubuntu 24.04 and later), or allowed by the kernel's switches.
pub fn enable_bubblewrap_here() -> Option<Enable> {
    if available().is_ok() {
        return None;
    }
    let switch = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|v| v.trim().to_owned())
    };
    let bwrap = which::which("bwrap")
        .ok()
        .map(|path| std::fs::canonicalize(&path).unwrap_or(path));
    enable(
        bwrap.as_deref(),
        &Switches {
            apparmor_restricts: switch(APPARMOR_USERNS).as_deref() == Some("1"),
            userns_clone_off: switch("/proc/sys/kernel/unprivileged_userns_clone").as_deref()
                == Some("0"),
            no_user_namespaces: switch("/proc/sys/user/max_user_namespaces").as_deref()
                == Some("0"),
        },
    )
}

/// The kernel's switches that refuse an unprivileged user namespace.
#[derive(Clone, Copy, Debug, Default)]
struct Switches {
    /// AppArmor restricts them (Ubuntu 24.04 and later).
    apparmor_restricts: bool,
    /// Debian's own switch is off.
    userns_clone_off: bool,
    /// None may be made at all.
    no_user_namespaces: bool,
}

/// The AppArmor profile that lets bubblewrap at `bwrap` alone make user namespaces where
/// AppArmor restricts them (what Ubuntu 25.04 ships for it).
pub fn apparmor_profile(bwrap: &Path) -> String {
    format!(
        "abi <abi/4.0>,\ninclude <tunables/global>\n\nprofile bwrap {} flags=(unconfined) {{\n  \
         userns,\n  include if exists <local/bwrap>\n}}\n",
        bwrap.display()
    )
}

/// What enables bubblewrap (at `bwrap`, when installed) on a machine whose switches are
/// `switches`.
fn enable(bwrap: Option<&Path>, switches: &Switches) -> Option<Enable> {
    let Some(bwrap) = bwrap else {
        return Some(Enable {
            command: "sudo apt install bubblewrap".into(),
            alternative: Some("sudo dnf install bubblewrap".into()),
            trade_off: "bubblewrap adds mounts to the walls: each step then sees its own \
                        branch as the only writable ref"
                .into(),
            profile: None,
        });
    };
    if switches.apparmor_restricts {
        let path = PathBuf::from(APPARMOR_DIR).join("bwrap");
        let text = apparmor_profile(bwrap);
        return Some(Enable {
            command: format!(
                "printf '{}' | sudo tee {} && sudo apparmor_parser -r {}",
                text.replace('\n', "\\n"),
                path.display(),
                path.display()
            ),
            alternative: Some(
                "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0".into(),
            ),
            trade_off: "the profile (what Ubuntu 25.04 ships for bwrap) lets bubblewrap alone \
                        make user namespaces; the sysctl lets every program make them again, \
                        the kernel surface Ubuntu closed"
                .into(),
            profile: Some((path, text)),
        });
    }
    let sysctl = |setting: &str| Enable {
        command: format!("sudo sysctl -w {setting}"),
        alternative: None,
        trade_off: "every program may make user namespaces again".into(),
        profile: None,
    };
    if switches.userns_clone_off {
        return Some(sysctl("kernel.unprivileged_userns_clone=1"));
    }
    if switches.no_user_namespaces {
        return Some(sysctl("user.max_user_namespaces=15000"));
    }
    None
}

impl Enable {
    /// Write and load the AppArmor profile (as root); `None` when this way needs no profile.
    pub fn apply(&self) -> Option<Result<(), String>> {
        let (path, text) = self.profile.as_ref()?;
        let written = crate::fs::write_atomically(path, text.as_bytes(), Some(0o644))
            .map_err(|e| format!("could not write {}: {e}", path.display()));
        Some(written.and_then(|()| {
            let (code, _, err) =
                crate::runner::Program::new("apparmor_parser", ["-r".as_ref(), path.as_os_str()])
                    .output()
                    .map_err(|e| format!("apparmor_parser cannot be run: {e}"))?;
            match code {
                Some(0) => Ok(()),
                _ => Err(format!(
                    "apparmor_parser refused {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&err).trim()
                )),
            }
        }))
    }
}

/// Why bubblewrap cannot contain here, or `Ok` with its path. Asked once per process:
/// bubblewrap is looked for on `PATH` and run once in the walls every step gets.
pub fn available() -> Result<PathBuf, String> {
    static ANSWER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ANSWER.get_or_init(probe).clone()
}

fn probe() -> Result<PathBuf, String> {
    let program = which::which("bwrap").map_err(|_| {
        "bubblewrap is not installed (`bwrap` is not on PATH; Debian and Ubuntu: \
         `apt install bubblewrap`, Fedora: `dnf install bubblewrap`)"
            .to_owned()
    })?;
    let walls = Walls {
        mounts: private_places(None),
        network: false,
    };
    let args = command_line(&walls, Path::new("/"), Path::new("/bin/true"), &[]);
    let out = std::process::Command::new(&program)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{} cannot be run: {e}", program.display()))?;
    if out.status.success() {
        return Ok(program);
    }
    let why = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    Err(format!(
        "{} cannot make a sandbox here: {why} (unprivileged user namespaces may be off: \
         `sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04 and later an \
         AppArmor profile for bwrap)",
        program.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers(bwrap: bool, landlock: bool) -> Layers {
        let mut missing = Vec::new();
        if !bwrap {
            missing.push("bubblewrap: setting up uid map: Permission denied".to_owned());
        }
        if !landlock {
            missing.push("Landlock: the kernel has no Landlock".to_owned());
        }
        Layers {
            bwrap: bwrap.then(|| "/usr/bin/bwrap".into()),
            landlock: landlock.then(|| Landlock {
                abi: 6,
                helper: "/usr/bin/git-bmad".into(),
            }),
            missing,
        }
    }

    #[test]
    fn each_mode_takes_what_it_requires_and_auto_takes_what_there_is() {
        use Sandbox::*;
        let on = |mode, b, l| Containment::decide_for(mode, layers(b, l));
        assert!(matches!(on(Auto, false, true), Ok(Containment::On(_))));
        assert!(
            matches!(on(Auto, false, false), Ok(Containment::Off(why)) if why.contains("uid map"))
        );
        assert!(matches!(on(Required, false, true), Ok(Containment::On(_))));
        assert!(on(Required, false, false).is_err());
        let refused = on(Bubblewrap, false, true).unwrap_err();
        assert!(refused.contains("requires bubblewrap") && refused.contains("uid map"));
        assert!(matches!(
            on(Bubblewrap, true, false),
            Ok(Containment::On(_))
        ));
        assert!(on(Landlock, true, false).is_err());
        assert!(matches!(on(Off, true, true), Ok(Containment::Off(_))));
        // What each machine's walls are called, and what they lack.
        assert_eq!(
            layers(true, true).describe(),
            "bubblewrap and Landlock (ABI 6) with a seccomp filter"
        );
        assert!(layers(true, true).lacks().is_none());
        assert!(layers(false, true)
            .lacks()
            .is_some_and(|l| l.contains("not by mounts")));
        assert!(layers(true, false)
            .lacks()
            .is_some_and(|l| l.contains("signal")));
    }

    #[test]
    fn each_refusal_has_its_one_command() {
        let missing = enable(None, &Switches::default()).unwrap();
        assert!(missing.command.contains("apt install bubblewrap"));
        let bwrap = Path::new("/usr/bin/bwrap");
        let ubuntu = Switches {
            apparmor_restricts: true,
            ..Switches::default()
        };
        let profile = enable(Some(bwrap), &ubuntu).unwrap();
        let (path, text) = profile.profile.as_ref().unwrap();
        assert_eq!(path, Path::new("/etc/apparmor.d/bwrap"));
        assert!(
            text.contains("profile bwrap /usr/bin/bwrap flags=(unconfined)")
                && text.contains("userns,")
        );
        assert!(profile
            .command
            .contains("apparmor_parser -r /etc/apparmor.d/bwrap"));
        assert!(profile.command.starts_with("printf '") && !profile.command.contains('\n'));
        assert!(profile
            .alternative
            .unwrap()
            .contains("apparmor_restrict_unprivileged_userns=0"));
        let debian = Switches {
            userns_clone_off: true,
            ..Switches::default()
        };
        assert_eq!(
            enable(Some(bwrap), &debian).unwrap().command,
            "sudo sysctl -w kernel.unprivileged_userns_clone=1"
        );
        assert!(enable(Some(bwrap), &Switches::default()).is_none());
    }

    #[test]
    fn a_place_is_seen_as_its_deepest_mount_says() {
        let walls = Walls {
            mounts: vec![
                super::super::Mount::Hide("/home/u".into()),
                super::super::Mount::read_only("/home/u/.nvm"),
                super::super::Mount::Blank("/home/u/.nvm/token".into()),
                super::super::Mount::Writable {
                    source: "/s/home".into(),
                    target: "/home/u/.claude".into(),
                },
            ],
            network: true,
        };
        assert!(walls.shows(Path::new("/usr/bin/node")));
        assert!(walls.shows(Path::new("/home/u/.nvm/versions/node")));
        assert!(!walls.shows(Path::new("/home/u/.nvm/token")));
        assert!(!walls.shows(Path::new("/home/u/.local/bin/claude")));
        assert!(!walls.shows(Path::new("/home/u/.claude/local/claude")));
    }
}
