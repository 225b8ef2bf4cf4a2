#!/usr/bin/env bash
# How long our own crates take to build from clean, and to rebuild after a
# one-line change in the MCP layer (host/src/mcp/server.rs), in the checkout
# this runs in (dependencies already built: they are the same before and
# after any change to our crates). Prints one line per build.
#   bench/build_times.sh LABEL [more packages to clean, e.g. -p ragbox-engines]
set -euo pipefail
cd "$(dirname "$0")/.."
label=$1; shift
echo "== $label $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
cargo build -p ragbox -q
cargo clean -p ragbox "$@" -q
/usr/bin/time -f "clean (our crates) %e s wall %U s user" cargo build -p ragbox -q
file=host/src/mcp/server.rs
cp "$file" "$file.orig"
trap 'mv "$file.orig" "$file"' EXIT
for i in 1 2 3; do
    # A string the server logs, changed: the crate's code changes, not only its spans.
    sed -i "s/\"warmed up[0-9]*\"/\"warmed up$i\"/" "$file"
    /usr/bin/time -f "one-line edit in mcp/, #$i %e s wall %U s user" cargo build -p ragbox -q
done
