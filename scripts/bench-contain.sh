#!/usr/bin/env bash
# Benchmark of containment (issues 36, 54): what walls cost a step, per layer.
#   1. One launch: `git bmad contain --layers L -- true` in a session worktree, for each
#      layer alone (bubblewrap; Landlock with its seccomp filter), both stacked (auto), and
#      no walls (`none`, the same command path run as it is), in turns. Goal (issue 54):
#      Landlock alone <= 30 ms more than none.
#   2. A 10-step playbook (an agent that exits at once: a fake `claude` printing Claude
#      Code's JSON result) in fresh sessions, one per mode per round, in turns: uncontained
#      (`off`), stacked (`auto` with bubblewrap working), and Landlock alone (`auto` where
#      bubblewrap is refused as Ubuntu 24.04 refuses it), in a repository with 200 files and
#      100 branches (each contained step copies the loose branches into its fence). Goal:
#      <= 50 ms more per step.
# Usage: scripts/bench-contain.sh   (RUNS=N rounds; default 9; needs bwrap)
runs=${RUNS:-9}
source "$(dirname "$0")/bench-common.sh"
command -v bwrap >/dev/null || { echo "bench-contain: needs bwrap (scripts/install-bubblewrap.sh)" >&2; exit 1; }

repo="$work/proj"
ten_step_project "$repo"
cd "$repo"
for i in $(seq 1 100); do git branch "topic-$i"; done

# bubblewrap as a locked-down Ubuntu answers, in a folder put first on PATH for Landlock alone.
mkdir -p "$work/refused"
printf '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n' > "$work/refused/bwrap"
chmod +x "$work/refused/bwrap"

echo "== 1. one launch of \`true\` in the walls ($runs rounds, in turns)"
"$bin" start launch --quiet >/dev/null 2>&1
cd "$work/proj.launch"
layers=(none landlock bubblewrap auto)
for l in "${layers[@]}"; do : > "$work/launch-$l"; done
for r in $(seq 1 "$runs"); do
  for l in "${layers[@]}"; do
    now_us t0; "$bin" contain --quiet --layers "$l" -- true || { echo "bench-contain: --layers $l failed" >&2; exit 1; }; now_us t1
    echo $((t1 - t0)) >> "$work/launch-$l"
  done
done
base=$(median < "$work/launch-none")
printf '%-30s median %s\n' "no walls" "$(ms "$base")"
for l in landlock bubblewrap auto; do
  m=$(median < "$work/launch-$l")
  goal=""; [ "$l" = landlock ] && goal="   (goal <= 30 ms)"
  printf '%-30s median %s   added %s%s\n' "$l" "$(ms "$m")" "$(ms $((m - base)))" "$goal"
done
cd "$repo"

# One session's run of the playbook under `mode` (with PATH `path`); microseconds per step.
per_step() {
  local mode=$1 name=$2 path=$3
  git -C "$repo" config bmad.sandbox "$mode"
  "$bin" start "$name" --playbook ten --quiet >/dev/null 2>&1
  cd "$work/proj.$name"
  local t0 t1
  now_us t0; PATH="$path" "$bin" run --quiet >/dev/null 2>&1 || { echo "bench-contain: the $mode run failed" >&2; exit 1; }; now_us t1
  cd "$repo"
  echo $(( (t1 - t0) / 10 ))
}

: > "$work/stacked"; : > "$work/alone"; : > "$work/open"
for r in $(seq 1 "$runs"); do
  per_step auto "s$r" "$PATH" >> "$work/stacked"
  per_step auto "l$r" "$work/refused:$PATH" >> "$work/alone"
  per_step off "o$r" "$PATH" >> "$work/open"
done
# Each run was walled as it says, and the uncontained one not at all.
"$bin" -C "$repo" journal s1 --json | grep -q 'bubblewrap and Landlock' \
  && "$bin" -C "$repo" journal l1 --json | grep -q 'seccomp filter alone' \
  && "$bin" -C "$repo" journal o1 --json | grep -q '"uncontained"' \
  || { echo "bench-contain: the runs were not what they say" >&2; exit 1; }
s=$(median < "$work/stacked"); l=$(median < "$work/alone"); o=$(median < "$work/open")
echo "== 2. 10-step playbook, agent exits at once ($runs rounds)"
printf 'uncontained, per step          median %s\n' "$(ms "$o")"
printf 'bubblewrap + Landlock, per step median %s   added %s   (goal <= 50 ms)\n' "$(ms "$s")" "$(ms $((s - o)))"
printf 'Landlock alone, per step       median %s   added %s   (goal <= 50 ms)\n' "$(ms "$l")" "$(ms $((l - o)))"
awk -v s="$s" -v l="$l" -v o="$o" 'BEGIN {printf "ratio stacked/uncontained %.2f, Landlock alone/uncontained %.2f\n", s/o, l/o}'
