#!/usr/bin/env bash
# Install a headless browser for the report's page test (tests/test_report.rs): Debian's
# Chromium, from the system's packages, when no Chromium is on the machine. Prints the
# browser's path. Usage: scripts/install-chromium.sh   (idempotent)
set -euo pipefail
for b in "${BMAD_CHROMIUM:-}" chromium chromium-browser google-chrome; do
  if [ -n "$b" ] && command -v "$b" >/dev/null 2>&1; then
    command -v "$b"
    exit 0
  fi
done
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
command -v apt-get >/dev/null || { echo "install-chromium: no apt-get here; install Chromium and set BMAD_CHROMIUM to its path" >&2; exit 1; }
exec 9>/tmp/git-bmad-install-chromium.lock
flock 9
if ! command -v chromium >/dev/null 2>&1; then
  $sudo apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
fi
command -v chromium
