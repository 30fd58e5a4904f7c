# Sourced by the scripts/bench-*.sh scripts: the release build, a hermetic throwaway world,
# and the timing helpers. Sets: here, bin, work, HOME, PATH (with $work/bin first).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$here/target/release/git-bmad}
(cd "$here" && cargo build --release --quiet)

work=$(mktemp -d "${TMPDIR:-/tmp}/git-bmad-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
mkdir -p "$HOME" "$work/bin"
git config --global user.name Bench
git config --global user.email bench@example.com
export PATH="$work/bin:$PATH"

# Microseconds since the epoch, into the variable named $1: `now_us t0`. Not `t0=$(...)`,
# whose subshell would put a fork (0.4 ms here) into every interval timed.
now_us() { printf -v "$1" '%s' "${EPOCHREALTIME/./}"; }
# The median of the numbers on stdin, one per line.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The mean of the numbers on stdin, one per line: what a run's slow outliers cost on average.
mean() { awk '{s+=$1} END {printf "%d", s/NR}'; }
# Microseconds as milliseconds.
ms() { awk -v us="$1" 'BEGIN {printf "%.2f ms", us/1000}'; }

# A fake `claude` in $work/bin that exits at once (Claude Code's JSON result), and at $1 a
# project of 200 files with a 10-step playbook `ten` whose every step it does.
ten_step_project() {
  cat > "$work/bin/claude" <<'AGENT'
#!/bin/sh
mkdir -p out && : > "out/$BMAD_STEP"
printf '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1},"permission_denials":[]}\n'
AGENT
  chmod +x "$work/bin/claude"
  mkdir -p "$1/src" && (
    cd "$1" && git init -q -b main
    for i in $(seq 1 200); do printf 'fn f%s() {}\n' "$i" > "src/f$i.rs"; done
    mkdir -p .bmad/playbooks
    {
      echo "name: ten"
      echo "steps:"
      for i in $(seq 1 10); do echo "  - {id: s$i, command: step $i, postconditions: [{file_exists: out/s$i}]}"; done
    } > .bmad/playbooks/ten.yaml
    git add -A && git commit -q -m "project"
  )
}
