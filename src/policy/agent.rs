//! Wiring the guard into agents' own hook settings: Claude Code's `.claude/settings.json`.
//!
//! The file is the user's: git-bmad adds one PreToolUse entry and removes exactly that entry
//! again, keeping every other setting and the order of keys as they were.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::Error;

use crate::runner::is_guard_group;
/// The command Claude Code runs before each shell tool call, and where the project's Claude
/// Code settings live (relative to a worktree): the adapter's, which reads them too.
pub use crate::runner::{CLAUDE_SETTINGS, GUARD_COMMAND};

/// Add the guard to `<worktree>/.claude/settings.json` (idempotent); returns the file.
pub fn install_claude(worktree: &Path) -> Result<PathBuf, Error> {
    let path = worktree.join(CLAUDE_SETTINGS);
    let mut settings = read(&path)?;
    let root = object(&mut settings, &path)?;
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(malformed(&path, "`hooks` is not an object"));
    };
    let pre = hooks.entry("PreToolUse").or_insert_with(|| json!([]));
    let Some(pre) = pre.as_array_mut() else {
        return Err(malformed(&path, "`hooks.PreToolUse` is not a list"));
    };
    if !pre.iter().any(is_guard_group) {
        pre.push(
            json!({"matcher": "Bash", "hooks": [{"type": "command", "command": GUARD_COMMAND}]}),
        );
    }
    write(&path, &settings)?;
    Ok(path)
}

/// Remove the guard entry again, and the containers that only held it.
pub fn uninstall_claude(worktree: &Path) -> Result<Option<PathBuf>, Error> {
    let path = worktree.join(CLAUDE_SETTINGS);
    if !path.exists() {
        return Ok(None);
    }
    let mut settings = read(&path)?;
    let root = object(&mut settings, &path)?;
    if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
        if let Some(pre) = hooks.get_mut("PreToolUse").and_then(Value::as_array_mut) {
            pre.retain(|group| !is_guard_group(group));
            if pre.is_empty() {
                hooks.remove("PreToolUse");
            }
        }
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    if root.is_empty() {
        // Nothing but our entry was there: leave no trace of it.
        std::fs::remove_file(&path).map_err(|e| Error::io("could not remove", &path, e))?;
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir); // only succeeds when empty
        }
        return Ok(Some(path));
    }
    write(&path, &settings)?;
    Ok(Some(path))
}

/// The guard as a hook command that runs `binary` itself, not whichever `git-bmad` PATH
/// finds first.
pub fn guard_command_for(binary: &Path) -> String {
    format!(
        "{} guard",
        crate::text::shell_quote(&binary.to_string_lossy())
    )
}

fn read(path: &Path) -> Result<Value, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(json!({})),
        Ok(text) => serde_json::from_str(&text).map_err(|e| malformed(path, &e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(Error::io("could not read", path, e)),
    }
}

fn object<'v>(value: &'v mut Value, path: &Path) -> Result<&'v mut Map<String, Value>, Error> {
    value
        .as_object_mut()
        .ok_or_else(|| malformed(path, "the top level is not an object"))
}

fn malformed(path: &Path, why: &str) -> Error {
    Error::io(
        "refusing to edit",
        path,
        std::io::Error::other(format!(
            "it is not settings JSON git-bmad understands ({why}); fix or move it first"
        )),
    )
}

fn write(path: &Path, value: &Value) -> Result<(), Error> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::io("could not write", path, std::io::Error::other(e)))?;
    text.push('\n');
    crate::fs::write_atomically(path, text.as_bytes(), None)
        .map_err(|e| Error::io("could not write", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude_guard_installed(worktree: &Path) -> bool {
        crate::runner::Kind::parse("claude")
            .expect("an adapter")
            .adapter()
            .guard_hooked(worktree)
    }

    #[test]
    fn a_run_knows_when_the_project_already_runs_the_guard() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(!claude_guard_installed(dir.path()));
        install_claude(dir.path()).expect("install");
        assert!(claude_guard_installed(dir.path()));
        uninstall_claude(dir.path()).expect("uninstall");
        // Written by hand with this binary's own path, in the local settings: found too.
        let command = guard_command_for(Path::new("/opt/it's/git-bmad"));
        assert_eq!(command, "'/opt/it'\\''s/git-bmad' guard");
        let local = json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}
        ]}});
        std::fs::create_dir_all(dir.path().join(".claude")).expect("dir");
        std::fs::write(
            dir.path().join(".claude/settings.local.json"),
            local.to_string(),
        )
        .expect("write");
        assert!(claude_guard_installed(dir.path()));
    }
}
