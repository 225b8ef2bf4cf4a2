"""Chroma's side of `bench/peers.py`, run with bench/.venv-chroma's Python:
chromadb's own defaults (its ONNX all-MiniLM-L6-v2 embedding function, HNSW
with cosine space), the way a chroma-mcp user would fill a collection.

    index CORPUS.jsonl DATA_DIR     add every document (upsert: a re-run re-embeds)
    query QUERIES.jsonl DATA_DIR K  the top-K document ids of each query
    load DOCS.jsonl VECTORS.f32 DATA_DIR COLLECTION
                                    add every chunk of bench/scale.py's corpus
                                    with its precomputed vector

Prints one JSON object on stdout. HOME must point at the folder holding
.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx (the bench's ONNX export).
"""

import json
import time

import chromadb
import numpy as np

import verbs

COLLECTION = "scifact"
BATCH = 256
DIM = 384


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


def load(docs, vectors, path, name):
    """Every chunk as one entry (id `path#n`, its source in the metadata) with the given vector."""
    vectors = np.fromfile(vectors, dtype="<f4").reshape(-1, DIM)
    ids, texts, metadatas = [], [], []
    for line in open(docs):
        doc = json.loads(line)
        for n, chunk in enumerate(doc["chunks"]):
            ids.append(f"{doc['path']}#{n}")
            texts.append(chunk["text"])
            metadatas.append({"source": doc["path"]})
    assert len(ids) == len(vectors), f"{len(ids)} chunks, {len(vectors)} vectors"
    started = time.perf_counter()
    db = client(path)
    # The default embedding function stays configured: chroma-mcp embeds queries with it.
    collection = db.get_or_create_collection(name, metadata={"hnsw:space": "cosine"})
    batch = min(5000, db.get_max_batch_size())
    for i in range(0, len(ids), batch):
        j = i + batch
        collection.add(ids=ids[i:j], embeddings=vectors[i:j], documents=texts[i:j], metadatas=metadatas[i:j])
    return {"seconds": time.perf_counter() - started, "documents": collection.count()}


if __name__ == "__main__":
    print(json.dumps(verbs.run(load, index, query)))
