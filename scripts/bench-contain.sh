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

cat > "$work/bin/claude" <<'AGENT'
#!/bin/sh
mkdir -p out && : > "out/$BMAD_STEP"
printf '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1},"permission_denials":[]}\n'
AGENT
chmod +x "$work/bin/claude"

repo="$work/proj"
mkdir -p "$repo/src" && cd "$repo" && git init -q -b main
for i in $(seq 1 200); do printf 'fn f%s() {}\n' "$i" > "src/f$i.rs"; done
{
  echo "name: ten"
  echo "steps:"
  for i in $(seq 1 10); do echo "  - {id: s$i, command: step $i, postconditions: [{file_exists: out/s$i}]}"; done
} > ten.yaml
mkdir -p .bmad/playbooks && mv ten.yaml .bmad/playbooks/
git add -A && git commit -q -m "project"
for i in $(seq 1 100); do git branch "topic-$i"; done

# One session's run of the playbook under `mode`; microseconds per step on stdout.
per_step() {
  local mode=$1 name=$2
  git -C "$repo" config bmad.sandbox "$mode"
  "$bin" start "$name" --playbook ten --quiet >/dev/null 2>&1
  cd "$work/proj.$name"
  local t0 t1
  t0=$(now_us); "$bin" run --quiet >/dev/null 2>&1 || { echo "bench-contain: the $mode run failed" >&2; exit 1; }; t1=$(now_us)
  cd "$repo"
  echo $(( (t1 - t0) / 10 ))
}

: > "$work/walled"; : > "$work/open"
for r in $(seq 1 "$runs"); do
  per_step auto "w$r" >> "$work/walled"
  per_step off "o$r" >> "$work/open"
done
# Every step of a contained run was contained.
if git -C "$repo" bmad journal -s w1 --json 2>/dev/null | grep -q '"uncontained"'; then
  echo "bench-contain: the contained run was not contained" >&2; exit 1
fi
w=$(median < "$work/walled"); o=$(median < "$work/open")
echo "== containment, 10-step playbook, agent exits at once ($runs rounds)"
printf 'contained, per step           median %s\n' "$(ms "$w")"
printf 'uncontained, per step         median %s\n' "$(ms "$o")"
printf 'containment cost per step     median %s   (goal <= 50 ms)\n' "$(ms $((w - o)))"
awk -v w="$w" -v o="$o" 'BEGIN {printf "ratio contained/uncontained   %.2f\n", w/o}'
