"""Chroma's side of `bench/peers.py`, run with bench/.venv-chroma's Python:
chromadb's own defaults (its ONNX all-MiniLM-L6-v2 embedding function, HNSW
with cosine space), the way a chroma-mcp user would fill a collection.

    index CORPUS.jsonl DATA_DIR     add every document (upsert: a re-run re-embeds)
    query QUERIES.jsonl DATA_DIR K  the top-K document ids of each query

Prints one JSON object on stdout. HOME must point at the folder holding
.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx (the bench's ONNX export).
"""

import json
import sys
import time

import chromadb

COLLECTION = "scifact"
BATCH = 256


def client(path):
    return chromadb.PersistentClient(path=path, settings=chromadb.Settings(anonymized_telemetry=False))


def index(corpus, path):
    docs = [json.loads(line) for line in open(corpus)]
    started = time.perf_counter()
    collection = client(path).get_or_create_collection(COLLECTION, metadata={"hnsw:space": "cosine"})
    for i in range(0, len(docs), BATCH):
        batch = docs[i : i + BATCH]
        collection.upsert(ids=[d["id"] for d in batch], documents=[d["text"] for d in batch])
    return {"seconds": time.perf_counter() - started, "documents": collection.count()}


def query(queries, path, k):
    collection = client(path).get_collection(COLLECTION)
    ranked = {}
    for line in open(queries):
        q = json.loads(line)
        hits = collection.query(query_texts=[q["text"]], n_results=k, include=[])
        ranked[q["id"]] = hits["ids"][0]
    return ranked


if __name__ == "__main__":
    verb, source, path = sys.argv[1:4]
    out = index(source, path) if verb == "index" else query(source, path, int(sys.argv[4]))
    print(json.dumps(out))
