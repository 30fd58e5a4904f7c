//! The text of the hook shims: `sh` scripts that find the user's hook with builtins alone
//! and hand over to git-bmad's check, or only to the user's hook.

use std::path::Path;

use super::{Chain, MANAGED, MARKER};
use crate::session::SESSION_MARKER;

/// The shell that finds, with builtins alone, the worktree's git dir (`$gitdir`), the
/// repository's common dir (`$common`) and the user's hook of this name (`$hook`; empty when
/// it would be this very shim).
const LOCATE: &str = r#"gitdir=${GIT_DIR-}
if [ -z "$gitdir" ]; then
  if [ -f .git ]; then read -r gitdir < .git; gitdir=${gitdir#gitdir: }
  elif [ -d .git ]; then gitdir=.git
  else gitdir=.; fi
fi
case "$gitdir" in /*) ;; *) gitdir="$PWD/$gitdir" ;; esac
common=$gitdir
if [ -f "$gitdir/commondir" ]; then
  read -r common < "$gitdir/commondir"
  case "$common" in /*) ;; *) common="$gitdir/$common" ;; esac
fi
case "$chain" in
  "") hook="$common/hooks/$name" ;;
  /*) hook="$chain/$name" ;;
  "~/"*) hook="$HOME/${chain#"~/"}/$name" ;;
  *) hook="$PWD/$chain/$name" ;;
esac
[ "$hook" -ef "$0" ] && hook=
"#;

/// The shim for one hook. The checking ones run the git-bmad binary that installed them, by
/// absolute path: a `git-bmad` first on `PATH` could be anyone's (`PATH=./fake:$PATH git
/// commit`); when the recorded binary is gone the hook fails, saying how to reinstall,
/// rather than pass. The user's hook runs by its real path, so `$0` names it.
///
/// reference-transaction runs on every ref update, so its shim decides with shell builtins
/// alone (no process started) that an update is none of our business: any phase but
/// `prepared`; outside a session worktree while no agent run is live (the glob over the
/// markers of [`crate::policy::live_run`]); in a session worktree any update that touches
/// no local branch other than the session's own and none of git-bmad's refs. Only the rest
/// reaches git-bmad, which asks the kernel whether a marker's run is really live. The
/// session's git dir is `$GIT_DIR` when git was pointed at it from elsewhere.
pub(super) fn shim(name: &str, binary: &Path, chain: &Chain) -> String {
    let bin = crate::text::shell_quote(&binary.to_string_lossy());
    let chain = crate::text::shell_quote(chain.0.as_deref().unwrap_or(""));
    let mut header = format!(
        "#!/bin/sh\n{MARKER} ({name}): installed by `git bmad hooks install`;\n# `git bmad hooks uninstall` puts core.hooksPath back. Edits are overwritten.\n"
    );
    header.push_str(&format!("bin={bin}\n"));
    header.push_str(&format!(
        "# Your hooks: core.hooksPath before install (empty: the repository's hooks directory).\nchain={chain}\nname={name}\n{LOCATE}"
    ));
    if !MANAGED.contains(&name) {
        // A hook in the worktree is a file an agent could have written: when git-bmad's own
        // git fires it, git-bmad runs it (in walls, in a session worktree).
        return format!(
            r#"{header}[ -n "$hook" ] && [ -x "$hook" ] || exit 0
if [ -n "${{{own}-}}" ] && [ -z "${{{contained}-}}" ] && [ -x "$bin" ]; then
  case "$hook" in "$PWD"/*)
    GIT_BMAD_CHAINED_HOOK=$hook; export GIT_BMAD_CHAINED_HOOK
    exec "$bin" hook {name} "$@" ;;
  esac
fi
exec "$hook" "$@"
"#,
            own = crate::env::OWN_GIT,
            contained = crate::env::CONTAINED,
        );
    }
    let gone = format!(
        r#"if [ ! -x "$bin" ]; then
  echo "git-bmad: $bin, which installed this {name} hook, is gone: the check cannot run. Run \`git bmad hooks install\` with the git-bmad you use now." >&2
  exit 1
fi
if [ -n "$hook" ] && [ -x "$hook" ]; then GIT_BMAD_CHAINED_HOOK=$hook; export GIT_BMAD_CHAINED_HOOK
else unset GIT_BMAD_CHAINED_HOOK; fi
"#
    );
    if name != "reference-transaction" {
        return format!("{header}{gone}exec \"$bin\" hook {name} \"$@\"\n");
    }
    let marker = crate::policy::live_run::MARKER;
    format!(
        r#"{header}pass() {{ if [ -n "$hook" ] && [ -x "$hook" ]; then exec "$hook" "$@"; fi; exit 0; }}
[ "$1" = prepared ] || pass "$@"
session= own=
if [ -f "$gitdir/{SESSION_MARKER}" ]; then
  session=1
  {{ read -r own; read -r own; }} < "$gitdir/{SESSION_MARKER}"
fi
live=
for marker in "$common"/worktrees/*/{marker}; do [ -e "$marker" ] && live=1; break; done
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
  if [ -n "$hook" ] && [ -x "$hook" ]; then printf '%s' "$input" | "$hook" "$@"; exit $?; fi
  exit 0
fi
{gone}printf '%s' "$input" | "$bin" hook {name} "$@"
"#
    )
}

/// The git-bmad executables git-bmad's own shims run (their `bin=`), read from its own
/// folders (the repository's `bmad/hooks`, the user's global one), never from a hooks path a
/// worktree could hold: only an executable file named `git-bmad…` counts.
pub fn installed_binaries(repo: &crate::git::Repo) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    for scope in [super::Scope::Repository, super::Scope::Global] {
        let Ok(dir) = scope.dir(repo) else { continue };
        let bin = super::MANAGED
            .iter()
            .map(|name| dir.join(name))
            .filter(|path| super::is_ours(path))
            .find_map(|path| super::recorded(&path, "bin=").map(std::path::PathBuf::from));
        let Some(bin) = bin else { continue };
        let named = bin
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("git-bmad"));
        let runnable = std::fs::metadata(&bin)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if named && runnable && !found.contains(&bin) {
            found.push(bin);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shims_run_the_installer_by_path_never_one_from_path() {
        let s = shim(
            "pre-push",
            Path::new("/opt/it's/git-bmad"),
            &Chain(Some(".husky/_".into())),
        );
        assert!(s.starts_with("#!/bin/sh\n# git-bmad managed hook (pre-push)"));
        assert!(s.contains("bin='/opt/it'\\''s/git-bmad'\n"));
        assert!(s.contains("chain=.husky/_\n"));
        assert!(s.contains("exec \"$bin\" hook pre-push \"$@\""));
        assert!(!s.contains("command -v"));
        assert!(!s.contains("prepared"));
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("pre-push"), &s).expect("write");
        let shim_file = dir.path().join("pre-push");
        assert_eq!(
            super::super::recorded(&shim_file, "bin=").as_deref(),
            Some("/opt/it's/git-bmad")
        );
        assert_eq!(
            super::super::recorded(&shim_file, "chain=").as_deref(),
            Some(".husky/_")
        );
        let r = shim("reference-transaction", Path::new("/x"), &Chain(None));
        assert!(r.contains("[ \"$1\" = prepared ] || pass"));
        assert!(r.contains("bmad-session"));
        assert!(r.contains("for marker in \"$common\"/worktrees/*/bmad-agent-live; do"));
        assert!(r.contains("[ \"$ref\" = \"$own\" ] || check=1"));
        let through = shim("post-checkout", Path::new("/x"), &Chain(None));
        assert!(through.ends_with("exec \"$hook\" \"$@\"\n"));
        // Fired by git-bmad's own git, a hook in the worktree goes through git-bmad.
        assert!(
            through.contains("if [ -n \"${GIT_BMAD_OWN_GIT-}\" ] && [ -z \"${BMAD_CONTAINED-}\" ]")
                && through.contains("exec \"$bin\" hook post-checkout \"$@\""),
            "{through}"
        );
    }
}
