"""Fails when `cargo build -p ragbox` and `cargo test --workspace` resolve
different features for a crate both build: a clean `make test` then builds
that crate, and every crate above it, twice (libc's did: CI built wasmtime,
candle, tantivy and tokio twice). The fix is in host/Cargo.toml: turn the same
features on there."""

import re
import subprocess
import sys


def features(*args: str) -> dict[str, set[str]]:
    tree = subprocess.run(["cargo", "tree", "--prefix", "none", "-f", "{p} [{f}]", *args],
                          check=True, capture_output=True, text=True).stdout
    out: dict[str, set[str]] = {}
    for line in tree.splitlines():
        m = re.match(r"(\S+ v\S+)(?: \(.*?\))?(?: \(\*\))? \[(.*)\]", line.strip())
        if m:
            out.setdefault(m.group(1), set()).update(f for f in m.group(2).split(",") if f)
    return out


def main() -> int:
    build = features("-p", "ragbox", "-e", "normal,build")
    test = features("--workspace", "-e", "normal,build,dev")
    differ = {name: sorted(test[name] ^ build[name]) for name in build if name in test and build[name] != test[name]}
    for name, diff in sorted(differ.items()):
        print(f"{name}: features differ between `cargo build -p ragbox` and `cargo test --workspace`: {diff}")
    if differ:
        print("turn them on in host/Cargo.toml too, or make test builds these crates and all above them twice")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
