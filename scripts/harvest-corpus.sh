#!/usr/bin/env bash
# Copy real public BMAD projects into corpus/bmad/<owner>+<repo>/, their BMAD files unchanged
# at their paths, with SOURCE (repository, commit) and expect.json: what BMAD's own tools say
# of the project, written before git-bmad reads it (scripts/corpus-expect.py, run with
# v6.12's sprint_plan.py and its YAML library: scripts/install-bmad-releases.sh).
# Usage: scripts/harvest-corpus.sh MIRROR_ROOT owner+repo...
#   MIRROR_ROOT/<owner>+<repo>/repo is a git directory of the project (a clone's .git or a
#   bare mirror); its HEAD is what is copied.
# Kept: every sprint-status.yaml; every .md, .yaml and .json under the folders that hold
# the sprint status and the stories (_bmad-output/implementation-artifacts, docs/stories,
# docs/sprint-artifacts, ...); BMAD's module config. The sprint status and the config come
# first; a file over 64 KiB is left out (listed in SOURCE), and a project stops taking files
# at 320 KiB.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mirrors=$1
shift
"$here/scripts/install-bmad-releases.sh"
python="$here/target/bmad-releases/python/bin/python"
for name in "$@"; do
  git_dir="$mirrors/$name/repo"
  dest="$here/corpus/bmad/$name"
  commit=$(git --git-dir="$git_dir" rev-parse HEAD)
  rm -rf "$dest"
  mkdir -p "$dest"
  listing=$(git --git-dir="$git_dir" ls-tree -r -l HEAD)
  dirs=$(awk '{print $5}' <<<"$listing" | grep -E '(^|/)sprint-status\.ya?ml$' | xargs -r -n1 dirname | sort -u || true)
  extra='^(_bmad|bmad|\.bmad)/bmm/config\.yaml$|^\.bmad-core/core-config\.yaml$|(^|/)docs/stories/|(^|/)stories\.json$'
  budget=$((320 * 1024))
  skipped=()
  while read -r _ _ _ size path; do
    case "$path" in *.md|*.yaml|*.yml|*.json) ;; *) continue ;; esac
    wanted=0
    grep -qE "$extra" <<<"$path" && wanted=1
    for d in $dirs; do
      [ "$d" = . ] && { [[ "$path" != */* ]] && wanted=1; continue; }
      case "$path" in "$d"/*) wanted=1 ;; esac
    done
    [ "$wanted" = 1 ] || continue
    if [ "$size" -gt 65536 ] || [ "$size" -gt "$budget" ]; then
      skipped+=("$path ($size bytes)")
      continue
    fi
    budget=$((budget - size))
    mkdir -p "$dest/$(dirname "$path")"
    git --git-dir="$git_dir" cat-file blob "HEAD:$path" > "$dest/$path"
  done < <(grep -E 'sprint-status\.ya?ml$|/config\.yaml$|core-config\.yaml$' <<<"$listing"; grep -vE 'sprint-status\.ya?ml$|/config\.yaml$|core-config\.yaml$' <<<"$listing")
  {
    echo "repository: https://github.com/${name/+//}"
    echo "commit: $commit"
    echo "files: BMAD's own files of the project at that commit, unchanged at their paths"
    for s in "${skipped[@]}"; do echo "left out (size): $s"; done
  } > "$dest/SOURCE"
  "$python" "$here/scripts/corpus-expect.py" "$dest" > "$dest/expect.json"
  echo "harvest-corpus: $name at $commit: $(find "$dest" -type f | wc -l) files" >&2
done
