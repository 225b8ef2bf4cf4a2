"""Two builds side by side: `ragbox index` time and search latency.

For a change that should not move speed (a refactor, a crate split): each
round indexes 1,000 SciFact abstracts from nothing with each build (the
embedding cache off, so the encoder does the work), then runs budgets.py's
quiet case with it (100 `search` calls through the per-user service). The
builds alternate round by round on one machine, which is shared and noisy.
Writes bench/results/ab-search.md.

    python3 bench/ab_search.py BEFORE_BIN AFTER_BIN [--rounds N] [--label TEXT]
"""

import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import budgets  # noqa: E402  (standard library only: no venv needed)
from machine import cpu_flags, machine  # noqa: E402


def index_seconds(binary, workspace):
    """Seconds `binary index` takes on `workspace` from nothing, with no embedding cache."""
    shutil.rmtree(workspace / ".ragbox", ignore_errors=True)
    env = {**os.environ, "RAGBOX_EMBEDDING_CACHE": "off"}
    started = time.perf_counter()
    subprocess.run([binary, "index", "--workspace", workspace], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main():
    args = sys.argv[1:]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 3
    label = args[args.index("--label") + 1] if "--label" in args else ""
    before, after = (pathlib.Path(a) for a in args[:2])
    started = time.perf_counter()
    shutil.rmtree(budgets.SERVICE_DIR, ignore_errors=True)
    quiet, loud = budgets.quiet_workspace(), budgets.loud_workspace()
    runs = {"before": [], "after": []}
    for r in range(rounds):
        for name, binary in (("before", before), ("after", after)):
            seconds = index_seconds(binary, quiet)
            search = budgets.run(binary, "quiet", quiet, loud)
            runs[name].append({"index": seconds, **search})
            print(r, name, runs[name][-1], flush=True)
    med = {n: {k: statistics.median(x[k] for x in v) for k in ("index", "p50", "p99", "peak")} for n, v in runs.items()}
    out = [
        "# Two builds side by side: index time and search latency\n",
        f"- command: `python3 bench/ab_search.py {before} {after} --rounds {rounds}`"
        + (f" ({label})" if label else "") + f", {(time.perf_counter() - started) / 60:.1f} min",
        f"- machine: {machine()}; CPU flags: {cpu_flags()}",
        "- each round, each build: `ragbox index` of 1,000 SciFact abstracts from nothing "
        "(RAGBOX_EMBEDDING_CACHE=off), then 100 `search` calls (hybrid) through the per-user service; "
        "the builds alternate; medians of the rounds\n",
        "| build | index | search p50 | search p99 | service peak RSS |",
        "|---|---|---|---|---|",
    ]
    for name, binary in (("before", before), ("after", after)):
        m = med[name]
        out.append(f"| {name} (`{binary}`) | {m['index']:.1f} s | {m['p50']:.1f} ms | {m['p99']:.1f} ms "
                   f"| {m['peak']:.0f} MiB |")
    out.append("\nEvery round:\n")
    for name in ("before", "after"):
        out.append(f"- {name}: " + "; ".join(
            f"index {x['index']:.1f} s, p50 {x['p50']:.1f} ms, p99 {x['p99']:.1f} ms" for x in runs[name]))
    (ROOT / "bench" / "results" / "ab-search.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
