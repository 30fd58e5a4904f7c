//! Installing the hook shims. git-bmad's hooks live in a directory of their own and
//! `core.hooksPath` points there; each shim runs the user's hook of the same name from where
//! git found it before (the directory `core.hooksPath` named, in whichever config, or the
//! repository's `hooks`), by its real path, with the same arguments and stdin.
//!
//! Why a directory of our own rather than shims among the user's hooks: husky finds the hook
//! to run from `$0`, so a hook moved aside stops running; husky and lefthook regenerate their
//! files; a tracked `.githooks` would get our files as changes to commit; a global
//! `core.hooksPath` serves every repository on the machine. Here no user file is written,
//! renamed or removed, and uninstall, which puts `core.hooksPath` back, leaves every hook of
//! every worktree as it was, byte for byte.

use std::path::{Path, PathBuf};

use serde::Serialize;

mod shim;

use super::Error;
use crate::git::{ConfigFile, Repo};
pub use shim::installed_binaries;
use shim::shim;

/// The hooks that check something.
pub const MANAGED: &[&str] = &[
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "pre-push",
    "reference-transaction",
];

/// Every other hook git runs from the hooks directory (githooks(5)). Ours replaces the
/// user's, so each gets a shim that only runs the user's hook of that name.
const PASSED_THROUGH: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "post-index-change",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
];

/// Hooks git runs so often that a shim costs time even with nothing to chain (every index
/// write, the checkpoints' own included): passed through only when the user has one.
const OPTIONAL: &[&str] = &["post-index-change"];

/// The line that marks a hook file as ours (the only files ever overwritten or removed).
pub const MARKER: &str = "# git-bmad managed hook";

/// Where the `core.hooksPath` that install replaced is kept, in the same config file.
const BEFORE_KEY: &str = "bmad.hooksPathBefore";

/// Where an install before this scheme moved a user's hook; put back on sight.
const RENAMED_SUFFIX: &str = ".bmad-orig";

/// Who an install serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// This repository and its worktrees: `<common dir>/bmad/hooks`, local `core.hooksPath`.
    Repository,
    /// Every repository of this user: `~/.config/git-bmad/hooks`, global `core.hooksPath`.
    Global,
}

impl Scope {
    fn config_file(self) -> ConfigFile {
        match self {
            Scope::Repository => ConfigFile::Local,
            Scope::Global => ConfigFile::Global,
        }
    }

    /// The directory this scope's shims live in.
    pub fn dir(self, repo: &Repo) -> Result<PathBuf, Error> {
        match self {
            Scope::Repository => Ok(repo.common_dir().join("bmad/hooks")),
            Scope::Global => global_dir().ok_or(Error::NoHome),
        }
    }
}

fn global_dir() -> Option<PathBuf> {
    Some(crate::env::config_home()?.join("git-bmad/hooks"))
}

/// One managed hook slot.
#[derive(Clone, Debug, Serialize)]
pub struct HookSlot {
    /// The hook name.
    pub name: String,
    /// The file git runs.
    pub path: PathBuf,
    /// Whether it is our shim.
    pub installed: bool,
    /// Something else is there (hooks are not installed, or were displaced).
    pub foreign: bool,
    /// The user's hook our shim runs after its check, if there is one.
    pub chained: Option<PathBuf>,
}

/// The state of the hooks of a repository.
#[derive(Clone, Debug, Serialize)]
pub struct HooksStatus {
    /// The directory git runs hooks from, for this worktree.
    pub dir: PathBuf,
    /// `core.hooksPath` as configured, if set.
    pub hooks_path: Option<String>,
    /// The config file that sets it: `local`, `global`, `system`, `worktree`, `command`.
    pub hooks_path_scope: Option<String>,
    /// Where the user's own hooks are run from, for this worktree.
    pub chains: Option<PathBuf>,
    /// Each managed hook.
    pub hooks: Vec<HookSlot>,
    /// The git-bmad the installed hooks run (recorded at install).
    pub binary: Option<PathBuf>,
    /// Ways the hooks could be skipped, in words.
    pub risks: Vec<String>,
    /// What the last install or uninstall did that the user should know, in words.
    pub notices: Vec<String>,
}

/// Where the user's hooks are, as git would read the setting (it may be relative to the
/// worktree or start with `~/`); `None`: the repository's own `hooks` directory.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Chain(Option<String>);

impl Chain {
    /// The directory, for the worktree `repo` was opened in.
    fn resolve(&self, repo: &Repo) -> PathBuf {
        match self.0.as_deref() {
            None => repo.common_dir().join("hooks"),
            Some(p) => match p.strip_prefix("~/") {
                Some(rest) => crate::env::Var::Home
                    .path()
                    .map(|h| h.join(rest))
                    .unwrap_or_else(|| PathBuf::from(p)),
                None => repo.workdir().join(p),
            },
        }
    }

    fn is_relative(&self) -> Option<&str> {
        self.0
            .as_deref()
            .filter(|p| Path::new(p).is_relative() && !p.starts_with('~'))
    }
}

/// `core.hooksPath` and [`BEFORE_KEY`] in each config file, read with one git call.
struct Settings(Vec<(ConfigFile, String, String)>);

impl Settings {
    const HOOKS_PATH: &'static str = "core.hookspath";

    fn read(repo: &Repo) -> Result<Settings, Error> {
        Ok(Settings(repo.config_entries(
            "^(core\\.hookspath|bmad\\.hookspathbefore)$",
        )?))
    }

    /// The value `file` gives `key` (the last one it sets, as git reads it).
    fn get(&self, file: ConfigFile, key: &str) -> Option<String> {
        let key = key.to_lowercase();
        self.0
            .iter()
            .rev()
            .find(|(f, k, _)| *f == file && *k == key)
            .map(|(_, _, v)| v.clone())
    }

    fn hooks_path(&self, file: ConfigFile) -> Option<String> {
        self.get(file, Self::HOOKS_PATH)
    }

    fn before(&self, file: ConfigFile) -> Option<String> {
        self.get(file, BEFORE_KEY)
    }
}

/// Install (or refresh) the shims for `scope`; `binary` is the git-bmad they run.
pub fn install(repo: &Repo, binary: &Path, scope: Scope) -> Result<HooksStatus, Error> {
    let settings = Settings::read(repo)?;
    put_back_renamed_hooks(repo, &settings)?;
    let dir = scope.dir(repo)?;
    let file = scope.config_file();
    let before = match settings.hooks_path(file) {
        Some(v) if names(repo, &v, &dir) => settings.before(file),
        other => other,
    }
    .filter(|v| !names(repo, v, &dir));
    let chain = match &before {
        Some(v) => Chain(Some(v.clone())),
        None => chain_of_outer_scopes(repo, scope, &settings),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("could not create", &dir, e))?;
    let user_dir = chain.resolve(repo);
    for name in MANAGED.iter().chain(PASSED_THROUGH) {
        let path = dir.join(name);
        if OPTIONAL.contains(name) && !exists(&user_dir.join(name)) {
            if is_ours(&path) {
                std::fs::remove_file(&path).map_err(|e| Error::io("could not remove", &path, e))?;
            }
            continue;
        }
        write_executable(&path, &shim(name, binary, &chain))?;
    }
    repo.set_config_in(file, BEFORE_KEY, before.as_deref())?;
    repo.set_config_in(file, "core.hooksPath", Some(&dir.to_string_lossy()))?;
    let mut status = status(repo)?;
    status.notices = install_notices(repo, scope, &chain, &settings)?;
    Ok(status)
}

/// Where the user's hooks are when this scope's config file sets no `core.hooksPath`: the
/// one a wider config sets (a global `~/.githooks` keeps running here), unless that is
/// git-bmad's own global install, whose chain is then followed instead.
fn chain_of_outer_scopes(repo: &Repo, scope: Scope, settings: &Settings) -> Chain {
    let global = Scope::Global.dir(repo).ok();
    let Some((file, value)) = outer_files(scope)
        .iter()
        .find_map(|&f| settings.hooks_path(f).map(|v| (f, v)))
    else {
        return Chain(None);
    };
    if global.as_ref().is_some_and(|g| names(repo, &value, g)) {
        return Chain(settings.before(file));
    }
    Chain(Some(value))
}

/// The config files wider than `scope`'s, narrowest first.
fn outer_files(scope: Scope) -> &'static [ConfigFile] {
    match scope {
        Scope::Repository => &[ConfigFile::Global, ConfigFile::System],
        Scope::Global => &[ConfigFile::System],
    }
}

/// What the user should hear about where their own hooks are and who else is affected.
fn install_notices(
    repo: &Repo,
    scope: Scope,
    chain: &Chain,
    settings: &Settings,
) -> Result<Vec<String>, Error> {
    let mut notices = Vec::new();
    let user_dir = chain.resolve(repo);
    if let Some(value) = &chain.0 {
        notices.push(format!(
            "your hooks in {value} keep running after git-bmad's checks; nothing was written there"
        ));
    }
    if scope == Scope::Repository {
        let outer = outer_files(scope)
            .iter()
            .find_map(|&f| settings.hooks_path(f).map(|v| (f, v)));
        if let Some((file, value)) = outer {
            let name = if file == ConfigFile::Global {
                "global"
            } else {
                "system"
            };
            notices.push(format!(
                "core.hooksPath is {value} in the {name} config: git-bmad's hooks are installed for this repository only; `git bmad hooks install --global` would install them for every repository"
            ));
        }
    } else {
        notices.push(
            "installed for every repository of this user that sets no core.hooksPath of its own; `git bmad hooks uninstall --global` removes them".to_owned(),
        );
    }
    let in_worktree =
        user_dir.starts_with(repo.workdir()) && !user_dir.starts_with(repo.common_dir());
    if in_worktree && repo.tracks_files_under(&user_dir)? {
        notices.push(format!(
            "{} holds hooks git tracks: they run for everyone, git-bmad's shims are outside the worktree and not committed",
            user_dir.display()
        ));
    }
    Ok(notices)
}

/// Put `core.hooksPath` back as it was before install and remove the shims of `scope`.
pub fn uninstall(repo: &Repo, scope: Scope) -> Result<HooksStatus, Error> {
    let settings = Settings::read(repo)?;
    put_back_renamed_hooks(repo, &settings)?;
    let dir = scope.dir(repo)?;
    let file = scope.config_file();
    let before = settings.before(file);
    let mut notices = Vec::new();
    match settings.hooks_path(file) {
        Some(v) if names(repo, &v, &dir) => {
            repo.set_config_in(file, "core.hooksPath", before.as_deref())?;
        }
        Some(v) => notices.push(format!(
            "core.hooksPath was changed to {v} since install (husky's install does that); it is left as it is"
        )),
        None => {}
    }
    repo.set_config_in(file, BEFORE_KEY, None)?;
    for name in MANAGED.iter().chain(PASSED_THROUGH) {
        let path = dir.join(name);
        if is_ours(&path) {
            std::fs::remove_file(&path).map_err(|e| Error::io("could not remove", &path, e))?;
        }
    }
    // Only when empty: a file we did not write stays.
    let _ = std::fs::remove_dir(&dir);
    let mut status = status(repo)?;
    if status.hooks.iter().any(|h| h.installed) {
        notices.push(format!(
            "git-bmad's hooks in {} still run here: run `git bmad hooks uninstall --global` to remove them",
            status.dir.display()
        ));
    }
    status.notices = notices;
    Ok(status)
}

/// Whether the `core.hooksPath` value `value` names `dir`.
fn names(repo: &Repo, value: &str, dir: &Path) -> bool {
    let named = Chain(Some(value.to_owned())).resolve(repo);
    same_file(&named, dir)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Undo what installs before this scheme did: they wrote their shims among the user's hooks
/// and moved the user's hook to `<name>.bmad-orig`. Every directory such an install could
/// have used is visited (relative ones in every worktree); our old shims go, the user's hooks
/// return to their names.
fn put_back_renamed_hooks(repo: &Repo, settings: &Settings) -> Result<(), Error> {
    let mut dirs = vec![repo.common_dir().join("hooks")];
    let ours: Vec<PathBuf> = [Scope::Repository, Scope::Global]
        .iter()
        .filter_map(|s| s.dir(repo).ok())
        .collect();
    let mut worktrees = None;
    for (file, _, value) in &settings.0 {
        if *file == ConfigFile::System {
            continue;
        }
        let chain = Chain(Some(value.clone()));
        match chain.is_relative() {
            Some(rel) => {
                // Listed only when a relative path needs them: one git call.
                if worktrees.is_none() {
                    worktrees = Some(repo.worktrees()?);
                }
                let listed = worktrees.iter().flatten();
                dirs.extend(listed.map(|w| w.path.join(rel)));
            }
            None => dirs.push(chain.resolve(repo)),
        }
    }
    for dir in dirs {
        if ours.iter().any(|o| same_file(o, &dir)) {
            continue;
        }
        for name in MANAGED {
            let path = dir.join(name);
            let renamed = dir.join(format!("{name}{RENAMED_SUFFIX}"));
            if is_ours(&path) {
                std::fs::remove_file(&path).map_err(|e| Error::io("could not remove", &path, e))?;
            }
            if exists(&renamed) && !exists(&path) {
                std::fs::rename(&renamed, &path)
                    .map_err(|e| Error::io("could not restore", &renamed, e))?;
            }
        }
    }
    Ok(())
}

/// Put git-bmad's hooks back in front when something repointed `core.hooksPath` after
/// install (husky 9 does on every `npm install`, `lefthook install --reset-hooks-path` and
/// pre-commit's hint do); for a caller that found hooks [`missing`]. Installed here means
/// our directory still holds our shims, and uninstall removes them. The user's new hooks
/// directory is chained. `None` when not installed here, or the recorded binary is gone
/// (then the caller's warning says so).
pub fn repair(repo: &Repo) -> Result<Option<HooksStatus>, Error> {
    let own = Scope::Repository.dir(repo)?.join(MANAGED[0]);
    if !is_ours(&own) {
        return Ok(None);
    }
    let Some(binary) = recorded(&own, "bin=").map(PathBuf::from) else {
        return Ok(None);
    };
    if !is_executable(&binary) {
        return Ok(None);
    }
    install(repo, &binary, Scope::Repository).map(Some)
}

/// Make sure git-bmad's hooks guard the worktree `repo` was opened in: put them back in
/// front when something repointed `core.hooksPath` ([`repair`]); what the user must know
/// (a repair, hooks still missing), as lines to show.
pub fn guard(repo: &Repo) -> Vec<String> {
    let mut said = Vec::new();
    let mut missing = missing(repo);
    if missing.as_ref().is_ok_and(|m| !m.is_empty()) {
        match repair(repo) {
            Ok(Some(status)) => {
                said.push(format!(
                    "core.hooksPath had been changed since `git bmad hooks install`: git-bmad's hooks are back in front, and run your hooks in {}",
                    status.chains.as_deref().unwrap_or(&status.dir).display()
                ));
                missing = self::missing(repo);
            }
            Ok(None) => {}
            Err(e) => said.push(format!("could not put the policy hooks back: {e}")),
        }
    }
    match missing {
        Ok(missing) if missing.is_empty() => {}
        Ok(missing) => said.push(format!(
            "the policy hooks are not installed ({} missing): nothing refuses an agent's force push, push to a protected branch or committed secret. Run `git bmad hooks install` in the main worktree",
            missing.join(", ")
        )),
        Err(e) => said.push(format!("could not check the policy hooks: {e}")),
    }
    said
}

/// The managed hooks that are not ours in the worktree `repo` was opened in (none missing:
/// an empty list).
pub fn missing(repo: &Repo) -> Result<Vec<&'static str>, Error> {
    let dir = repo.hooks_dir()?;
    Ok(MANAGED
        .iter()
        .copied()
        .filter(|name| !is_ours(&dir.join(name)))
        .collect())
}

/// What is installed where, and what could bypass it.
pub fn status(repo: &Repo) -> Result<HooksStatus, Error> {
    let dir = repo.hooks_dir()?;
    let configured = repo.config_scope("core.hooksPath")?;
    let chain =
        recorded(&dir.join(MANAGED[0]), "chain=").map(|c| Chain((!c.is_empty()).then_some(c)));
    let chains = chain.as_ref().map(|c| c.resolve(repo));
    let hooks: Vec<HookSlot> = MANAGED
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let installed = is_ours(&path);
            HookSlot {
                name: name.to_string(),
                foreign: exists(&path) && !installed,
                chained: chains
                    .as_ref()
                    .map(|c| c.join(name))
                    .filter(|p| installed && exists(p)),
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
    let own = Scope::Repository.dir(repo)?;
    if hooks.iter().any(|h| !h.installed) {
        if is_ours(&own.join(MANAGED[0])) {
            let now = configured.as_ref().map_or("unset", |(_, v)| v.as_str());
            risks.push(format!(
                "core.hooksPath is now {now}, not git-bmad's {} (husky's install sets it on every `npm install`): run `git bmad hooks install` again; your hooks there keep running",
                own.display()
            ));
        } else {
            risks.push("some hooks are not installed: run `git bmad hooks install`".to_owned());
        }
    }
    let binary = hooks
        .iter()
        .filter(|h| h.installed)
        .find_map(|h| recorded(&h.path, "bin=").map(PathBuf::from));
    if let Some(binary) = binary.as_ref().filter(|b| !is_executable(b)) {
        risks.push(format!(
            "the hooks run {}, which is gone: every checked commit and push fails until `git bmad hooks install` records the git-bmad you use now",
            binary.display()
        ));
    }
    let (hooks_path_scope, hooks_path) = configured.unzip();
    Ok(HooksStatus {
        dir,
        hooks_path,
        hooks_path_scope,
        chains,
        hooks,
        binary,
        risks,
        notices: Vec::new(),
    })
}

/// Give a new session worktree the user's hooks when they live at a path relative to the
/// worktree (husky's `.husky/_` is gitignored, so a fresh worktree would have none).
pub fn prepare_worktree(main: &Repo, worktree: &Path) -> Result<(), Error> {
    let own = Scope::Repository.dir(main)?;
    let chain = match recorded(&own.join(MANAGED[0]), "chain=") {
        Some(c) => Chain((!c.is_empty()).then_some(c)),
        None => Chain(main.local_config_values("core.hooksPath")?.pop()),
    };
    let Some(relative) = chain.is_relative() else {
        return Ok(());
    };
    let from = main.main_workdir()?.join(relative);
    let to = worktree.join(relative);
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

/// A value a shim records on a line of its own (`bin=`, `chain=`), as [`shim`] wrote it
/// (shell-quoted).
fn recorded(shim_file: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(shim_file).ok()?;
    if !text.contains(MARKER) {
        return None;
    }
    let quoted = text.lines().find_map(|l| l.strip_prefix(key))?;
    Some(
        match quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')) {
            Some(inner) => inner.replace("'\\''", "'"),
            None => quoted.to_owned(),
        },
    )
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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
