#!/usr/bin/env bash
# Install the real agent CLIs the end-to-end suite drives (tests/test_real_cli.rs), at pinned
# versions, from the npm registry, into target/agent-clis (never into the user's PATH).
# Usage: scripts/install-agent-clis.sh   (idempotent: a stamp file names what is installed)
# The suite runs this itself when the CLIs are missing; CI runs it first so its time shows.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dest=${BMAD_AGENT_CLIS:-$here/target/agent-clis}
# Bump together with the scenarios in tests/test_real_cli.rs.
packages=(
  @anthropic-ai/claude-code@2.1.330
  @openai/codex@0.169.0
  @google/gemini-cli@0.61.0
  @qwen-code/qwen-code@0.24.4
  opencode-ai@1.18.33
  @mariozechner/pi-coding-agent@0.73.1
  @github/copilot@1.0.102
)
stamp="$dest/installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "install-agent-clis: npm is not on PATH (install Node.js 20+)" >&2; exit 1; }
mkdir -p "$dest"
lock="$dest/.lock"
exec 9>"$lock"
flock 9
# Another process may have finished while this one waited.
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ]; then
  exit 0
fi
npm install --prefix "$dest" --no-audit --no-fund --no-save --loglevel=error "${packages[@]}" >&2
for cli in claude codex gemini qwen opencode pi copilot; do
  "$dest/node_modules/.bin/$cli" --version >/dev/null || { echo "install-agent-clis: $cli does not run" >&2; exit 1; }
done
printf '%s' "${packages[*]}" > "$stamp"
echo "install-agent-clis: ${packages[*]} in $dest" >&2
