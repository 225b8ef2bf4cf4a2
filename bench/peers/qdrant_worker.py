"""Qdrant's side of `bench/peers.py`, run with bench/.venv-qdrant's Python:
fills a local-mode Qdrant collection exactly as mcp-server-qdrant stores
entries (its FastEmbed provider, its vector name, `document` + `metadata`
payload), but in batches rather than one `qdrant-store` call per document.

    index CORPUS.jsonl DATA_DIR     upsert every document (a re-run re-embeds)
    query QUERIES.jsonl DATA_DIR K  the top-K document ids of each query
    load DOCS.jsonl VECTORS.f32 DATA_DIR COLLECTION
                                    upsert every chunk of bench/scale.py's
                                    corpus with its precomputed vector

Prints one JSON object on stdout. FASTEMBED_CACHE_PATH and HF_HUB_OFFLINE=1
point FastEmbed at the bench's ONNX export.
"""

import asyncio
import json
import time
import uuid

import numpy as np
from mcp_server_qdrant.embeddings.fastembed import FastEmbedProvider
from qdrant_client import AsyncQdrantClient, models

import verbs

COLLECTION = "scifact"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BATCH = 256
LOAD_BATCH = 1000
DIM = 384


async def index(corpus, path):
    docs = [json.loads(line) for line in open(corpus)]
    started = time.perf_counter()
    provider = FastEmbedProvider(MODEL)
    client = AsyncQdrantClient(path=path)
    name = provider.get_vector_name()
    if not await client.collection_exists(COLLECTION):
        vectors = {name: models.VectorParams(size=provider.get_vector_size(), distance=models.Distance.COSINE)}
        await client.create_collection(COLLECTION, vectors_config=vectors)
    for i in range(0, len(docs), BATCH):
        batch = docs[i : i + BATCH]
        vectors = await provider.embed_documents([d["text"] for d in batch])
        points = [
            models.PointStruct(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, d["id"])),
                vector={name: v},
                payload={"document": d["text"], "metadata": {"id": d["id"]}},
            )
            for d, v in zip(batch, vectors)
        ]
        await client.upsert(COLLECTION, points=points)
    count = (await client.count(COLLECTION)).count
    await client.close()
    return {"seconds": time.perf_counter() - started, "documents": count}


async def query(queries, path, k):
    provider = FastEmbedProvider(MODEL)
    client = AsyncQdrantClient(path=path)
    ranked = {}
    for line in open(queries):
        q = json.loads(line)
        vector = await provider.embed_query(q["text"])
        hits = await client.query_points(COLLECTION, query=vector, using=provider.get_vector_name(), limit=k)
        ranked[q["id"]] = [p.payload["metadata"]["id"] for p in hits.points]
    await client.close()
    return ranked


async def load(docs, vectors, path, collection):
    """Every chunk as one point, stored as mcp-server-qdrant stores an entry, with the given vector."""
    vectors = np.fromfile(vectors, dtype="<f4").reshape(-1, DIM)
    entries = []
    for line in open(docs):
        doc = json.loads(line)
        entries += [(f"{doc['path']}#{n}", chunk["text"], doc["path"]) for n, chunk in enumerate(doc["chunks"])]
    assert len(entries) == len(vectors), f"{len(entries)} chunks, {len(vectors)} vectors"
    started = time.perf_counter()
    name = FastEmbedProvider(MODEL).get_vector_name()
    client = AsyncQdrantClient(path=path)
    if not await client.collection_exists(collection):
        params = {name: models.VectorParams(size=DIM, distance=models.Distance.COSINE)}
        await client.create_collection(collection, vectors_config=params)
    for i in range(0, len(entries), LOAD_BATCH):
        points = [
            models.PointStruct(id=str(uuid.uuid5(uuid.NAMESPACE_URL, key)), vector={name: vector.tolist()},
                               payload={"document": text, "metadata": {"source": source}})
            for (key, text, source), vector in zip(entries[i : i + LOAD_BATCH], vectors[i : i + LOAD_BATCH])
        ]
        await client.upsert(collection, points=points)
    count = (await client.count(collection)).count
    await client.close()
    return {"seconds": time.perf_counter() - started, "documents": count}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(verbs.run(load, index, query))))
