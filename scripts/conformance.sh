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
  shown=$("$bin" workflow show --json "$dev_story")
  steps=$(grep -c '"n": ' <<<"$shown")
  if [ "$steps" != 10 ]; then
    echo "error    $dev_story: workflow show reports $steps steps, BMAD's dev-story has 10" >&2
    exit 1
  fi
  # The tag inventory of research/bmad-formats.md §12 scenario 3.
  for want in '"action": 124' '"check": 30' '"critical": 18' '"output": 14' '"ask": 4' \
              '"goto": 6' '"anchor": 1' '"action@if": 14' '"goto@step": 3' '"goto@anchor": 3'; do
    if ! grep -qF "$want" <<<"$shown"; then
      echo "error    $dev_story: expected $want in the tag counts" >&2
      exit 1
    fi
  done
  echo "ok       $dev_story: 10 steps, 124 action, 30 check, 18 critical, 14 output, 4 ask, 6 goto, 1 anchor"
  # Scenario 4: sprint-planning keeps document order; scenario 5: the SKILL.md shim.
  sprint="$dir/bmad/v6.0.4/src/bmm/workflows/4-implementation/sprint-planning/instructions.md"
  order=$("$bin" workflow show --json "$sprint" | grep '"n": ' | sed 's/.*"n": "\(.*\)".*/\1/' | tr '\n' ' ')
  if [ "$order" != "1 0.5 2 3 4 5 " ]; then
    echo "error    $sprint: step order is '$order', the file's is 1 0.5 2 3 4 5" >&2
    exit 1
  fi
  echo "ok       $sprint: steps in document order 1 0.5 2 3 4 5"
  skill="$dir/bmad/HEAD-67d876f1/src/bmm-skills/v6-shims/bmad-dev-story/SKILL.md"
  shown=$("$bin" workflow show --json "$skill")
  if [ "$(grep -c '"n": ' <<<"$shown")" != 10 ] || ! grep -qF '"action": 132' <<<"$shown"; then
    echo "error    $skill: expected 10 steps and 132 actions in the embedded <workflow>" >&2
    exit 1
  fi
  echo "ok       $skill: embedded <workflow>, 10 steps, 132 actions"
done
