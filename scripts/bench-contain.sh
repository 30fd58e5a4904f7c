#!/usr/bin/env bash
# Benchmark of containment (issue 36): what walls cost a step. The same 10-step playbook
# (an agent that exits at once: a fake `claude` printing Claude Code's JSON result) runs in
# two fresh sessions per round, one contained (`runners.sandbox: auto`, bubblewrap) and one
# not (`off`), alternating, in a repository with 200 files and 100 branches (each contained
# step copies the loose branches into its fence). Goal: <= 50 ms more per step.
# Usage: scripts/bench-contain.sh   (RUNS=N rounds; default 9; needs bwrap)
runs=${RUNS:-9}
source "$(dirname "$0")/bench-common.sh"
command -v bwrap >/dev/null || { echo "bench-contain: needs bwrap (scripts/install-bubblewrap.sh)" >&2; exit 1; }

repo="$work/proj"
ten_step_project "$repo"
cd "$repo"
for i in $(seq 1 100); do git branch "topic-$i"; done

# One session's run of the playbook under `mode`; microseconds per step on stdout.
per_step() {
  local mode=$1 name=$2
  git -C "$repo" config bmad.sandbox "$mode"
  "$bin" start "$name" --playbook ten --quiet >/dev/null 2>&1
  cd "$work/proj.$name"
  local t0 t1
  now_us t0; "$bin" run --quiet >/dev/null 2>&1 || { echo "bench-contain: the $mode run failed" >&2; exit 1; }; now_us t1
  cd "$repo"
  echo $(( (t1 - t0) / 10 ))
}

: > "$work/walled"; : > "$work/open"
for r in $(seq 1 "$runs"); do
  per_step auto "w$r" >> "$work/walled"
  per_step off "o$r" >> "$work/open"
done
# Every step of a contained run was contained, and no step of the other.
if "$bin" -C "$repo" journal w1 --json | grep -q '"uncontained"' \
  || ! "$bin" -C "$repo" journal o1 --json | grep -q '"uncontained"'; then
  echo "bench-contain: the runs were not what they say" >&2; exit 1
fi
w=$(median < "$work/walled"); o=$(median < "$work/open")
echo "== containment, 10-step playbook, agent exits at once ($runs rounds)"
printf 'contained, per step           median %s\n' "$(ms "$w")"
printf 'uncontained, per step         median %s\n' "$(ms "$o")"
printf 'containment cost per step     median %s   (goal <= 50 ms)\n' "$(ms $((w - o)))"
awk -v w="$w" -v o="$o" 'BEGIN {printf "ratio contained/uncontained   %.2f\n", w/o}'
