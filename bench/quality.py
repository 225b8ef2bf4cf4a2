"""Retrieval quality on six kinds of question, ragbox's search modes beside
plain BM25 (bm25s and tantivy-py on whole documents), in one run. Writes
bench/results/quality.md.

    bench/.venv/bin/python bench/quality.py [--sets scifact,tldr,skills,code,tasks,prose]
        [--half tune|report] [--samples N] [--before BIN]

The first three sets are the ones ragbox's ranking was tuned on. The last
three are held out: each is split by a stable hash into a tuning half (asked
with --half tune, printed, and its ranked lists kept for bench/fusion.py) and
a reporting half, the only one bench/results/quality.md shows.
- code: a function's doc comment (its first sentence), cut from the indexed
  copy, asks for the source file that holds it; real crates from the cargo
  registry (tuning: redb, clap_builder, serde_json; reporting: tokio). Also
  measured: how often the first five results' pieces keep every function they
  touch whole, how often the hit in the right file holds the function asked
  about, and whether a function's name alone ranks a file holding it first.
- tasks: as tldr below, questions drawn only from the half's pages.
- prose: every skill body of ../shared/data/skills as plain Markdown (its
  frontmatter cut), asked for by its description's first sentence.

- SciFact (BEIR test split): claims → abstracts, nDCG@10.
- tldr: task → command page over ../shared/data/tldr/common. Each sample takes
  300 pages at random (seeded), removes one example's description from each
  page and asks for it; the page is the one right answer. hit@1, hit@5, MRR.
- skills: the paraphrased "which skill does X?" questions of
  bench/sets/skills-questions.tsv over every SKILL.md of ../shared/data/skills;
  a skill folder is the answer. hit@1, hit@3, MRR; `search_skills` beside `search`.

ragbox is asked through its MCP `search` tool (50 results, one per file, no
token cut), as an agent would; its index is kept in bench/.cache and updated
incrementally, so a re-run embeds only what changed. With --before, an older
ragbox binary answers every set's questions beside this one (`before` rows),
each rebuilding the keyword index from the same store first, so that neither
answers from an index the other, or an earlier sample, left behind (deleted
documents weigh in BM25's counts until a merge); and the two take turns on
each SciFact query for the latency table.
"""

import argparse
import asyncio
import contextlib
import json
import pathlib
import random
import re
import os
import shutil
import statistics
import subprocess
import sys
import time
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  (shared harness pieces: data paths, MCP session, machine line)

CACHE = peers.CACHE / "quality"
# Every ranked list ragbox returned in this run, per mode and query: (document, chunk, relevance),
# kept with --half tune (bench/.cache/quality/lists.json) for trying fusions offline.
RAW, ANSWERS = {}, {}
SET = [""]  # the set being asked, which keys RAW and ANSWERS
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


# The older binary of --before, answering beside this build.
BEFORE = [None]


def rankings(ws, queries, doc_of, **options):
    """ragbox_rankings of this build; with --before, the older binary's runs beside them as `before <mode>`.
    Each binary first rebuilds the keyword index from the store (the vectors are shared)."""
    if BEFORE[0] is None:
        return asyncio.run(ragbox_rankings(ws, queries, doc_of, **options))
    this = peers.RAGBOX
    try:
        peers.RAGBOX = BEFORE[0]
        shutil.rmtree(ws / ".ragbox" / "keyword", ignore_errors=True)
        index(ws)
        older, _ = asyncio.run(ragbox_rankings(ws, queries, doc_of))
    finally:
        peers.RAGBOX = this
    shutil.rmtree(ws / ".ragbox" / "keyword", ignore_errors=True)
    index(ws)
    runs, latencies = asyncio.run(ragbox_rankings(ws, queries, doc_of, **options))
    runs.update({f"before {mode}": run for mode, run in older.items() if mode in MODES})
    return runs, latencies


def index(ws):
    started = time.perf_counter()
    subprocess.run([peers.RAGBOX, "index", "--workspace", ws], check=True, env=peers.ragbox_env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


# ---------------------------------------------------------------- systems


async def ragbox_rankings(ws, queries, doc_of, skills=False, passages=None, places=None):
    """Per mode, each query's documents in ragbox's order; plus each mode's call latencies.
    With `passages` (a dict), passages[mode][qid][doc] is the first passage returned from doc;
    with `places`, places[mode][qid][doc] its `path:a-b,c-d` lines."""
    runs, latencies = {}, {}
    async with peers.mcp_session(peers.ragbox_server(ws)) as session:
        await session.initialize()
        for mode in MODES:
            runs[mode], latencies[mode] = {}, []
            for qid, text in queries.items():
                started = time.perf_counter()
                r = await peers.checked(session, "search", {"query": text, "search_type": mode, "limit": 50, "max_tokens": 200000})
                latencies[mode].append(time.perf_counter() - started)
                ranked = []
                for hit in r.structured_content["results"]:
                    doc = doc_of(hit["source"]["filepath"])
                    if doc not in ranked:
                        ranked.append(doc)
                        if passages is not None:
                            passages.setdefault(mode, {}).setdefault(qid, {})[doc] = hit["content"]
                        if places is not None:
                            places.setdefault(mode, {}).setdefault(qid, {})[doc] = hit["source"].get("location")
                runs[mode][qid] = ranked
                RAW.setdefault(mode, {})[f"{SET[0]}:{qid}"] = [(doc_of(h["source"]["filepath"]), h["source"].get("chunk_index"),
                                                  h["relevance_score"]) for h in r.structured_content["results"]]
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


def either_hit(runs, answers, cut):
    """The share of queries whose answer is in fulltext's or semantic's first `cut`: the most any
    fusion of those two lists can reach at hit@cut."""
    return sum(any((r := first_hit(runs[m].get(q, []), a)) is not None and r < cut for m in ("fulltext", "semantic"))
               for q, a in answers.items()) / len(answers)


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
    runs, latencies = rankings(ws, queries, lambda p: pathlib.PurePath(p).stem)
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


def tldr_sample(pages, rng, among=None):
    """`pages` with one example description cut from each of 300 random pages (those `among` accepts);
    the cut descriptions as queries."""
    candidates = [name for name, text in pages.items()
                  if (among is None or among(name)) and sum(bool(EXAMPLE.match(l)) for l in text.splitlines()) >= 2]
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


def tldr_set(samples, half=None):
    """The tldr set; with `half`, the held-out tasks set: questions only from that half's pages,
    drawn with seeds of their own."""
    pages = tldr_pages()
    ws = CACHE / "tldr"
    per_sample = []
    for seed in range(1, samples + 1):
        rng = random.Random(seed if half is None else 1000 + seed)
        edited, queries = tldr_sample(pages, rng, among=half and (lambda name: half_of(name) == half))
        write_workspace(ws, {f"pages/{name}.md": text for name, text in edited.items()})
        seconds = index(ws)
        answers = {q: {q} for q in queries}
        SET[0] = f"{'tasks' if half else 'tldr'}{seed}"
        keep_answers(answers)
        runs, latencies = rankings(ws, queries, lambda p: pathlib.PurePath(p).stem)
        runs["bm25s"] = bm25s_rankings(edited, queries)
        runs["tantivy-py"] = tantivy_rankings(edited, queries)
        per_sample.append({"seed": seed, "index_s": seconds, "p50": {m: p50_ms(l) for m, l in latencies.items()},
                           "scores": {name: hits_metrics(run, answers, 5) for name, run in runs.items()},
                           "either": either_hit(runs, answers, 5)})
        print(f"{SET[0]}: " + ", ".join(f"{n} {s['hit5']:.3f}" for n, s in per_sample[-1]["scores"].items()),
              flush=True)
    return {"queries": QUERIES_PER_SAMPLE, "docs": len(pages), "samples": per_sample,
            "scores": mean_scores([s["scores"] for s in per_sample]),
            "either": statistics.mean(s["either"] for s in per_sample)}


def keep_answers(answers):
    """Keeps the set's accepted answers beside its ranked lists, for bench/fusion.py."""
    ANSWERS.update({f"{SET[0]}:{q}": sorted(a) for q, a in answers.items()})


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
    runs, latencies = rankings(ws, queries, skill_folder, skills=True)
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


# ---------------------------------------------------------------- held-out sets
#
# Each held-out set is split in two by a stable hash: the tuning half is what
# ragbox's choices were measured on, the reporting half is all that the report
# shows. Every document stays in the workspace; only the questions are halved.


def half_of(key):
    return "tune" if zlib.crc32(key.encode()) % 2 == 0 else "report"


REGISTRY = pathlib.Path(os.environ.get("CARGO_HOME", pathlib.Path.home() / ".cargo")) / "registry" / "src"
# Real codebases from the cargo registry, all in Cargo.lock (`cargo fetch` brings them):
# the tuning half asks about three crates, the reporting half about another.
CODEBASES = {"tune": ("redb-4.5.0", "clap_builder-4.6.7", "serde_json-1.0.154"), "report": ("tokio-1.54.1",)}
CODE_QUESTIONS = 200
FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"C\"\s+)?fn\s+(\w+)")
DOC = re.compile(r"^\s*///(?!/)\s?(.*)$")
ATTR = re.compile(r"^\s*#\[")


def crate_dir(name):
    found = sorted(REGISTRY.glob(f"*/{name}/src"))
    if not found:
        raise SystemExit(f"{name} is not in {REGISTRY}: run `cargo fetch` in the repository first")
    return found[0]


def first_sentence(text):
    text = re.sub(r"\s+", " ", text).strip()
    m = re.search(r"(?<=[a-z0-9)`])\.(\s|$)", text)
    return text[: m.start()] if m else text


def code_questions(files, rng):
    """Per file at most one function: its doc comment's first sentence (the question) and the file
    with that doc comment cut out, plus the function's text as it stands in the edited file."""
    found = {}
    for rel in rng.sample(sorted(files), len(files)):
        lines = files[rel].splitlines(keepends=True)
        options = []
        for i, line in enumerate(lines):
            name = FN.match(line)
            if not name:
                continue
            j = i - 1
            while j >= 0 and ATTR.match(lines[j]):
                j -= 1
            docs = []
            while j >= 0 and DOC.match(lines[j]):
                docs.insert(0, j)
                j -= 1
            if not docs:
                continue
            para = []
            for d in docs:
                t = DOC.match(lines[d]).group(1)
                if not t.strip():
                    break
                para.append(t)
            question = first_sentence(" ".join(para))
            if len(question.split()) < 5 or question.startswith(("#", "`", "[", "Safety", "See ")):
                continue
            options.append((i, docs, question, name.group(1)))
        if not options:
            continue
        i, docs, question, name = rng.choice(options)
        edited = [l for k, l in enumerate(lines) if k not in set(docs)]
        start = i - len(docs)
        body = function_text(edited, start)
        if body is None:
            continue
        found[rel] = {"question": question, "edited": "".join(edited), "function": body, "name": name}
        if len(found) == CODE_QUESTIONS:
            break
    return found


def function_text(lines, start):
    """The function starting at `lines[start]` up to its closing brace (brackets counted
    naively); None for one without a body."""
    depth, opened = 0, False
    for k in range(start, min(len(lines), start + 2000)):
        for ch in lines[k]:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
            elif ch == ";" and not opened:
                return None
        if opened and depth <= 0:
            return "".join(lines[start : k + 1])
    return None


LITERALS = re.compile(r'"(?:\\.|[^"\\])*"|b?\'(?:\\.|[^\'\\])\'|//.*')


def function_lines(text):
    """Each function's first and last line (1-based): `function_text`'s bracket count over the lines
    with one-line strings, character literals and line comments taken out (b'{' is no brace). Like
    the questions, it passes over a function with a `;` in its signature (`[T; N]`)."""
    lines = [LITERALS.sub("", line) for line in text.splitlines(keepends=True)]
    found = []
    for i, line in enumerate(lines):
        body = function_text(lines, i) if FN.match(line) else None
        if body is not None:
            found.append((i + 1, i + len(body.splitlines())))
    return found


def uncut_share(files, locations):
    """Of hits given as `path:a-b,c-d` lines, the share whose every range holds each function of
    the file it overlaps whole; a hit without lines (its file changed) is left out."""
    functions, whole, counted = {}, 0, 0
    for location in filter(None, locations):
        path, ranges = location.rsplit(":", 1)
        spans = [tuple(map(int, r.split("-"))) for r in ranges.split(",")]
        if path not in functions:
            functions[path] = function_lines(files[path])
        counted += 1
        whole += all(a > e or b < s or (a <= s and b >= e) for a, b in spans for s, e in functions[path])
    return whole / counted if counted else 0.0


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


def code_set(which):
    rng = random.Random(7)
    files, questions = {}, {}
    for crate in CODEBASES[which]:
        root = crate_dir(crate)
        crate_files = {f"{crate}/{p.relative_to(root)}": p.read_text(errors="replace") for p in sorted(root.rglob("*.rs"))}
        picked = code_questions(crate_files, rng)
        files.update(crate_files)
        for rel, q in picked.items():
            files[rel] = q["edited"]
            questions[rel] = q
    qs = dict(list(questions.items())[:CODE_QUESTIONS])
    ws = CACHE / f"code-{which}"
    write_workspace(ws, files)
    seconds = index(ws)
    queries = {rel: q["question"] for rel, q in qs.items()}
    answers = {rel: {rel} for rel in qs}
    keep_answers(answers)
    passages, places = {}, {}
    doc_of = lambda p: p  # noqa: E731
    runs, latencies = rankings(ws, queries, doc_of, passages=passages, places=places)
    runs["bm25s"] = bm25s_rankings(files, queries)
    runs["tantivy-py"] = tantivy_rankings(files, queries)
    scores = {name: hits_metrics(run, answers, 5) for name, run in runs.items()}
    either = either_hit(runs, answers, 5)
    # Whole units: of the hits in the right file, how many hold the whole function asked about.
    whole = {}
    for mode in MODES:
        found = [(rel, passages[mode][rel][rel]) for rel in qs if rel in passages.get(mode, {}).get(rel, {})]
        whole[mode] = (sum(squash(qs[rel]["function"]) in squash(text) for rel, text in found) / len(found)
                       if found else 0.0)
    # Whole units as an agent meets them: of the first five results, the share whose pieces cut
    # no function of their file in two (a piece holds each function it touches whole).
    uncut = {mode: uncut_share(files, [places[mode][rel][d] for rel in qs for d in runs[mode][rel][:5]])
             for mode in MODES}
    # What that costs an agent: the text of the first five results, per question.
    text5 = {mode: statistics.mean(sum(len(passages[mode][rel][d].encode()) for d in runs[mode][rel][:5]) for rel in qs)
             for mode in MODES}
    # Exact identifiers: the function's name alone as the query; is the first file one holding it?
    idents = {f"id:{rel}": q["name"] for rel, q in qs.items() if len(q["name"]) >= 8 and "_" in q["name"]}
    id_runs, _ = asyncio.run(ragbox_rankings(ws, idents, doc_of))
    exact = {mode: sum(bool(id_runs[mode][q]) and idents[q] in files[id_runs[mode][q][0]] for q in idents)
             / max(1, len(idents)) for mode in MODES}
    exact["bm25s"] = sum(bool(r) and idents[q] in files[r[0]] for q, r in bm25s_rankings(files, idents).items()) / max(1, len(idents))
    return {"queries": len(qs), "docs": len(files), "index_s": seconds, "codebases": CODEBASES[which],
            "p50": {m: p50_ms(l) for m, l in latencies.items()}, "scores": scores, "either": either, "whole": whole,
            "uncut": uncut,
            "text5": text5, "identifiers": len(idents), "exact": exact}


def frontmatter_description(text):
    m = re.match(r"^---\s*\n(.*?)\n---\s*\n", text, re.S)
    if not m:
        return None, text
    yaml, body = m.group(1), text[m.end():]
    lines = yaml.splitlines()
    for i, line in enumerate(lines):
        d = re.match(r"^description:\s*(.*)$", line)
        if not d:
            continue
        value = d.group(1).strip()
        if value in ("|", ">", "|-", ">-", ""):
            more = []
            for nxt in lines[i + 1:]:
                if nxt.startswith((" ", "\t")):
                    more.append(nxt.strip())
                else:
                    break
            value = " ".join(more)
        return value.strip("'\""), body
    return None, body


def prose_set(which):
    """Skill bodies as plain Markdown documentation (frontmatter cut, so not indexed as skills);
    each one's description, never in the indexed text, asks for it."""
    files, queries = {}, {}
    for p in sorted(SKILLS.rglob("SKILL.md")):
        folder = str(p.parent.relative_to(SKILLS))
        description, body = frontmatter_description(p.read_text())
        files[f"{folder}/guide.md"] = body
        question = first_sentence(description or "")
        if half_of(folder) == which and len(question.split()) >= 5:
            queries[folder] = question
    ws = CACHE / "prose"
    write_workspace(ws, files)
    seconds = index(ws)
    answers = {q: {q} for q in queries}
    keep_answers(answers)
    doc_of = lambda p: str(pathlib.PurePath(p).parent)  # noqa: E731
    runs, latencies = rankings(ws, queries, doc_of)
    docs = {str(pathlib.PurePath(rel).parent): t for rel, t in files.items()}
    runs["bm25s"] = bm25s_rankings(docs, queries)
    runs["tantivy-py"] = tantivy_rankings(docs, queries)
    return {"queries": len(queries), "docs": len(files), "index_s": seconds,
            "p50": {m: p50_ms(l) for m, l in latencies.items()},
            "scores": {name: hits_metrics(run, answers, 5) for name, run in runs.items()},
            "either": either_hit(runs, answers, 5)}


# ---------------------------------------------------------------- report


def table(scores, columns, best_of=MODES):
    names = [*best_of, *(n for n in scores if n not in best_of)]
    lines = ["| system | " + " | ".join(label for _, label in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name in names:
        label = f"ragbox {name}" if name in MODES else ("ragbox search_skills" if name == "search_skills" else name)
        lines.append(f"| {label} | " + " | ".join(f"{scores[name][key]:.3f}" for key, _ in columns) + " |")
    return lines


def best_bm25(scores, key):
    return max(scores[n][key] for n in ("bm25s", "tantivy-py"))


def verdict(scores, key):
    """Hybrid against the better of its own inputs and against the best BM25 baseline."""
    f, s, h = (scores[m][key] for m in MODES)
    bm25 = best_bm25(scores, key)
    return (f"hybrid − max(fulltext, semantic) = {h - max(f, s):+.3f}; fulltext − best BM25 = {f - bm25:+.3f}; "
            f"hybrid − best BM25 = {h - bm25:+.3f}")


def section(title, r, columns, key, note=None, extra=()):
    """One set's part of the report: its table, the verdict on `key`, the fusion ceiling where
    measured, then `extra` lines."""
    ceiling = []
    if "either" in r:
        bm25 = best_bm25(r["scores"], "hit5")
        ceiling = [f"Fusion's ceiling: the answer is in fulltext's or semantic's first five for {r['either']:.3f} of "
                   f"the questions (best BM25 {r['either'] - bm25:+.3f}); no fusion of the two lists can reach a "
                   "higher hit@5.", ""]
    return [f"## {title}\n", *table(r["scores"], columns), "",
            verdict(r["scores"], key) + (f" ({note})." if note else "."), "", *ceiling, *extra]


HITS5 = [("hit1", "hit@1"), ("hit5", "hit@5"), ("mrr", "MRR")]


def report(results, command, total):
    lines = [
        "# Retrieval quality: six kinds of question, one run\n",
        f"- command: `{command}`, {total / 60:.1f} min in all",
        f"- machine: {peers.machine()}; CPU flags: {peers.cpu_flags()}",
        f"- ragbox: {subprocess.run([peers.RAGBOX, '--version'], capture_output=True, text=True).stdout.strip()}; "
        "its `search` tool over MCP stdio, 50 results (one per file, no token cut)"
        + (f"; `before` rows: {BEFORE[0]}, each build's keyword index rebuilt from the same store before it answers"
           if BEFORE[0] else ""),
        "- baselines: bm25s (English stop words, Snowball stemmer) and tantivy-py (`en_stem`) over whole documents",
        "",
    ]
    if "scifact" in results:
        r = results["scifact"]
        lines += section(f"SciFact: claim → abstract ({r['queries']} claims, {r['docs']:,} abstracts)", r,
                         [("ndcg10", "nDCG@10")], "ndcg10", extra=[
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
        ])
    if "tldr" in results:
        r = results["tldr"]
        lines += section(f"tldr: task → command page ({len(r['samples'])} samples × {r['queries']} descriptions cut "
                         f"from their pages, {r['docs']:,} pages; mean over samples)", r, HITS5, "hit5", "hit@5", [
            "Per sample, hit@5: " + "; ".join(
                f"seed {s['seed']}: " + ", ".join(f"{n} {v['hit5']:.3f}" for n, v in s["scores"].items())
                for s in r["samples"]) + ".",
            "",
        ])
    if "skills" in results:
        r = results["skills"]
        lines += section(f"Skills: which skill does X? ({r['queries']} paraphrased questions, {r['docs']} SKILL.md)",
                         r, [("hit1", "hit@1"), ("hit3", "hit@3"), ("mrr", "MRR")], "mrr", "MRR")
    if "code" in results:
        r = results["code"]
        lines += section(f"Held out, code: doc comment → source file ({r['queries']} functions of "
                         f"{', '.join(r['codebases'])}, {r['docs']:,} files; reporting half)", r, HITS5, "hit5",
                         "hit@5", [
            "Whole units: of the first five results, the share whose pieces cut no function of their file in two "
            "(brackets counted past one-line strings and comments; a brace in a raw string can still count one as cut): "
            + ", ".join(f"{m} {v:.2f}" for m, v in r.get("uncut", {}).items()) + ". "
            "Of the hits in the right file, the share holding the function asked about: "
            + ", ".join(f"{m} {v:.2f}" for m, v in r["whole"].items()) + "; the text of the first five results, "
            "per question: " + ", ".join(f"{m} {v / 1000:.1f} KB" for m, v in r.get("text5", {}).items()) + ".",
            "",
            f"Exact identifiers: {r['identifiers']} snake_case function names asked alone; the share whose first "
            "file holds the name: " + ", ".join(f"{m} {v:.2f}" for m, v in r["exact"].items()) + ".",
            "",
        ])
    if "tasks" in results:
        r = results["tasks"]
        lines += section(f"Held out, tasks: task → command page ({len(r['samples'])} samples × {r['queries']} "
                         f"descriptions from the reporting half's pages, {r['docs']:,} pages indexed)", r, HITS5,
                         "hit5", "hit@5")
    if "prose" in results:
        r = results["prose"]
        lines += section(f"Held out, prose: description → guide ({r['queries']} questions, {r['docs']} skill bodies "
                         "as plain Markdown; reporting half)", r, HITS5, "mrr",
                         "MRR; hit@5 is near 1 for every system")
    plot(results)
    if any(n in results for n in ("code", "tasks", "prose")):
        lines += ["![held-out sets](quality.png)", ""]
    out = peers.RESULTS / "quality.md"
    out.write_text("\n".join(lines))
    print(out.read_text())


def plot(results):
    """Bars per held-out set: each system's headline metric, written to bench/results/quality.png."""
    shown = [(n, k) for n, k in (("code", "hit5"), ("tasks", "hit5"), ("prose", "mrr")) if n in results]
    if not shown:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = [*MODES, "bm25s", "tantivy-py"]
    fig, axes = plt.subplots(1, len(shown), figsize=(4 * len(shown), 3.6), squeeze=False)
    for ax, (name, key) in zip(axes[0], shown):
        values = [results[name]["scores"][s][key] for s in systems]
        ax.bar(range(len(systems)), values, color=["#1f77b4", "#aec7e8", "#08306b", "#ff7f0e", "#ffbb78"])
        ax.set_xticks(range(len(systems)), [s.replace("tantivy-py", "tantivy") for s in systems], rotation=30)
        ax.set_ylim(min(values) - 0.1, min(1.0, max(values) + 0.05))
        ax.set_title(f"{name} ({'hit@5' if key == 'hit5' else 'MRR'})")
        for i, v in enumerate(values):
            ax.text(i, v + 0.005, f"{v:.3f}", ha="center", fontsize=8)
    fig.suptitle("held-out sets, reporting half: ragbox modes beside BM25")
    fig.tight_layout()
    fig.savefig(peers.RESULTS / "quality.png", dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="scifact,tldr,skills,code,tasks,prose")
    parser.add_argument("--half", choices=("tune", "report"), default="report",
                        help="which half of the held-out sets (code, tasks, prose) to ask; only `report` writes "
                             "bench/results/quality.md, `tune` prints")
    parser.add_argument("--samples", type=int, default=3, help="tldr samples of 300 questions (default 3)")
    parser.add_argument("--before", help="an older ragbox binary to answer beside this one (quality and SciFact latency)")
    args = parser.parse_args()
    if not peers.RAGBOX.exists():
        raise SystemExit(f"{peers.RAGBOX} is missing: run `make release` (make bench does)")
    CACHE.mkdir(parents=True, exist_ok=True)
    peers.LOG.write_text("")
    BEFORE[0] = pathlib.Path(args.before) if args.before else None
    started = time.perf_counter()
    results = {}
    for name in args.sets.split(","):
        SET[0] = name
        if name == "scifact":
            results[name] = scifact_set(args.before)
        elif name == "tldr":
            results[name] = tldr_set(args.samples)
        elif name == "skills":
            results[name] = skills_set()
        elif name == "code":
            results[name] = code_set(args.half)
        elif name == "tasks":
            results[name] = tldr_set(args.samples, args.half)
        elif name == "prose":
            results[name] = prose_set(args.half)
        else:
            raise SystemExit(f"unknown set {name!r}: use scifact, tldr, skills, code, tasks, prose")
        print(f"{name}: " + ", ".join(f"{n} {json.dumps(s)}" for n, s in results[name]["scores"].items()), flush=True)
    command = "bench/.venv/bin/python bench/quality.py " + " ".join(
        "BIN" if a == args.before else a for a in sys.argv[1:])
    if args.half == "tune":
        # The latencies are keyed by (binary, mode): not JSON, and not what tuning reads.
        tuned = {name: {k: v for k, v in r.items() if k != "latency"} for name, r in results.items()}
        (CACHE / "tune.json").write_text(json.dumps(tuned, indent=1, default=str))
        (CACHE / "lists.json").write_text(json.dumps({"lists": RAW, "answers": ANSWERS}))
        for name, r in results.items():
            print(name, json.dumps({k: v for k, v in r.items() if k not in ("samples", "latency")}, default=str))
        return
    report(results, command.strip(), time.perf_counter() - started)


if __name__ == "__main__":
    main()
