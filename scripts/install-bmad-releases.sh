#!/usr/bin/env bash
# Install released BMAD-Method scripts the tests run as BMAD's own tools (tests/
# test_bmad_releases.rs), pinned, into target/bmad-releases (never into a project): the npm
# package bmad-method@6.12.0, unpacked with no install script run, for its sprint-planning
# script sprint_plan.py (checked by its sha256), and a virtualenv with the one library that
# script needs, ruamel.yaml (PyPI).
# Usage: scripts/install-bmad-releases.sh   (idempotent: a stamp file names what is installed)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dest=${BMAD_RELEASES:-$here/target/bmad-releases}
bmad=bmad-method@6.12.0
ruamel=ruamel.yaml==0.19.1
# sprint_plan.py of 6.12.0 (the same bytes as 6.11.0's), as BMAD-METHOD #2871 names it.
sprint_plan_sha256=4c30f62c261599fc1da3fd319ea6ce5092aa0332221cedee1763a1040627e6bc
want="$bmad $ruamel"
stamp="$dest/installed"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
command -v npm >/dev/null || { echo "install-bmad-releases: npm is not on PATH (install Node.js 20+)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "install-bmad-releases: python3 is not on PATH" >&2; exit 1; }
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
rm -rf "$dest/6.12.0" "$dest/python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent --loglevel=error "$bmad" >/dev/null)
mkdir -p "$dest/6.12.0"
tar -xzf "$work"/bmad-method-6.12.0.tgz -C "$dest/6.12.0" --strip-components=1
script="$dest/6.12.0/src/bmm-skills/plan/bmad-sprint-planning/scripts/sprint_plan.py"
echo "$sprint_plan_sha256  $script" | sha256sum --check --quiet - ||
  { echo "install-bmad-releases: $script is not the sprint_plan.py of $bmad" >&2; exit 1; }
python3 -m venv "$dest/python"
"$dest/python/bin/pip" install --quiet --disable-pip-version-check "$ruamel" >&2
"$dest/python/bin/python" -c "import ruamel.yaml"
printf '%s' "$want" > "$stamp"
echo "install-bmad-releases: $want in $dest" >&2
