#!/usr/bin/env bash
# Load every BMAD / spec-kit file under the given directories with git-bmad's loaders (sprint
# status, story files, stories.json, spec-kit tasks and feature.json, BMAD module config) and
# print one line per file: ok, warning or error with file:line. Exit 1 on any error.
# Usage: scripts/conformance.sh <dir>...   (CI runs it on ../shared/corpus when it exists)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
  echo "usage: scripts/conformance.sh <dir>..." >&2
  exit 2
fi
bin=${BIN:-}
if [ -z "$bin" ]; then
  (cd "$here" && cargo build --quiet)
  bin="$here/target/debug/git-bmad"
fi
exec "$bin" conformance "$@"
