"""Retrieval quality on three kinds of question, ragbox's search modes beside
plain BM25 (bm25s and tantivy-py on whole documents), in one run. Writes
bench/results/quality.md.

    bench/.venv/bin/python bench/quality.py [--sets scifact,tldr,skills] [--samples N] [--before BIN]

- SciFact (BEIR test split): claims → abstracts, nDCG@10.
- tldr: task → command page over ../shared/data/tldr/common. Each sample takes
  300 pages at random (seeded), removes one example's description from each
  page and asks for it; the page is the one right answer. hit@1, hit@5, MRR.
- skills: the paraphrased "which skill does X?" questions of
  bench/sets/skills-questions.tsv over every SKILL.md of ../shared/data/skills;
  a skill folder is the answer. hit@1, hit@3, MRR; `search_skills` beside `search`.

ragbox is asked through its MCP `search` tool (50 chunks, deduplicated to
documents), as an agent would; its index is kept in bench/.cache and updated
incrementally, so a re-run embeds only what changed. With --before, an older
ragbox binary answers the same SciFact queries beside this one, the two
taking turns on each query, for the latency table (quality is this build's).
"""

import argparse
import asyncio
import contextlib
import json
import pathlib
import random
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  (shared harness pieces: data paths, MCP session, machine line)

CACHE = peers.CACHE / "quality"
MODES = ("fulltext", "semantic", "hybrid")
QUERIES_PER_SAMPLE = 300
TLDR = peers.DATA / "tldr" / "common"
SKILLS = peers.DATA / "skills"
QUESTIONS = peers.ROOT / "bench" / "sets" / "skills-questions.tsv"


# ---------------------------------------------------------------- workspaces


def write_workspace(ws, files):
    """Makes `ws` hold exactly `files` (relative path → text), touching only what differs."""
    ws.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = ws / rel
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    wanted = {ws / rel for rel in files}
    for path in ws.rglob("*"):
        if path.is_file() and ".ragbox" not in path.parts and path not in wanted:
            path.unlink()


def index(ws):
    started = time.perf_counter()
    subprocess.run([peers.RAGBOX, "index", "--workspace", ws], check=True, env=peers.ragbox_env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


# ---------------------------------------------------------------- systems


async def ragbox_rankings(ws, queries, doc_of, skills=False):
    """Per mode, each query's documents in ragbox's order; plus each mode's call latencies."""
    runs, latencies = {}, {}
    async with peers.mcp_session(peers.ragbox_server(ws)) as session:
        await session.initialize()
        for mode in MODES:
            runs[mode], latencies[mode] = {}, []
            for qid, text in queries.items():
                started = time.perf_counter()
                r = await peers.checked(session, "search", {"query": text, "search_type": mode, "limit": 50})
                latencies[mode].append(time.perf_counter() - started)
                ranked = []
                for hit in r.structured_content["results"]:
                    doc = doc_of(hit["source"]["filepath"])
                    if doc not in ranked:
                        ranked.append(doc)
                runs[mode][qid] = ranked
        if skills:
            runs["search_skills"], latencies["search_skills"] = {}, []
            for qid, text in queries.items():
                started = time.perf_counter()
                r = await peers.checked(session, "search_skills", {"query": text, "n_results": 5})
                latencies["search_skills"].append(time.perf_counter() - started)
                paths = re.findall(r"^\*\*Path\*\*: (.+)$", r.content[0].text, re.M)
                runs["search_skills"][qid] = [doc_of(p) for p in paths]
    return runs, latencies


def bm25s_rankings(docs, queries):
    """bm25s's ranking (peers.py's setup), cut at ragbox's 50."""
    return {q: ranked[:50] for q, ranked in peers.bm25s_runs(docs, queries)[0].items()}


def tantivy_rankings(docs, queries):
    """tantivy-py's ranking (peers.py's setup), cut at ragbox's 50."""
    return {q: ranked[:50] for q, ranked in peers.tantivy_runs(docs, queries)[0].items()}


async def latency_side_by_side(ws, queries, binaries, limit=10):
    """Per mode and binary, seconds per `search` call through the MCP Python SDK, after 3
    warm-up queries; the binaries take turns on each query so machine noise hits both."""
    from mcp import StdioServerParameters

    samples = {}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for name, binary in binaries.items():
            server = StdioServerParameters(command=str(binary), args=["serve", "--workspace", str(ws)],
                                           env=peers.ragbox_env())
            sessions[name] = await stack.enter_async_context(peers.mcp_session(server))
            await sessions[name].initialize()
        for mode in MODES:
            for name in binaries:
                samples[(mode, name)] = []
            for i, text in enumerate(queries[:3] + queries):
                for name, session in sessions.items():
                    started = time.perf_counter()
                    await peers.checked(session, "search", {"query": text, "search_type": mode, "limit": limit})
                    if i >= 3:
                        samples[(mode, name)].append(time.perf_counter() - started)
    return samples


# ---------------------------------------------------------------- metrics


def first_hit(ranked, accepted):
    return next((i for i, d in enumerate(ranked) if d in accepted), None)


def hits_metrics(run, answers, cut):
    """hit@1, hit@cut and MRR of `run` against the accepted answers per query."""
    ranks = [first_hit(run.get(q, []), a) for q, a in answers.items()]
    n = len(ranks)
    return {
        "hit1": sum(r == 0 for r in ranks) / n,
        f"hit{cut}": sum(r is not None and r < cut for r in ranks) / n,
        "mrr": sum(1 / (r + 1) for r in ranks if r is not None) / n,
    }


def ndcg_metrics(run, relevant):
    return {"ndcg10": sum(peers.ndcg10(run.get(q, []), rel) for q, rel in relevant.items()) / len(relevant)}


def p50_ms(latencies):
    return statistics.median(latencies) * 1e3


# ---------------------------------------------------------------- sets


def scifact_set(before=None):
    docs, queries, relevant = peers.scifact()
    ws = CACHE / "scifact"
    write_workspace(ws, {f"docs/{d}.md": t for d, t in docs.items()})
    seconds = index(ws)
    runs, latencies = asyncio.run(ragbox_rankings(ws, queries, lambda p: pathlib.PurePath(p).stem))
    runs["bm25s"] = bm25s_rankings(docs, queries)
    runs["tantivy-py"] = tantivy_rankings(docs, queries)
    scores = {name: ndcg_metrics(run, relevant) for name, run in runs.items()}
    binaries = {"this build": peers.RAGBOX, **({"before": pathlib.Path(before)} if before else {})}
    side = asyncio.run(latency_side_by_side(ws, list(queries.values())[:60], binaries))
    return {"queries": len(queries), "docs": len(docs), "index_s": seconds, "scores": scores,
            "p50": {m: p50_ms(l) for m, l in latencies.items()}, "latency": side}


EXAMPLE = re.compile(r"^- (.+?):?\s*$")


def tldr_pages():
    return {p.stem: p.read_text() for p in sorted(TLDR.glob("*.md"))}


def tldr_sample(pages, seed):
    """`pages` with one example description cut from each of 300 random pages; the cut descriptions as queries."""
    rng = random.Random(seed)
    candidates = [name for name, text in pages.items() if sum(bool(EXAMPLE.match(l)) for l in text.splitlines()) >= 2]
    chosen = rng.sample(candidates, QUERIES_PER_SAMPLE)
    edited, queries = dict(pages), {}
    for name in chosen:
        lines = pages[name].splitlines(keepends=True)
        examples = [i for i, l in enumerate(lines) if EXAMPLE.match(l)]
        at = rng.choice(examples)
        description = EXAMPLE.match(lines[at]).group(1)
        # tldr marks a mnemonic letter in brackets ("E[x]tract"): a user would not type them.
        queries[name] = re.sub(r"\[(\w{1,2})\]", r"\1", description)
        del lines[at]
        edited[name] = "".join(lines)
    return edited, queries


def tldr_set(samples):
    pages = tldr_pages()
    ws = CACHE / "tldr"
    per_sample = []
    for seed in range(1, samples + 1):
        edited, queries = tldr_sample(pages, seed)
        write_workspace(ws, {f"pages/{name}.md": text for name, text in edited.items()})
        seconds = index(ws)
        answers = {q: {q} for q in queries}
        runs, latencies = asyncio.run(ragbox_rankings(ws, queries, lambda p: pathlib.PurePath(p).stem))
        runs["bm25s"] = bm25s_rankings(edited, queries)
        runs["tantivy-py"] = tantivy_rankings(edited, queries)
        per_sample.append({"seed": seed, "index_s": seconds, "p50": {m: p50_ms(l) for m, l in latencies.items()},
                           "scores": {name: hits_metrics(run, answers, 5) for name, run in runs.items()}})
        print(f"tldr sample {seed}: " + ", ".join(f"{n} {s['hit5']:.3f}" for n, s in per_sample[-1]["scores"].items()),
              flush=True)
    return {"queries": QUERIES_PER_SAMPLE, "docs": len(pages), "samples": per_sample,
            "scores": mean_scores([s["scores"] for s in per_sample])}


def mean_scores(samples):
    return {name: {k: statistics.mean(s[name][k] for s in samples) for k in samples[0][name]} for name in samples[0]}


def skill_folder(path):
    return pathlib.PurePath(path).parent.name


def skills_set():
    files = {str(p.relative_to(SKILLS)): p.read_text() for p in sorted(SKILLS.rglob("SKILL.md"))}
    folders = {skill_folder(p) for p in files}
    queries, answers = {}, {}
    for i, line in enumerate(l for l in QUESTIONS.read_text().splitlines() if l and not l.startswith("#")):
        question, accepted = line.split("\t")
        accepted = set(accepted.split(","))
        missing = accepted - folders
        if missing:
            raise SystemExit(f"{QUESTIONS}: no skill folder named {', '.join(sorted(missing))}")
        queries[f"q{i}"], answers[f"q{i}"] = question, accepted
    ws = CACHE / "skills"
    write_workspace(ws, files)
    seconds = index(ws)
    runs, latencies = asyncio.run(ragbox_rankings(ws, queries, skill_folder, skills=True))
    # The baselines score each SKILL.md whole; several folders share a name (pdf, skill-creator): either is right.
    docs = {p: t for p, t in files.items()}
    for name, rank in (("bm25s", bm25s_rankings), ("tantivy-py", tantivy_rankings)):
        runs[name] = {q: dedup(skill_folder(p) for p in r) for q, r in rank(docs, queries).items()}
    return {"queries": len(queries), "docs": len(files), "index_s": seconds,
            "p50": {m: p50_ms(l) for m, l in latencies.items()},
            "scores": {name: hits_metrics(run, answers, 3) for name, run in runs.items()}}


def dedup(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


# ---------------------------------------------------------------- report


def table(scores, columns, best_of=MODES):
    names = [*best_of, *(n for n in scores if n not in best_of)]
    lines = ["| system | " + " | ".join(label for _, label in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name in names:
        label = f"ragbox {name}" if name in MODES else ("ragbox search_skills" if name == "search_skills" else name)
        lines.append(f"| {label} | " + " | ".join(f"{scores[name][key]:.3f}" for key, _ in columns) + " |")
    return lines


def verdict(scores, key):
    """Hybrid against the better of its own inputs and against the best BM25 baseline."""
    f, s, h = (scores[m][key] for m in MODES)
    bm25 = max(scores[n][key] for n in ("bm25s", "tantivy-py"))
    return (f"hybrid − max(fulltext, semantic) = {h - max(f, s):+.3f}; fulltext − best BM25 = {f - bm25:+.3f}; "
            f"hybrid − best BM25 = {h - bm25:+.3f}")


def report(results, command, total):
    lines = [
        "# Retrieval quality: three kinds of question, one run\n",
        f"- command: `{command}`, {total / 60:.1f} min in all",
        f"- machine: {peers.machine()}",
        f"- ragbox: {subprocess.run([peers.RAGBOX, '--version'], capture_output=True, text=True).stdout.strip()}; "
        "its `search` tool over MCP stdio, 50 chunks deduplicated to documents",
        "- baselines: bm25s (English stop words, Snowball stemmer) and tantivy-py (`en_stem`) over whole documents",
        "",
    ]
    if "scifact" in results:
        r = results["scifact"]
        lines += [
            f"## SciFact: claim → abstract ({r['queries']} claims, {r['docs']:,} abstracts)\n",
            *table(r["scores"], [("ndcg10", "nDCG@10")]),
            "",
            verdict(r["scores"], "ndcg10") + ".",
            "",
            "Query p50 through MCP while scoring (limit 50, back to back): "
            + ", ".join(f"{m} {v:.1f} ms" for m, v in r["p50"].items()) + ".",
            "",
            "Latency as an agent asks (limit 10), 60 claims after 3 warm-up ones, through the MCP Python SDK"
            + (", the builds taking turns on each claim" if any(n == "before" for _, n in r["latency"]) else "")
            + ":\n",
            "| mode | build | p50 | p95 |",
            "|---|---|---|---|",
            *(f"| {mode} | {name} | {peers.pct(v, 50) * 1e3:.1f} ms | {peers.pct(v, 95) * 1e3:.1f} ms |"
              for (mode, name), v in r["latency"].items()),
            "",
        ]
    if "tldr" in results:
        r = results["tldr"]
        lines += [
            f"## tldr: task → command page ({len(r['samples'])} samples × {r['queries']} descriptions cut from "
            f"their pages, {r['docs']:,} pages; mean over samples)\n",
            *table(r["scores"], [("hit1", "hit@1"), ("hit5", "hit@5"), ("mrr", "MRR")]),
            "",
            verdict(r["scores"], "hit5") + " (hit@5).",
            "",
            "Per sample, hit@5: " + "; ".join(
                f"seed {s['seed']}: " + ", ".join(f"{n} {v['hit5']:.3f}" for n, v in s["scores"].items())
                for s in r["samples"]) + ".",
            "",
        ]
    if "skills" in results:
        r = results["skills"]
        lines += [
            f"## Skills: which skill does X? ({r['queries']} paraphrased questions, {r['docs']} SKILL.md)\n",
            *table(r["scores"], [("hit1", "hit@1"), ("hit3", "hit@3"), ("mrr", "MRR")]),
            "",
            verdict(r["scores"], "mrr") + " (MRR).",
            "",
        ]
    out = peers.RESULTS / "quality.md"
    out.write_text("\n".join(lines))
    print(out.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="scifact,tldr,skills")
    parser.add_argument("--samples", type=int, default=3, help="tldr samples of 300 questions (default 3)")
    parser.add_argument("--before", help="an older ragbox binary whose SciFact latency to show beside this one's")
    args = parser.parse_args()
    if not peers.RAGBOX.exists():
        raise SystemExit(f"{peers.RAGBOX} is missing: run `make release` (make bench does)")
    CACHE.mkdir(parents=True, exist_ok=True)
    peers.LOG.write_text("")
    started = time.perf_counter()
    results = {}
    for name in args.sets.split(","):
        if name == "scifact":
            results[name] = scifact_set(args.before)
        elif name == "tldr":
            results[name] = tldr_set(args.samples)
        elif name == "skills":
            results[name] = skills_set()
        else:
            raise SystemExit(f"unknown set {name!r}: use scifact, tldr, skills")
        print(f"{name}: " + ", ".join(f"{n} {json.dumps(s)}" for n, s in results[name]["scores"].items()), flush=True)
    command = "bench/.venv/bin/python bench/quality.py " + " ".join(
        "BIN" if a == args.before else a for a in sys.argv[1:])
    report(results, command.strip(), time.perf_counter() - started)


if __name__ == "__main__":
    main()
