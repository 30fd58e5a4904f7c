#!/usr/bin/env bash
# Install git-bmad and its man pages, so that `git bmad …` and `git bmad --help` work.
# Usage: scripts/install.sh [PREFIX]   (default: $HOME/.local; binary in PREFIX/bin,
#        man pages in PREFIX/share/man/man1)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-${PREFIX:-$HOME/.local}}

cargo install --locked --quiet --path "$here" --root "$prefix"
mkdir -p "$prefix/share/man/man1"
# Regenerate from the installed binary, so the pages always match it.
"$prefix/bin/git-bmad" generate-man "$prefix/share/man/man1" >/dev/null

echo "Installed $prefix/bin/git-bmad and its man pages in $prefix/share/man/man1."
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "Add $prefix/bin to PATH so git finds it:  export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
if ! command -v bwrap >/dev/null 2>&1; then
  echo "Agents run contained with bubblewrap, which is not installed: scripts/install-bubblewrap.sh (or your system's bubblewrap package); \`git bmad doctor\` says whether containment works."
fi
if ! man -w git-bmad >/dev/null 2>&1; then
  echo "Add the man pages to MANPATH so \`git bmad --help\` finds them:  export MANPATH=\"$prefix/share/man:\$MANPATH\""
fi
