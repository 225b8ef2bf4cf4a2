"""Tries fusions of ragbox's semantic and keyword lists offline, on the lists a
`quality.py --half tune` run kept (bench/.cache/quality/lists.json), so a
fusion rule is chosen on the tuning half without rebuilding ragbox.

    bench/.venv/bin/python bench/fusion.py

`alpha` is how much of its document's best score from the other list a chunk
that list did not return inherits (0: none, ragbox's fusion before; 1: all);
`w` is the semantic list's weight; `raw` rows fuse the scores unscaled.
"""

import collections
import json
import pathlib

LISTS = pathlib.Path(__file__).resolve().parent / ".cache" / "quality" / "lists.json"
DEPTH = 50


def normalised(hits, scale="minmax"):
    """A list's scores (best first) scaled: min-max over its first DEPTH, or
    kept as they are (`raw`: ragbox's cosine, and BM25 over the list's best)."""
    if not hits:
        return []
    if scale == "raw":
        return [((d, c), s) for d, c, s in hits]
    hi, lo = hits[0][2], hits[min(DEPTH, len(hits)) - 1][2]
    return [((d, c), max(0.0, (s - lo) / (hi - lo)) if hi > lo else 1.0) for d, c, s in hits]


def fuse(semantic, keyword, w, alpha, scale="minmax"):
    sem, kw = dict(normalised(semantic, scale)), dict(normalised(keyword, scale))
    best = collections.defaultdict(lambda: [0.0, 0.0])
    for (d, _), s in sem.items():
        best[d][0] = max(best[d][0], s)
    for (d, _), s in kw.items():
        best[d][1] = max(best[d][1], s)
    scored = []
    for key in set(sem) | set(kw):
        d = key[0]
        s = sem.get(key, alpha * best[d][0])
        k = kw.get(key, alpha * best[d][1])
        scored.append((w * s + (1 - w) * k, key))
    scored.sort(key=lambda x: (-x[0], x[1][0], x[1][1] or 0))
    ranked = []
    for _, (d, _) in scored:
        if d not in ranked:
            ranked.append(d)
    return ranked


def metrics(runs, answers):
    ranks = []
    for q, accepted in answers.items():
        ranked = runs.get(q, [])
        ranks.append(next((i for i, d in enumerate(ranked) if d in accepted), None))
    n = len(ranks)
    return (sum(r is not None and r < 5 for r in ranks) / n, sum(1 / (r + 1) for r in ranks if r is not None) / n)


def main():
    data = json.loads(LISTS.read_text())
    lists, answers = data["lists"], {q: set(a) for q, a in data["answers"].items()}
    sets = sorted({q.split(":", 1)[0] for q in answers})
    for name in sets:
        qs = {q: a for q, a in answers.items() if q.startswith(name + ":")}
        base = {m: metrics({q: list(dict.fromkeys(d for d, _, _ in lists[m][q])) for q in qs}, qs)
                for m in ("fulltext", "semantic", "hybrid")}
        print(f"{name} ({len(qs)} questions): " + ", ".join(f"{m} hit@5 {h:.3f} MRR {r:.3f}" for m, (h, r) in base.items()))
        for alpha in (0.0, 0.5, 0.8, 1.0):
            row = []
            for w in (0.3, 0.4, 0.5, 0.6):
                h, r = metrics({q: fuse(lists["semantic"][q], lists["fulltext"][q], w, alpha) for q in qs}, qs)
                row.append(f"w={w} {h:.3f}/{r:.3f}")
            print(f"  alpha={alpha}: " + "  ".join(row))
        # Scores as they come (cosine; BM25 over the list's best) instead of min-max scaled.
        row = []
        for w in (0.3, 0.4, 0.5, 0.6, 0.7):
            h, r = metrics({q: fuse(lists["semantic"][q], lists["fulltext"][q], w, 1.0, "raw") for q in qs}, qs)
            row.append(f"w={w} {h:.3f}/{r:.3f}")
        print("  raw, alpha=1.0: " + "  ".join(row))


if __name__ == "__main__":
    main()
