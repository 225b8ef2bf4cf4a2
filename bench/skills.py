"""What serving skills through MCP's Skills extension (SEP-2640) costs, over
raw JSON-RPC on stdio, on the real skills libraries (339 skills, 2,482 files):
a whole `skills/list` (every page, every file's SHA-256 computed from the
file as it is now) beside a whole `resources/list` (what a client walked
before), and loading one skill: `skills/get` beside `resources/read` of its
SKILL.md (by its SEP-2640 URI and by the `skill://NAME` of before) and
`resources/directory/read` of its folder.

    python bench/skills.py [--rounds N]   # RAGBOX_BIN: the binary (default target/release/ragbox)

The libraries are copied to a temporary workspace whose `.gitignore` leaves
only the SKILL.md files to index (the files beside them are served, not
embedded), indexed once. One `serve --standalone`; every URI is asked for
once per round. Results go to bench/results/skills.md.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKILLS = ROOT.parent / "shared" / "data" / "skills"


class Server:
    """`ragbox serve --standalone` on `ws`, driven line by line (2025-06-18)."""

    def __init__(self, binary: str, ws: Path):
        self.proc = subprocess.Popen([binary, "serve", "--standalone"], cwd=ws, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench-skills", "version": "1"}})
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict) -> tuple[dict, int, float]:
        """The result, the reply's bytes and the milliseconds it took."""
        self.id += 1
        started = time.perf_counter()
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            reply = json.loads(line)
            if reply.get("id") == self.id:
                break
        ms = (time.perf_counter() - started) * 1e3
        if "result" not in reply:
            sys.exit(f"{method} {params} failed: {reply}")
        return reply["result"], len(line.encode()), ms

    def walk(self, method: str) -> tuple[list, int, int, float]:
        """Every page of a list method: its items, pages, bytes and milliseconds."""
        items, pages, size, ms, cursor = [], 0, 0, 0.0, None
        key = "skills" if method == "skills/list" else "resources"
        while True:
            result, n, t = self.call(method, {"cursor": cursor} if cursor else {})
            items += result[key]
            pages, size, ms = pages + 1, size + n, ms + t
            cursor = result.get("nextCursor")
            if not cursor:
                return items, pages, size, ms

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    binary = os.environ.get("RAGBOX_BIN", str(ROOT / "target" / "release" / "ragbox"))
    ws = Path(tempfile.mkdtemp(prefix="ragbox-skills-"))
    shutil.copytree(SKILLS, ws / "skills")
    (ws / ".gitignore").write_text("*\n!*/\n!SKILL.md\n")
    subprocess.run([binary, "index"], cwd=ws, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Server(binary, ws)

    lists = {"skills/list": [], "resources/list": []}
    for _ in range(args.rounds):
        for method in lists:
            lists[method].append(server.walk(method))
    skills = lists["skills/list"][-1][0]
    files = sum(len(s["resources"]) for s in skills)
    bytes_hashed = sum(f["size"] for s in skills for f in s["resources"])
    loads = {"skills/get": [], "resources/read SKILL.md": [], "resources/read skill://NAME": [],
             "resources/directory/read (skill folder)": []}
    for _ in range(args.rounds):
        for s in skills:
            uri, name = s["uri"], s["frontmatter"]["name"]
            loads["skills/get"].append(server.call("skills/get", {"uri": uri})[2])
            loads["resources/read SKILL.md"].append(server.call("resources/read", {"uri": uri})[2])
            # The name of before reads only where one skill has it.
            if sum(1 for o in skills if o["frontmatter"]["name"] == name) == 1:
                loads["resources/read skill://NAME"].append(
                    server.call("resources/read", {"uri": f"skill://{name}"})[2])
            loads["resources/directory/read (skill folder)"].append(
                server.call("resources/directory/read", {"uri": uri.removesuffix("/SKILL.md")})[2])
    server.close()
    shutil.rmtree(ws)
    load = os.getloadavg()[0]

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor())
    flags = sorted({f for l in open("/proc/cpuinfo") if l.startswith("flags") for f in l.split(":", 1)[1].split()
                    if f.startswith(("avx", "fma", "f16c", "amx", "sha_ni"))})
    command = "python bench/skills.py" + (f" --rounds {args.rounds}" if args.rounds != 5 else "")
    shown_bin = os.environ.get("RAGBOX_BIN_SHOWN", "target/release/ragbox")
    lines = [
        "# Serving skills: MCP's Skills extension (SEP-2640) over raw JSON-RPC (stdio)\n",
        f"- command: `RAGBOX_BIN={shown_bin} {command}`",
        f"- machine: {cpu}, {os.cpu_count()} threads; CPU flags: {' '.join(flags)}; load average "
        f"{load:.1f} when the run ended (other work shares the CPUs)",
        f"- workspace: `../shared/data/skills` ({len(skills)} skills served, {files:,} files, "
        f"{bytes_hashed / 2**20:.1f} MiB hashed per listing), its SKILL.md files indexed once; one "
        f"`serve --standalone`; {args.rounds} rounds, each asking for every list once and every skill once\n",
        "## A whole listing (every page)\n",
        "| list | pages | bytes | ms, median of rounds | ms, slowest round |",
        "|---|---:|---:|---:|---:|",
    ]
    for method, walks in lists.items():
        items, pages, size, _ = walks[-1]
        times = [w[3] for w in walks]
        lines.append(f"| {method} ({len(items):,} entries) | {pages} | {size:,} | {statistics.median(times):.1f} | "
                     f"{max(times):.1f} |")
    lines += [
        "",
        "## Loading one skill",
        "",
        "| request | calls | p50 ms | p90 ms |",
        "|---|---:|---:|---:|",
    ]
    for label, ms in loads.items():
        lines.append(f"| {label} | {len(ms):,} | {statistics.median(ms):.2f} | {percentile(ms, 0.9):.2f} |")
    lines.append("")
    out = ROOT / "bench" / "results" / "skills.md"
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
