//! Installing the hook shims: into the directory git really uses (`core.hooksPath` honoured,
//! linked worktrees sharing the common one), never overwriting a hook that is not ours.
//!
//! A foreign hook is moved to `<name>.bmad-orig` and chained: `git bmad hook` runs it after
//! our check with the same arguments and the same stdin bytes, and its failure fails the
//! hook. Uninstall renames it back, so it is restored byte for byte. Shims are tiny `sh`
//! scripts calling `<the installing binary> hook <name>` by absolute path.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Error;
use crate::git::Repo;
use crate::session::SESSION_MARKER;

/// The hooks git-bmad installs.
pub const MANAGED: &[&str] = &[
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "pre-push",
    "reference-transaction",
];

/// The line that marks a hook file as ours (the only files ever overwritten or removed).
pub const MARKER: &str = "# git-bmad managed hook";

/// Where a chained foreign hook is kept.
pub const CHAINED_SUFFIX: &str = ".bmad-orig";

/// One managed hook slot.
#[derive(Clone, Debug, Serialize)]
pub struct HookSlot {
    /// The hook name.
    pub name: String,
    /// Its file.
    pub path: PathBuf,
    /// Whether our shim is there.
    pub installed: bool,
    /// A foreign hook occupies the slot (install would chain it).
    pub foreign: bool,
    /// The chained foreign hook, if any.
    pub chained: Option<PathBuf>,
}

/// The state of the hooks of a repository.
#[derive(Clone, Debug, Serialize)]
pub struct HooksStatus {
    /// The directory git runs hooks from, for this worktree.
    pub dir: PathBuf,
    /// `core.hooksPath`, if set (as configured, maybe relative).
    pub hooks_path: Option<String>,
    /// Each managed hook.
    pub hooks: Vec<HookSlot>,
    /// The git-bmad the installed hooks run (recorded at install).
    pub binary: Option<PathBuf>,
    /// Ways the hooks could be skipped, in words.
    pub risks: Vec<String>,
}

/// The effective hooks directory of the worktree `repo` was opened in.
pub fn hooks_dir(repo: &Repo) -> Result<PathBuf, Error> {
    Ok(repo.hooks_dir()?)
}

/// Install (or refresh) every shim; `binary` is the git-bmad they run.
///
/// Refused, unless `global`, when `core.hooksPath` comes from the global or system config:
/// that directory serves every repository on the machine, and one that never ran
/// `git bmad init` would get the policy too. Refused when the hooks directory holds files
/// git tracks: the shims would become changes to commit, naming a binary path teammates do
/// not have.
pub fn install(repo: &Repo, binary: &Path, global: bool) -> Result<HooksStatus, Error> {
    let dir = hooks_dir(repo)?;
    if let Some((scope, value)) = repo.config_scope("core.hooksPath")? {
        if !global && matches!(scope.as_str(), "global" | "system") {
            return Err(Error::SharedHooksPath { value, scope, dir });
        }
    }
    if dir.starts_with(repo.workdir()) && repo.tracks_files_under(&dir)? {
        return Err(Error::TrackedHooksDir { dir });
    }
    install_into(&dir, binary, repo.common_dir())?;
    status(repo)
}

fn install_into(dir: &Path, binary: &Path, common_dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("could not create", dir, e))?;
    for name in MANAGED {
        let path = dir.join(name);
        let backup = chained_path(&path);
        if exists(&path) && !is_ours(&path) {
            if exists(&backup) {
                return Err(Error::BackupInTheWay { hook: path, backup });
            }
            std::fs::rename(&path, &backup)
                .map_err(|e| Error::io("could not move aside", &path, e))?;
        }
        write_executable(&path, &shim(name, binary, common_dir))?;
    }
    Ok(())
}

/// Remove our shims and put back what they replaced.
pub fn uninstall(repo: &Repo) -> Result<HooksStatus, Error> {
    let dir = hooks_dir(repo)?;
    for name in MANAGED {
        let path = dir.join(name);
        if exists(&path) && is_ours(&path) {
            std::fs::remove_file(&path).map_err(|e| Error::io("could not remove", &path, e))?;
        }
        let backup = chained_path(&path);
        if exists(&backup) && !exists(&path) {
            std::fs::rename(&backup, &path)
                .map_err(|e| Error::io("could not restore", &backup, e))?;
        }
    }
    status(repo)
}

/// The managed hooks that are not ours in the worktree `repo` was opened in (none missing:
/// an empty list).
pub fn missing(repo: &Repo) -> Result<Vec<&'static str>, Error> {
    let dir = hooks_dir(repo)?;
    Ok(MANAGED
        .iter()
        .copied()
        .filter(|name| {
            let path = dir.join(name);
            !(exists(&path) && is_ours(&path))
        })
        .collect())
}

/// What is installed where, and what could bypass it.
pub fn status(repo: &Repo) -> Result<HooksStatus, Error> {
    let dir = hooks_dir(repo)?;
    let hooks_path = repo.local_config_values("core.hooksPath")?.pop();
    let hooks: Vec<HookSlot> = MANAGED
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let backup = chained_path(&path);
            let installed = exists(&path) && is_ours(&path);
            HookSlot {
                name: name.to_string(),
                foreign: exists(&path) && !installed,
                chained: exists(&backup).then_some(backup),
                installed,
                path,
            }
        })
        .collect();
    let mut risks = vec![
        "`git push --no-verify` skips the pre-push check (force pushes, protected branches, secrets in pushed commits): only the server can refuse it, see `git bmad policy export`".to_owned(),
        "`git -c core.hooksPath=<dir> …` runs git without these hooks: the agent guard refuses it, a shell outside the guard is not stopped".to_owned(),
        "writing refs without git (editing files under .git, other git implementations) runs no hooks; `git update-ref` does run reference-transaction".to_owned(),
    ];
    if let Some(p) = &hooks_path {
        if Path::new(p).is_relative() {
            risks.push(format!(
                "core.hooksPath={p} is relative: every worktree reads hooks from its own {p}; `git bmad start` copies them into new session worktrees"
            ));
        }
    }
    if hooks.iter().any(|h| !h.installed) {
        risks.push("some hooks are not installed: run `git bmad hooks install`".to_owned());
    }
    let binary = hooks
        .iter()
        .filter(|h| h.installed)
        .find_map(|h| recorded_binary(&h.path));
    if let Some(binary) = binary.as_ref().filter(|b| !is_executable(b)) {
        risks.push(format!(
            "the hooks run {}, which is gone: every checked commit and push fails until `git bmad hooks install` records the git-bmad you use now",
            binary.display()
        ));
    }
    Ok(HooksStatus {
        dir,
        hooks_path,
        hooks,
        binary,
        risks,
    })
}

/// Give a new session worktree the hooks of the main one when `core.hooksPath` is relative
/// (husky's `.husky/_` is gitignored, so a fresh worktree would run no hooks at all).
pub fn prepare_worktree(main: &Repo, worktree: &Path) -> Result<(), Error> {
    let Some(configured) = main.local_config_values("core.hooksPath")?.pop() else {
        return Ok(());
    };
    if Path::new(&configured).is_absolute() || configured.starts_with('~') {
        return Ok(());
    }
    let from = main.main_workdir()?.join(&configured);
    let to = worktree.join(&configured);
    if !from.is_dir() || to.exists() {
        return Ok(());
    }
    copy_dir(&from, &to)
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(to).map_err(|e| Error::io("could not create", to, e))?;
    let entries = std::fs::read_dir(from).map_err(|e| Error::io("could not read", from, e))?;
    for entry in entries.flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| Error::io("could not copy", &src, e))?;
        }
    }
    Ok(())
}

/// The binary a shim runs: its `bin=` line, as [`shim`] wrote it (shell-quoted).
fn recorded_binary(shim_file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(shim_file).ok()?;
    let quoted = text.lines().find_map(|l| l.strip_prefix("bin="))?;
    let path = match quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')) {
        Some(inner) => inner.replace("'\\''", "'"),
        None => quoted.to_owned(),
    };
    Some(PathBuf::from(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The chained hook of a hook file.
pub fn chained_path(hook: &Path) -> PathBuf {
    let mut name = hook.as_os_str().to_owned();
    name.push(CHAINED_SUFFIX);
    PathBuf::from(name)
}

fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

fn is_ours(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| {
        String::from_utf8_lossy(&bytes)
            .lines()
            .take(3)
            .any(|l| l.starts_with(MARKER))
    })
}

fn write_executable(path: &Path, text: &str) -> Result<(), Error> {
    crate::fs::write_atomically(path, text.as_bytes(), Some(0o755))
        .map_err(|e| Error::io("could not write", path, e))
}

/// The shim for one hook: it runs the git-bmad binary that installed it, by absolute path.
/// A `git-bmad` first on `PATH` could be anyone's (`PATH=./fake:$PATH git commit`); when the
/// recorded binary is gone the hook fails, saying how to reinstall, rather than pass.
///
/// reference-transaction runs on every ref update, so its shim decides with shell builtins
/// alone (no process started) that an update is none of our business: any phase but
/// `prepared`; outside a session worktree while no agent run is live (the glob over the
/// markers of [`super::live_run`] in `common_dir`); in a session worktree any update that
/// touches no local branch other than the session's own and none of git-bmad's refs. Only
/// the rest reaches git-bmad, which asks the kernel whether a marker's run is really live.
/// The session's git dir is `$GIT_DIR` when git was pointed at it from elsewhere.
fn shim(name: &str, binary: &Path, common_dir: &Path) -> String {
    let bin = crate::text::shell_quote(&binary.to_string_lossy());
    let header = format!(
        "#!/bin/sh\n{MARKER} ({name}): installed by `git bmad hooks install`;\n# `git bmad hooks uninstall` restores what was here before. Edits are overwritten.\nbin={bin}\n"
    );
    let gone = format!(
        r#"echo "git-bmad: $bin, which installed this {name} hook, is gone: the check cannot run. Run \`git bmad hooks install\` with the git-bmad you use now." >&2"#
    );
    if name != "reference-transaction" {
        return format!(
            r#"{header}if [ ! -x "$bin" ]; then
  {gone}
  exit 1
fi
export GIT_BMAD_HOOK_FILE="$0"
exec "$bin" hook {name} "$@"
"#
        );
    }
    let markers = format!(
        "{}/worktrees/*/{}",
        crate::text::shell_quote(&common_dir.to_string_lossy()),
        super::live_run::MARKER
    );
    format!(
        r#"{header}chained="$0{CHAINED_SUFFIX}"
pass() {{ if [ -x "$chained" ]; then exec "$chained" "$@"; fi; exit 0; }}
[ "$1" = prepared ] || pass "$@"
gitdir=${{GIT_DIR-}}
if [ -z "$gitdir" ] && [ -f .git ]; then read -r gitdir < .git; gitdir=${{gitdir#gitdir: }}; fi
case "$gitdir" in "" | /*) ;; *) gitdir="$PWD/$gitdir" ;; esac
session= own=
if [ -n "$gitdir" ] && [ -f "$gitdir/{SESSION_MARKER}" ]; then
  session=1
  {{ read -r own; read -r own; }} < "$gitdir/{SESSION_MARKER}"
fi
live=
for marker in {markers}; do [ -e "$marker" ] && live=1; break; done
[ -n "$session$live" ] || pass "$@"
input= check=
while read -r old new ref; do
  input="$input$old $new $ref
"
  case "$ref" in
    refs/heads/*) [ "$ref" = "$own" ] || check=1 ;;
    refs/bmad/*|refs/notes/bmad/*) [ -z "$session" ] || check=1 ;;
  esac
done
if [ -z "$check" ]; then
  if [ -x "$chained" ]; then printf '%s' "$input" | "$chained" "$@"; exit $?; fi
  exit 0
fi
if [ ! -x "$bin" ]; then
  {gone}
  exit 1
fi
export GIT_BMAD_HOOK_FILE="$0"
printf '%s' "$input" | "$bin" hook {name} "$@"
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shims_run_the_installer_by_path_never_one_from_path() {
        let s = shim(
            "pre-push",
            Path::new("/opt/it's/git-bmad"),
            Path::new("/r/.git"),
        );
        assert!(s.starts_with("#!/bin/sh\n# git-bmad managed hook (pre-push)"));
        assert!(s.contains("bin='/opt/it'\\''s/git-bmad'\n"));
        assert!(s.contains("exec \"$bin\" hook pre-push \"$@\""));
        assert!(!s.contains("command -v"));
        assert!(!s.contains("prepared"));
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("pre-push"), &s).expect("write");
        assert_eq!(
            recorded_binary(&dir.path().join("pre-push")),
            Some(PathBuf::from("/opt/it's/git-bmad"))
        );
        let r = shim(
            "reference-transaction",
            Path::new("/x"),
            Path::new("/r o/.git"),
        );
        assert!(r.contains("[ \"$1\" = prepared ] || pass"));
        assert!(r.contains("bmad-session"));
        assert!(r.contains("for marker in '/r o/.git'/worktrees/*/bmad-agent-live; do"));
        assert!(r.contains("[ \"$ref\" = \"$own\" ] || check=1"));
    }
}
