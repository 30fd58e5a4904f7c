#!/usr/bin/env bash
# Walk through a git-bmad session in a throwaway repository:
# init → start → edit → checkpoint → rollback → undo → journal → finish → doctor.
# Usage: scripts/walkthrough.sh [path/to/git-bmad]   (default: target/release/git-bmad)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/target/release/git-bmad}
[ -x "$bin" ] || { echo "no binary at $bin: run cargo build --release first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/git-bmad-walkthrough.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A hermetic git: nothing from the user's own configuration leaks in.
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
mkdir -p "$HOME"
git config --global user.name "Walkthrough"
git config --global user.email "walkthrough@example.com"
# `git bmad` finds the binary on PATH, as it will once installed.
mkdir -p "$work/bin" && ln -s "$bin" "$work/bin/git-bmad" && export PATH="$work/bin:$PATH"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

mkdir "$work/shop" && cd "$work/shop"
git init -q -b main
printf '# shop\n' > README.md
printf 'def total(items):\n    return sum(items)\n' > cart.py
printf '*.log\n' > .gitignore
git add -A && git commit -q -m "initial"

step git bmad init
git add .bmad && git commit -q -m "Set up git-bmad"
step git bmad start discounts
cd "$work/shop.discounts"

printf 'def total(items, discount=0):\n    return sum(items) * (1 - discount)\n' > cart.py
printf 'discount tests\n' > test_cart.py
printf 'agent scratch\n' > agent.log
step git bmad checkpoint -m "discount implemented"

printf 'def total(items):\n    raise RuntimeError("agent broke it")\n' > cart.py
rm README.md
step git bmad status
step git bmad rollback --dry-run 2
step git bmad rollback 2
echo "cart.py after rollback:"; cat cart.py
echo "agent.log (ignored) is untouched: $(cat agent.log)"
step git bmad undo
echo "cart.py after undo:"; cat cart.py
step git bmad journal
chain=$(git for-each-ref --format='%(refname)' refs/bmad/sessions/)
step git log -2 --format='%h %s%n%N' --notes='bmad/*' "$chain"
step git bmad finish
cd "$work/shop"
step git bmad list
step git bmad doctor
echo
echo "Walkthrough complete."
