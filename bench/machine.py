"""The machine a benchmark ran on, as every result records it, and the
cargo registry's unpacked crates on it, a real tree several benchmarks index
(standard library only, so that scripts run before any venv exists can use it)."""

import os
import platform
import sys
from pathlib import Path


def cpu_flags():
    """The CPU's vector and matrix flags, as every benchmark result records them."""
    return " ".join(sorted({f for line in open("/proc/cpuinfo") if line.startswith("flags")
                            for f in line.split(":", 1)[1].split() if f.startswith(("avx", "fma", "f16c", "amx"))}))


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    return f"{cpu}, {os.cpu_count()} threads, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"


def registry_tree() -> Path:
    """The crates unpacked under $CARGO_HOME/registry/src (its first registry's folder)."""
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    found = sorted((home / "registry" / "src").glob("*"))
    if not found:
        sys.exit(f"no unpacked crates under {home / 'registry' / 'src'}: pass --tree DIR")
    return found[0]
