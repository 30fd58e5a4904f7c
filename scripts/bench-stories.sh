#!/usr/bin/env bash
# Benchmark of the BMAD story reader (issue 5), against a baseline in the same run:
#   1. `git bmad stories list --json` over 1,000 story files and a 1,000-entry
#      sprint-status.yaml (goal < 200 ms; seed 001 allows 5 s)
#      baseline: `grep` reading the status line of every story file
#   2. `git bmad stories order --json` on the same project: load plus dependency ordering
#      (the ordering alone: `cargo bench --bench stories`, goal < 10 ms)
#   3. peak memory of `stories list` (goal < 64 MB)
# Usage: scripts/bench-stories.sh   (RUNS=N to change the sample count; default 21)
runs=${RUNS:-21}
source "$(dirname "$0")/bench-common.sh"

time_runs() { # file command...
  local out=$1; shift
  : > "$out"
  for _ in $(seq 1 "$runs"); do
    local t0 t1
    now_us t0; "$@" >/dev/null; now_us t1
    echo $((t1 - t0)) >> "$out"
  done
}

proj="$work/proj"
stories="$proj/_bmad-output/implementation-artifacts"
mkdir -p "$proj/_bmad/bmm" "$stories"
printf 'user_name: Bench\nimplementation_artifacts: "{project-root}/_bmad-output/implementation-artifacts"\n' > "$proj/_bmad/bmm/config.yaml"
statuses=(backlog ready-for-dev in-progress review done)
{
  echo "# generated: bench"
  echo "generated: 11-22-2026 10:00"
  echo "last_updated: 11-22-2026 10:00"
  echo "development_status:"
  for e in $(seq 1 20); do
    echo "  epic-$e: in-progress"
    for s in $(seq 1 50); do
      echo "  $e-$s-story-number-$s-of-epic-$e: ${statuses[$(( (e * 50 + s) % 5 ))]}"
    done
    echo "  epic-$e-retrospective: optional"
  done
} > "$stories/sprint-status.yaml"
for e in $(seq 1 20); do
  for s in $(seq 1 50); do
    dep=""
    if [ "$s" -gt 1 ]; then dep="---
depends_on: [$e-$((s - 1))-story-number-$((s - 1))-of-epic-$e]
---
"; fi
    cat > "$stories/$e-$s-story-number-$s-of-epic-$e.md" <<STORY
${dep}# Story $e.$s: Story number $s of epic $e

Status: ${statuses[$(( (e * 50 + s) % 5 ))]}

## Story

As a user, I want story $s, so that epic $e moves.

## Tasks / Subtasks

- [x] Task 1
  - [ ] Subtask 1.1
- [ ] Task 2

## Change Log

| Date | Version | Description | Author |
|---|---|---|---|
| 2026-11-01 | 0.1 | Drafted | SM |
STORY
  done
done
cd "$proj"
count=$("$bin" stories list --json | grep -c '"key"')
echo "== 1. stories list: $count stories, 1,000 story files, 1,000-entry sprint status"
time_runs "$work/ours" "$bin" stories list --json
time_runs "$work/base" grep -h '^Status:' -r "$stories"
o=$(median < "$work/ours"); b=$(median < "$work/base")
printf 'git bmad stories list --json   median %s   (%s runs; goal < 200 ms)\n' "$(ms "$o")" "$runs"
printf 'grep of every Status: line     median %s\n' "$(ms "$b")"
awk -v o="$o" -v b="$b" 'BEGIN {printf "ratio ours/baseline            %.2f\n", o/b}'

echo
echo "== 2. stories order (load + ordering of 1,000 stories with 980 dependencies)"
time_runs "$work/order" "$bin" stories order --json
printf 'git bmad stories order --json  median %s\n' "$(ms "$(median < "$work/order")")"
echo "(ordering alone, in process: cargo bench --bench stories)"

echo
echo "== 3. peak memory of stories list"
if [ -x /usr/bin/time ]; then
  kb=$( { /usr/bin/time -f '%M' "$bin" stories list --json >/dev/null; } 2>&1 | tail -1)
  awk -v kb="$kb" 'BEGIN {printf "peak RSS                       %.1f MB   (goal < 64 MB)\n", kb/1024}'
else
  echo "(skipped: /usr/bin/time is not installed; apt-get install time)"
fi
