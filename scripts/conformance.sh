#!/usr/bin/env bash
# Load every BMAD / spec-kit file under the given directories with git-bmad's loaders (sprint
# status, story files, stories.json, spec-kit tasks and feature.json, BMAD module config,
# workflows: workflow.yaml, instructions, workflow.md, SKILL.md, step files; templates) and
# print one line per file: ok, warning or error with file:line. Exit 1 on any error.
# Where a directory holds BMAD v6.0.4's dev-story, also check that it reads as 10 steps.
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
"$bin" conformance "$@"
for dir in "$@"; do
  dev_story="$dir/bmad/v6.0.4/src/bmm/workflows/4-implementation/dev-story/workflow.yaml"
  [ -f "$dev_story" ] || continue
  steps=$("$bin" workflow show --json "$dev_story" | grep -c '"n": ')
  if [ "$steps" != 10 ]; then
    echo "error    $dev_story: workflow show reports $steps steps, BMAD's dev-story has 10" >&2
    exit 1
  fi
  echo "ok       $dev_story: workflow show --json reports 10 steps"
done
