"""What one tool call costs an agent: latency of each tool call over raw
JSON-RPC on stdio, first call of a session and p50, with the host's own
account of each call (time by stage, capability calls, store opens), for one
binary or two side by side (`--before OLD_BINARY`).

    python bench/calls.py [--docs N] [--pad N] [--calls N] [--settle S] [--before BIN]   # RAGBOX_BIN: the binary

The workspace is the first N SciFact abstracts (one Markdown file each),
plus --pad empty files (indexed, no chunks: a workspace of that many files
for the calls that walk or list, without hours of embedding), indexed once
by RAGBOX_BIN. The first call comes S seconds after
`initialized` (default 2), as an agent's first question comes after its own
start-up. Results go to bench/results/calls.md (calls-N.md for other N).
"""

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
QUERIES = ["protein folding in bacteria", "vitamin D deficiency", "tumor suppressor genes", "insulin resistance",
           "microRNA regulation", "antibiotic resistance in hospitals", "sleep and memory consolidation"]
CASES = [
    ("search fulltext", "search", lambda q: {"query": q, "search_type": "fulltext"}),
    ("search semantic", "search", lambda q: {"query": q, "search_type": "semantic"}),
    ("search hybrid", "search", lambda q: {"query": q, "search_type": "hybrid"}),
    ("search_semantic", "search_semantic", lambda q: {"query": q, "n_results": 5}),
    ("list_sources limit 10", "list_sources", lambda q: {"limit": 10}),
    ("get_embedding_status", "get_embedding_status", lambda q: {}),
]


def workspace(docs: int, pad: int) -> Path:
    ws = Path(tempfile.mkdtemp(prefix="ragbox-calls-"))
    (ws / "docs").mkdir()
    for i in range(pad):
        folder = ws / "pad" / f"{i // 1000:03}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i % 1000:04}.md").touch()
    with open(SCIFACT / "corpus.jsonl") as f:
        for i, line in enumerate(f):
            if i >= docs:
                break
            d = json.loads(line)
            (ws / "docs" / f"{d['_id']}.md").write_text(f"# {d['title']}\n\n{d['text']}\n")
    return ws


def measure(binary: str, ws: Path, calls: int, settle: float) -> list[tuple[str, float, float, str]]:
    """(case, first call ms, p50 ms, the host's stages of the last call) per case."""
    # The server's log, outside the workspace (a file there would be pending for status).
    err = Path(tempfile.mkstemp(prefix="ragbox-calls-", suffix=".log")[1])
    env = dict(os.environ, RAGBOX_LOG="ragbox=debug", RAGBOX_EMBEDDING_CACHE="off")
    server = subprocess.Popen([binary, "serve"], cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=open(err, "w"), text=True, env=env)

    def rpc(i, method, params):
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        return json.loads(server.stdout.readline())

    rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "bench-calls", "version": "1"}})
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    server.stdin.flush()
    time.sleep(settle)
    timings, i = [], 0
    for label, tool, arguments in CASES:
        ms = []
        for k in range(calls):
            i += 1
            started = time.perf_counter()
            reply = rpc(i, "tools/call", {"name": tool, "arguments": arguments(QUERIES[k % len(QUERIES)])})
            ms.append((time.perf_counter() - started) * 1e3)
            if "result" not in reply or reply["result"].get("isError"):
                sys.exit(f"{label} failed: {reply}")
        timings.append((label, tool, ms[0], statistics.median(ms[1:])))
    server.stdin.close()
    server.wait()
    stages = {}
    for line in open(err):
        m = re.search(r"time by stage: (.*?) tool=(\S+)", line)
        if m:
            stages.setdefault(m.group(2), []).append(m.group(1))
    # Calls of one tool come in case order: the last line of each case is its stages.
    seen, out = {}, []
    for label, tool, first, p50 in timings:
        seen[tool] = seen.get(tool, 0) + calls
        lines = stages.get(tool, [])
        out.append((label, first, p50, lines[seen[tool] - 1] if len(lines) >= seen[tool] else ""))
    return out


async def measure_sdk(binary: str, ws: Path, calls: int, settle: float) -> list[tuple[float, float]]:
    """(first call ms, p50 ms) per case through the official Python SDK's client."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(command=binary, args=["serve"], cwd=str(ws))
    out = []
    with open(os.devnull, "w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await asyncio.sleep(settle)
                for label, tool, arguments in CASES:
                    ms = []
                    for k in range(calls):
                        started = time.perf_counter()
                        r = await session.call_tool(tool, arguments(QUERIES[k % len(QUERIES)]))
                        ms.append((time.perf_counter() - started) * 1e3)
                        if r.is_error:
                            sys.exit(f"{label} failed through the SDK: {r.content}")
                    out.append((ms[0], statistics.median(ms[1:])))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--pad", type=int, default=0, help="empty files added to the workspace")
    parser.add_argument("--calls", type=int, default=21)
    parser.add_argument("--settle", type=float, default=2.0, help="seconds between initialized and the first call")
    parser.add_argument("--before", help="an older ragbox binary to measure side by side")
    args = parser.parse_args()
    binary = os.environ.get("RAGBOX_BIN", str(ROOT / "target" / "release" / "ragbox"))
    ws = workspace(args.docs, args.pad)
    subprocess.run([binary, "index"], cwd=ws, check=True, stdout=subprocess.DEVNULL)
    systems = ([("before", args.before)] if args.before else []) + [("this build", binary)]
    results = {name: measure(path, ws, args.calls, args.settle) for name, path in systems}
    sdk = asyncio.run(measure_sdk(binary, ws, args.calls, args.settle))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor())
    flags = sorted({f for l in open("/proc/cpuinfo") if l.startswith("flags") for f in l.split(":", 1)[1].split()
                    if f.startswith(("avx", "fma", "f16c", "amx"))})
    command = "python bench/calls.py" + (f" --docs {args.docs}" if args.docs != 500 else "") + \
        (f" --pad {args.pad}" if args.pad else "") + (f" --calls {args.calls}" if args.calls != 21 else "") + \
        (f" --settle {args.settle:g}" if args.settle != 2.0 else "") + (" --before BIN" if args.before else "")
    lines = [
        "# What one tool call costs: latency per call over raw JSON-RPC (stdio)\n",
        f"- command: `RAGBOX_BIN=target/release/ragbox {command}`",
        f"- machine: {cpu}, {os.cpu_count()} threads; CPU flags: {' '.join(flags)}",
        f"- workspace: the first {args.docs} SciFact abstracts, one Markdown file each"
        + (f", and {args.pad:,} empty files" if args.pad else "") + "; indexed once; "
        f"{args.calls} calls per case (p50 over all but the first), queries cycled from {len(QUERIES)}; "
        f"one server per system, its first call {args.settle:g} s after `initialized`; cases in the order below, "
        "so the first call of a case is the first of a session only for the first case that loads a thing "
        "(keyword index, vectors, model) that the server did not load while it waited\n",
        "| call | " + " | ".join(f"{n}: first ms | {n}: p50 ms" for n, _ in systems)
        + " | this build, Python SDK: first ms | p50 ms |",
        "|---|" + "---:|---:|" * (len(systems) + 1),
    ]
    for row in range(len(CASES)):
        cells = []
        for name, _ in systems:
            _, first, p50, _ = results[name][row]
            cells += [f"{first:.1f}", f"{p50:.1f}"]
        cells += [f"{sdk[row][0]:.1f}", f"{sdk[row][1]:.1f}"]
        lines.append(f"| {CASES[row][0]} | " + " | ".join(cells) + " |")
    lines.append("\nThe host's account of the last call of each case (`RAGBOX_LOG=ragbox=debug`, `time by stage`):\n")
    for name, _ in systems:
        lines.append(f"**{name}**\n")
        for label, _, _, stages in results[name]:
            lines.append(f"- {label}: {stages or '(not logged by this build)'}")
        lines.append("")
    name = "calls" + (f"-{args.docs}" if args.docs != 500 else "") + (f"-pad{args.pad}" if args.pad else "")
    out = ROOT / "bench" / "results" / f"{name}.md"
    out.write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
