#!/usr/bin/env bash
# Install bubblewrap, which contains agent steps (runners.sandbox), from the system's
# packages when `bwrap` is not on the machine. Prints its path.
# Usage: scripts/install-bubblewrap.sh   (idempotent)
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
  command -v bwrap
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
if command -v apt-get >/dev/null; then
  exec 9>/tmp/git-bmad-install-bubblewrap.lock
  flock 9
  if ! command -v bwrap >/dev/null 2>&1; then
    $sudo apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq bubblewrap >&2
  fi
elif command -v dnf >/dev/null; then
  $sudo dnf install -y bubblewrap >&2
elif command -v pacman >/dev/null; then
  $sudo pacman -S --noconfirm bubblewrap >&2
else
  echo "install-bubblewrap: install your system's bubblewrap package (it provides bwrap)" >&2
  exit 1
fi
command -v bwrap
