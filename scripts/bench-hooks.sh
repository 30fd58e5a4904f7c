#!/usr/bin/env bash
# What the policy hooks cost, against the same work without them, in one run:
#   1. 50 fast-forward pushes to a local bare remote     goal: pre-push adds <= 10 ms (median)
#   2. 300 `git update-ref` of unprotected refs, in the main worktree and in a session
#      worktree                                          goal: the shim adds <= 1 ms per update
# Usage: scripts/bench-hooks.sh   (PUSHES=N, UPDATES=N to change the counts)
pushes=${PUSHES:-50}
updates=${UPDATES:-300}
source "$(dirname "$0")/bench-common.sh"
ln -s "$bin" "$work/bin/git-bmad"

# Two identical repositories, each with its own bare remote; only one has the hooks.
setup() {
  local name=$1
  git init -q --bare -b main "$work/$name-remote.git"
  git init -q -b main "$work/$name" && cd "$work/$name"
  echo "$name" > README.md && git add -A && git commit -q -m initial
  git remote add origin "$work/$name-remote.git"
  git push -q origin main
  git checkout -q -b feature && git push -q origin feature
}
setup plain
setup guarded
git bmad hooks install >/dev/null
# A third with only the reference-transaction shim, to tell the two hooks' costs apart.
setup refonly
git bmad hooks install >/dev/null
rm "$(git rev-parse --path-format=absolute --git-path hooks)/pre-push"

echo "== 1. $pushes fast-forward pushes"
: > "$work/plain.t"; : > "$work/guarded.t"; : > "$work/refonly.t"
for i in $(seq "$pushes"); do
  for name in plain guarded refonly; do
    cd "$work/$name"
    echo "$i" >> README.md && git commit -q -am "change $i" --no-verify
    now_us t0; git push -q origin feature; now_us t1
    echo $((t1 - t0)) >> "$work/$name.t"
  done
done
p=$(median < "$work/plain.t"); g=$(median < "$work/guarded.t"); r=$(median < "$work/refonly.t")
echo "push without hooks             median $(ms "$p")"
echo "push, reference-transaction    median $(ms "$r")"
echo "push, all hooks                median $(ms "$g")"
awk -v p="$p" -v g="$g" -v r="$r" 'BEGIN {
  printf "added by pre-push              %.2f ms (goal <= 10 ms)\n", (g-r)/1000
  printf "added by reference-transaction %.2f ms (two phases: prepared, committed)\n", (r-p)/1000
  printf "all hooks: ratio %.2f\n", g/p }'

echo
echo "== 2. $updates update-ref calls on unprotected refs"
cd "$work/guarded"
git bmad start bench --quiet >/dev/null
session="$work/guarded.bench"
head=$(git rev-parse HEAD)
time_updates() {  # dir, hooks path, label
  local dir=$1 hooks=$2 t0 t1
  cd "$dir"
  now_us t0
  for i in $(seq "$updates"); do git -c core.hooksPath="$hooks" update-ref "refs/bench/r$i" "$head"; done
  now_us t1
  echo $(( (t1 - t0) / updates ))
}
hooks_dir=$(cd "$work/guarded" && git rev-parse --path-format=absolute --git-path hooks)
empty="$work/no-hooks" && mkdir -p "$empty"
# The floor: what any hook costs here, an `exit 0` script git has to start.
noop="$work/noop-hooks" && mkdir -p "$noop"
printf '#!/bin/sh\nexit 0\n' > "$noop/reference-transaction" && chmod +x "$noop/reference-transaction"
for place in main session; do
  dir="$work/guarded"; [ "$place" = session ] && dir="$session"
  base=$(time_updates "$dir" "$empty")
  floor=$(time_updates "$dir" "$noop")
  with=$(time_updates "$dir" "$hooks_dir")
  echo "$place worktree: update-ref $(ms "$base") without hooks, $(ms "$floor") with an empty hook, $(ms "$with") with the shim"
  awk -v b="$base" -v f="$floor" -v w="$with" 'BEGIN {printf "  added per update %.3f ms (goal <= 1 ms), of which starting any hook %.3f ms; the shim over an empty hook %.3f ms\n", (w-b)/1000, (f-b)/1000, (w-f)/1000}'
done
