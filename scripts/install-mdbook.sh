#!/usr/bin/env bash
# Install mdBook, which builds the user guide in docs/ (CI builds it on every change), pinned,
# into target/mdbook/bin: `cargo install` from crates.io, without its `serve` and `search`
# features (a static build needs neither; about a minute on two cores).
# Usage: scripts/install-mdbook.sh   (idempotent: a stamp file names what is installed)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dest=${BMAD_MDBOOK:-$here/target/mdbook}
want="mdbook 0.5.4"
stamp="$dest/installed"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dest/bin/mdbook" ] && exit 0
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dest/bin/mdbook" ] && exit 0
cargo install --quiet --locked --no-default-features --version 0.5.4 --root "$dest" mdbook
echo "$want" > "$stamp"
