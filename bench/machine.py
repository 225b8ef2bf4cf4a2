"""The machine a benchmark ran on, as every result records it (standard
library only, so that scripts run before any venv exists can use it)."""

import os
import platform


def cpu_flags():
    """The CPU's vector and matrix flags, as every benchmark result records them."""
    return " ".join(sorted({f for line in open("/proc/cpuinfo") if line.startswith("flags")
                            for f in line.split(":", 1)[1].split() if f.startswith(("avx", "fma", "f16c", "amx"))}))


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    return f"{cpu}, {os.cpu_count()} threads, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
