#!/usr/bin/env bash
# Install the real hook managers the coexistence tests install hooks with (tests/
# test_hook_managers.rs), at pinned versions, into target/hook-tools (never into the user's
# PATH or this repository's hooks): husky 9 and husky 4 (npm), lefthook (npm, native binary),
# pre-commit (PyPI, in a virtualenv). No install script of theirs runs here: husky 4's would
# install hooks into whatever repository it finds. The tests run each tool's installer in a
# repository of their own.
# Usage: scripts/install-hook-tools.sh   (idempotent: a stamp file names what is installed)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dest=${BMAD_HOOK_TOOLS:-$here/target/hook-tools}
husky9=husky@9.1.7
husky4=husky@4.3.8
lefthook=lefthook@2.2.2
precommit=pre-commit==4.7.0
want="$husky9 $husky4 $lefthook $precommit"
stamp="$dest/installed"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
command -v npm >/dev/null || { echo "install-hook-tools: npm is not on PATH (install Node.js 20+)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "install-hook-tools: python3 is not on PATH" >&2; exit 1; }
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
npm_install() {
  npm install --prefix "$dest/$1" --no-audit --no-fund --no-save --ignore-scripts --loglevel=error "$2" >&2
}
npm_install husky9 "$husky9"
npm_install husky4 "$husky4"
npm_install lefthook "$lefthook"
python3 -m venv "$dest/pre-commit"
"$dest/pre-commit/bin/pip" install --quiet --disable-pip-version-check "$precommit" >&2
"$dest/lefthook/node_modules/.bin/lefthook" version >/dev/null
"$dest/pre-commit/bin/pre-commit" --version >/dev/null
printf '%s' "$want" > "$stamp"
echo "install-hook-tools: $want in $dest" >&2
