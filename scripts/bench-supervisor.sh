#!/usr/bin/env bash
# Benchmark of the playbook supervisor (issue 4): overhead per step, excluding the agent's
# own time, on a 10-step playbook whose agent exits at once (a fake `claude` printing Claude
# Code's JSON result). Goal: <= 50 ms median per step.
#   ours:     `git bmad run` of the playbook in a fresh session, divided by 10
#   baseline: the same fake agent run 10 times in a row from a shell loop, divided by 10
# Overhead per step = ours - baseline: checkpoints before and after, journal events, the
# rendered journal, the artifact checks, the diff for stall detection.
# Usage: scripts/bench-supervisor.sh   (RUNS=N sessions; default 11)
runs=${RUNS:-11}
source "$(dirname "$0")/bench-common.sh"

repo="$work/proj"
ten_step_project "$repo"
cd "$repo"

: > "$work/ours"; : > "$work/base"
for r in $(seq 1 "$runs"); do
  "$bin" start "b$r" --playbook ten --quiet >/dev/null 2>&1
  cd "$work/proj.b$r"
  now_us t0; "$bin" run --quiet >/dev/null 2>&1; now_us t1
  echo $(( (t1 - t0) / 10 )) >> "$work/ours"
  now_us t0
  for i in $(seq 1 10); do BMAD_STEP="x$i" claude -p "step $i" --output-format json >/dev/null; done
  now_us t1
  echo $(( (t1 - t0) / 10 )) >> "$work/base"
  cd "$repo"
done
o=$(median < "$work/ours"); b=$(median < "$work/base")
echo "== supervisor, 10-step playbook, agent exits at once ($runs runs)"
printf 'git bmad run, per step        median %s\n' "$(ms "$o")"
printf 'agent alone, per step         median %s\n' "$(ms "$b")"
printf 'supervisor overhead per step  median %s   (goal <= 50 ms)\n' "$(ms $((o - b)))"
awk -v o="$o" -v b="$b" 'BEGIN {printf "ratio run/agent-only          %.1f\n", o/b}'
