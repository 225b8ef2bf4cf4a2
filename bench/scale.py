"""ragbox and the two MCP peers at 100,000 chunks: query latency and startup
through MCP stdio, server memory, and what it costs to load that many
vectors into each. Writes bench/results/scale.md and scale.png.

    bench/.venv/bin/python bench/scale.py     (part of make bench)

The corpus is real text cut into exactly 100,000 chunks: SciFact's abstracts,
the tldr pages and the skills libraries (Markdown, Python and text files),
split at paragraphs (merged up to 25 words; those over 80 split at sentence or
line ends past 40). Embedding 100,000 chunks here would take ONNX Runtime ~10 minutes
and ragbox 3x that, so the chunks are embedded once by ONNX Runtime (the
bench's export of the same model) and every system gets those vectors:
ragbox through its own store and indexes (`cargo bench --bench load`), the
peers through their clients, as their workers do. Queries are embedded by
each server as usual. The vectors and the three loaded indexes are kept in
bench/.cache/scale-100k and reused while the corpus, the ragbox version and
the peers' versions stay the same (delete the folder to start over); the load
figures are those of the run that built them, all three in that one run.
"""

import datetime
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import time

import numpy as np

import peers
from peers import CACHE, DATA, PEER_PYTHON, RAGBOX, RESULTS, ROOT

CHUNKS = 100_000
QUERIES = 60
STARTUPS = 2
SCALE = CACHE / "scale-100k"
COLLECTION = "scale"
MERGE_WORDS, SPLIT_WORDS = 25, 40
SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")  # sentence or line ends: code has no full stops
KINDS = {".md": "markdown", ".py": "code", ".txt": "text"}  # as the indexer names them
PARAGRAPH = re.compile(r"\S.*?(?=\n[ \t]*\n|\Z)", re.S)


# ---------------------------------------------------------------- corpus


def sources():
    """(workspace path, text) of every source document, in a fixed order."""
    for line in (DATA / "scifact" / "corpus.jsonl").open():
        d = json.loads(line)
        yield f"scifact/{d['_id']}.md", f"# {d['title']}\n\n{d['text']}\n"
    for root, suffixes in (("tldr", (".md",)), ("skills", (".md", ".py", ".txt"))):
        for path in sorted(p for p in (DATA / root).rglob("*") if p.suffix in suffixes and p.is_file()):
            yield f"{root}/{path.relative_to(DATA / root)}", path.read_text(errors="replace")


def spans(text):
    """Chunk spans (character offsets) of a document: paragraphs merged up to
    MERGE_WORDS words; a paragraph over twice SPLIT_WORDS split at sentence ends."""
    out, start, words = [], None, 0
    for p in PARAGRAPH.finditer(text):
        n = len(p.group().split())
        if n > 2 * SPLIT_WORDS:
            if start is not None:
                out.append((start, p.start()))
                start, words = None, 0
            cut, count = p.start(), 0
            for end in SENTENCE_END.finditer(p.group()):
                count = len(text[cut : p.start() + end.end()].split())
                if count >= SPLIT_WORDS:
                    out.append((cut, p.start() + end.end()))
                    cut = p.start() + end.end()
            if text[cut : p.end()].strip():
                out.append((cut, p.end()))
            continue
        start = p.start() if start is None else start
        words += n
        if words >= MERGE_WORDS:
            out.append((start, p.end()))
            start, words = None, 0
    if start is not None:
        out.append((start, len(text.rstrip())))
    return [(a, b) for a, b in out if text[a:b].strip()]


def corpus():
    """Writes the workspace and DOCS.jsonl (documents with chunks and byte offsets) for
    the first CHUNKS chunks; returns the docs file and its digest."""
    docs_file = SCALE / "docs.jsonl"
    ws = SCALE / "ragbox"
    lines, total = [], 0
    for path, text in sources():
        if total == CHUNKS:
            break
        cut = spans(text)[: CHUNKS - total]
        if not cut:
            continue
        total += len(cut)
        encoded = text.encode()
        offsets = {}  # character offset -> byte offset, only where needed
        for a, b in cut:
            for x in (a, b):
                offsets.setdefault(x, len(text[:x].encode()))
        chunks = [{"text": text[a:b], "start": offsets[a], "end": offsets[b]} for a, b in cut]
        title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), None)
        lines.append(json.dumps({"path": path, "hash": hashlib.sha256(encoded).hexdigest(), "size": len(encoded),
                                 "kind": KINDS[pathlib.PurePath(path).suffix], "title": title, "chunks": chunks}))
        target = ws / path
        if not target.exists() or target.read_bytes() != encoded:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(encoded)
    if total < CHUNKS:
        raise SystemExit(f"the sources give only {total:,} chunks, not {CHUNKS:,}")
    body = "\n".join(lines) + "\n"
    if not docs_file.exists() or docs_file.read_text() != body:
        docs_file.write_text(body)
    return docs_file, hashlib.sha256(body.encode()).hexdigest()[:16], len(lines)


def vectors(docs_file, onnx):
    """The chunks' vectors by ONNX Runtime, made once per set of chunk texts."""
    out, meta = SCALE / "vectors.f32", SCALE / "vectors.json"
    texts = [c["text"] for line in docs_file.open() for c in json.loads(line)["chunks"]]
    digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
    if out.exists() and meta.exists() and json.loads(meta.read_text()).get("digest") == digest:
        return out, json.loads(meta.read_text())
    ort = peers.Ort(onnx)
    started, parts = time.perf_counter(), []
    step = 5000
    for i in range(0, len(texts), step):
        parts.append(ort.encode(texts[i : i + step]).astype("<f4"))
        done = i + len(parts[-1])
        rate = done / (time.perf_counter() - started)
        print(f"  embedded {done:,}/{len(texts):,} chunks with ONNX Runtime, "
              f"{(len(texts) - done) / rate / 60:.1f} min left", flush=True)
    seconds = time.perf_counter() - started
    tokens = sum(sum(e.attention_mask) for e in ort.tokenizer.encode_batch(texts))  # padding excluded
    np.concatenate(parts).tofile(out)
    info = {"digest": digest, "seconds": seconds, "chunks": len(texts), "tokens": tokens}
    meta.write_text(json.dumps(info))
    return out, info


# ---------------------------------------------------------------- loading


def load_all(docs_file, vectors_file, key):
    """Loads the vectors into all three systems, or reuses the loads made for `key`."""
    meta = SCALE / "loads.json"
    if meta.exists() and json.loads(meta.read_text()).get("key") == key:
        return json.loads(meta.read_text())
    meta.unlink(missing_ok=True)
    rows = {"key": key, "date": datetime.date.today().isoformat()}
    shutil.rmtree(SCALE / "ragbox" / ".ragbox", ignore_errors=True)
    cmd = ["cargo", "bench", "-q", "-p", "ragbox-tests", "--bench", "load", "--",
           docs_file, vectors_file, SCALE / "ragbox"]
    subprocess.run(["cargo", "bench", "-q", "-p", "ragbox-tests", "--bench", "load", "--no-run"], cwd=ROOT, check=True)
    out, seconds, rss = peers.measured(cmd)
    rows["ragbox"] = {**json.loads(out.strip().splitlines()[-1]), "seconds": seconds, "rss": rss}
    print(f"ragbox loaded in {seconds:.1f} s, {rss:.0f} MiB", flush=True)
    env = peers.peer_env(peers.onnx_model())
    for peer in ("chroma", "qdrant"):
        data = SCALE / peer
        shutil.rmtree(data, ignore_errors=True)
        cmd = [PEER_PYTHON[peer], ROOT / "bench" / "peers" / f"{peer}_worker.py", "load", docs_file, vectors_file,
               data, COLLECTION]
        out, seconds, rss = peers.measured(cmd, env)
        rows[peer] = {**json.loads(out), "seconds": seconds, "rss": rss}
        print(f"{peer} loaded in {seconds:.1f} s, {rss:.0f} MiB", flush=True)
    meta.write_text(json.dumps(rows))
    return rows


# ---------------------------------------------------------------- run


def servers(onnx):
    return {"ragbox": peers.ragbox_server(SCALE / "ragbox"), "chroma-mcp": peers.chroma_server(SCALE, onnx),
            "mcp-server-qdrant": peers.qdrant_server(SCALE, onnx, COLLECTION)}


def main():
    if not RAGBOX.exists():
        raise SystemExit(f"{RAGBOX} is missing: run `make release` (make bench does)")
    os.chdir(ROOT)  # cargo runs the load bench from the workspace
    SCALE.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    onnx = peers.onnx_model()
    docs_file, digest, documents = corpus()
    print(f"scale corpus: {CHUNKS:,} chunks in {documents:,} documents ({digest})", flush=True)
    vectors_file, embedding = vectors(docs_file, onnx)
    v = peers.versions()
    key = f"{digest} | {v['ragbox']} | {v['chroma']} | {v['qdrant']}"
    loads = load_all(docs_file, vectors_file, key)

    _, queries, _ = peers.scifact()
    texts = list(queries.values())[:QUERIES]
    systems = servers(onnx)
    timing = peers.mcp_timing(systems, texts, STARTUPS, COLLECTION)
    report(documents, embedding, loads, timing, v, time.perf_counter() - started)


def report(documents, embedding, loads, timing, v, total):
    lines = [
        "# ragbox vs peers at 100,000 chunks\n",
        f"- command: `make bench` (`bench/.venv/bin/python bench/scale.py`), {total / 60:.1f} min in this run",
        f"- machine: {peers.machine()}",
        f"- versions: {v['ragbox']}; {v['chroma']}; {v['qdrant']}",
        f"- corpus: {CHUNKS:,} chunks of real text in {documents:,} documents (SciFact abstracts, tldr pages, "
        "skills libraries' Markdown, Python and text), cut at paragraphs: "
        f"{embedding['tokens'] / embedding['chunks']:.0f} tokens a chunk on average",
        "- vectors: embedded once by ONNX Runtime with the same all-MiniLM-L6-v2 weights and kept "
        "(bench/.cache/scale-100k); every system was given those vectors. Queries are embedded by each "
        "server itself.",
        "",
        "## Query latency and startup through MCP stdio\n",
        f"{QUERIES} SciFact claims after 3 warm-up queries, the three servers taking turns on each, 10 results "
        "each, query embedding included (ragbox `search` semantic, chroma-mcp `chroma_query_documents`, "
        "mcp-server-qdrant `qdrant-find`). Startup: median of "
        f"{STARTUPS} fresh processes. RSS: each server process after the queries.\n",
        *peers.timing_table(timing),
        "",
        f"## Loading {CHUNKS:,} precomputed vectors (measured {loads['date']}, all three in that run)\n",
        "Wall time of the whole loading process and its peak RSS (`wait4`); embedding excluded for all. "
        f"ragbox: its store, then its HNSW graph (built at {CHUNKS:,} chunks and saved) and its keyword index; "
        "Chroma: `collection.add` in batches of 5,000 (its HNSW index builds as it goes); Qdrant local mode: "
        "upserts of 1,000 points (local mode keeps no index: it scans).\n",
        "| system | load | peak RSS | ragbox load ÷ this |",
        "|---|---|---|---|",
    ]
    r = loads["ragbox"]
    for name, label in (("ragbox", "ragbox"), ("chroma", "chromadb"), ("qdrant", "qdrant local")):
        lines.append(f"| {label} | {loads[name]['seconds']:.1f} s | {loads[name]['rss']:.0f} MiB | "
                     f"{r['seconds'] / loads[name]['seconds']:.2f} |")
    lines += [
        "",
        f"ragbox's part by part: store {r['store_s']:.1f} s, vector index (HNSW build + save) "
        f"{r['vector_index_s']:.1f} s, keyword index {r['keyword_index_s']:.1f} s.",
        "",
        "Plot: `scale.png`.",
    ]
    out = RESULTS / "scale.md"
    out.write_text("\n".join(lines) + "\n")
    panels = peers.latency_panels(timing, f"Query latency at {CHUNKS:,} chunks", "Startup")
    peers.plot(RESULTS / "scale.png", list(timing), panels)
    print(out.read_text())


if __name__ == "__main__":
    main()
