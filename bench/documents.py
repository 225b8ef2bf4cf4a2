"""Documents that are not text: retrieval quality on SciFact rendered to PDF and
DOCX beside the same abstracts as plain text, and PDF extraction throughput
beside pdftotext (poppler) and pypdf, in one run. Writes bench/results/documents.md.

    bench/.venv/bin/python bench/documents.py [--docs N|all] [--skip-quality] [--skip-throughput]

- Documents: every SciFact abstract relevant to a test claim, plus seeded-random
  others up to --docs (default 1,000; `all` is the 5,183). Each is written as
  plain text (ID.txt: the title, a blank line, the abstract's paragraphs) and as
  HTML (an <h1> title, a <p> per paragraph), which LibreOffice renders to PDF and
  to DOCX in batches. The rendered folders are kept in bench/.cache/documents/N/,
  so a re-run renders nothing.
- Quality: three workspaces (txt, pdf, docx), each indexed from scratch by
  `ragbox index` and asked every test claim through MCP `search` (hybrid, 50
  results, as bench/quality.py asks); nDCG@10 over the qrels of the documents
  present.
- Throughput: the PDFs' pages over the wall time to extract them all with
  `pdftotext FILE -` (a process a file), pypdf in this process, and
  `ragbox extract --json` (the indexer's sandboxed extractor; a process per 200
  files), taking turns, the median of 3 runs each; ragbox also by the sum of the
  per-file times it reports.
- Sanity: per extractor and format, files that failed, and the text recovered
  beside the plain text (characters other than white space, and words kept).
"""

import argparse
import asyncio
import collections
import hashlib
import json
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import unicodedata

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  (shared harness pieces: data paths, SciFact, nDCG, MCP session, machine line)
import pypdf  # noqa: E402

CACHE = peers.CACHE / "documents"
SOFFICE = os.environ.get("SOFFICE", "soffice")
PDFTOTEXT = os.environ.get("PDFTOTEXT", "pdftotext")
SEED = 20240611
RENDER_BATCH = 200  # files per soffice process
EXTRACT_BATCH = 200  # paths per `ragbox extract` process
EACH = 100  # files given a `ragbox extract` process each, for its start-up cost
EACH_NAME = "ragbox, a process a file"
ROUNDS = 3
LOAD = os.getloadavg()  # at the start, for the report
FORMATS = ("txt", "pdf", "docx")
# LibreOffice opens .html as a Writer/Web document by default, whose PDF export
# puts the <h1> nowhere; read as a Writer document, both exports keep it.
INFILTER = "HTML (StarWriter)"
TARGETS = {"pdf": "pdf:writer_pdf_Export", "docx": "docx:MS Word 2007 XML"}


# ---------------------------------------------------------------- documents


def select(docs, relevant, n):
    """The ids to render: every relevant one, then seeded-random others up to n (all with n=None)."""
    wanted = sorted(set().union(*relevant.values()) & set(docs), key=int)
    if n is None:
        return sorted(docs, key=int)
    rng = random.Random(SEED)
    if n <= len(wanted):
        return sorted(rng.sample(wanted, n), key=int)
    others = sorted(set(docs) - set(wanted), key=int)
    return sorted(wanted + rng.sample(others, min(n - len(wanted), len(others))), key=int)


def title_and_paragraphs(markdown):
    """peers.scifact()'s `# title\\n\\ntext\\n` as the title and the abstract's paragraphs
    (SciFact separates structured sections, BACKGROUND, METHODS, ..., with newlines)."""
    head, _, body = markdown.partition("\n\n")
    title = head[2:] if head.startswith("# ") else head
    return title.strip(), [p.strip() for p in body.split("\n") if p.strip()]


def plain(title, paragraphs):
    return "\n\n".join([title, *paragraphs]) + "\n"


def html(title, paragraphs):
    esc = lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # noqa: E731
    body = "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs)
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(title)}</title></head>\n'
            f"<body>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n")


def soffice(target, files, outdir, profile):
    """Renders `files` with LibreOffice to `target` in `outdir`; the seconds it took."""
    started = time.perf_counter()
    for start in range(0, len(files), RENDER_BATCH):
        batch = files[start:start + RENDER_BATCH]
        cmd = [SOFFICE, "--headless", f"-env:UserInstallation={profile.as_uri()}", f"--infilter={INFILTER}",
               "--convert-to", target, "--outdir", str(outdir), *map(str, batch)]
        with peers.LOG.open("a") as log:
            log.write(f"\n$ soffice --convert-to {target} ({len(batch)} files)\n")
            log.flush()
            subprocess.run(cmd, stdout=log, stderr=log, check=True, timeout=3600)
    return time.perf_counter() - started


def render(ids, texts, key):
    """bench/.cache/documents/KEY/{txt,html,pdf,docx}: each abstract as text, HTML, PDF and DOCX.
    Kept between runs; rendered again only when the selection or the texts change."""
    root = CACHE / key
    digest = hashlib.sha256(json.dumps([(i, texts[i]) for i in ids]).encode()).hexdigest()
    stamp = root / "rendered.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("digest") == digest and all(
            (root / fmt / f"{i}.{fmt}").exists() for fmt in FORMATS for i in ids):
        print(f"rendered documents: {root} (cached)", flush=True)
        return root
    shutil.rmtree(root, ignore_errors=True)
    for sub in ("txt", "html", "pdf", "docx"):
        (root / sub).mkdir(parents=True)
    for i in ids:
        title, paragraphs = title_and_paragraphs(texts[i])
        (root / "txt" / f"{i}.txt").write_text(plain(title, paragraphs))
        (root / "html" / f"{i}.html").write_text(html(title, paragraphs))
    profile = pathlib.Path(f"/tmp/lo-bench-{os.getpid()}")
    seconds = {}
    try:
        sources = [root / "html" / f"{i}.html" for i in ids]
        for fmt, target in TARGETS.items():
            seconds[fmt] = soffice(target, sources, root / fmt, profile)
            missing = [p for p in sources if not (root / fmt / f"{p.stem}.{fmt}").exists()]
            if missing:  # one more try, one file a process, before giving up
                for p in missing:
                    soffice(target, [p], root / fmt, profile)
                missing = [p for p in sources if not (root / fmt / f"{p.stem}.{fmt}").exists()]
                if missing:
                    raise SystemExit(f"LibreOffice rendered no {fmt} for {len(missing)} files, e.g. {missing[0]}; "
                                     f"see {peers.LOG}")
            print(f"rendered {len(ids)} {fmt} with LibreOffice in {seconds[fmt]:.0f} s", flush=True)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    stamp.write_text(json.dumps({"digest": digest, "ids": ids, "render_seconds": seconds}))
    return root


# ---------------------------------------------------------------- quality


def index(ws):
    """Indexes `ws` from scratch; seconds and the indexing report (`ragbox index --json`)."""
    shutil.rmtree(ws / ".ragbox", ignore_errors=True)
    started = time.perf_counter()
    with peers.LOG.open("a") as log:
        out = subprocess.run([peers.RAGBOX, "index", "--workspace", ws, "--json"], stdout=subprocess.PIPE,
                             stderr=log, env=peers.ragbox_env(), text=True)
    seconds = time.perf_counter() - started
    try:
        report = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise SystemExit(f"ragbox index --workspace {ws} failed ({out.returncode}); see {peers.LOG}")
    return seconds, report


async def rankings(ws, queries):
    """Each claim's documents in the order ragbox's hybrid `search` gives them."""
    runs = {}
    async with peers.mcp_session(peers.ragbox_server(ws)) as session:
        await session.initialize()
        for qid, text in queries.items():
            r = await peers.checked(session, "search", {"query": text, "search_type": "hybrid", "limit": 50,
                                                        "max_tokens": 200000})
            ranked = []
            for hit in r.structured_content["results"]:
                doc = pathlib.PurePath(hit["source"]["filepath"]).stem
                if doc not in ranked:
                    ranked.append(doc)
            runs[qid] = ranked
    return runs


def quality(root, ids, queries, relevant):
    present = set(ids)
    rel = {q: r & present for q, r in relevant.items() if r & present}
    asked = {q: queries[q] for q in rel}
    out = {}
    for fmt in FORMATS:
        ws = root / fmt
        seconds, report = index(ws)
        indexed = report.get("embedded", 0) + report.get("skipped", 0)
        print(f"{fmt}: indexed {indexed} of {len(ids)} files in {seconds:.1f} s, "
              f"{len((report.get('errors') or []))} errors", flush=True)
        runs = asyncio.run(rankings(ws, asked))
        per_query = {q: peers.ndcg10(runs[q], rel[q]) for q in rel}
        out[fmt] = {"index_s": seconds, "report": report, "indexed": indexed, "runs": runs,
                    "ndcg10": statistics.mean(per_query.values()), "per_query": per_query}
        print(f"{fmt}: nDCG@10 {out[fmt]['ndcg10']:.4f}", flush=True)
    return out, len(rel)


# ---------------------------------------------------------------- extraction


def pdftotext_all(files):
    texts = {}
    for f in files:
        r = subprocess.run([PDFTOTEXT, str(f), "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        texts[f.stem] = r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None
    return texts, {}


def pypdf_all(files):
    texts = {}
    for f in files:
        try:
            reader = pypdf.PdfReader(f)
            texts[f.stem] = "\n".join(page.extract_text() for page in reader.pages)
        except Exception:  # noqa: BLE001  (a failure is counted, not fatal)
            texts[f.stem] = None
    return texts, {}


def ragbox_all(files):
    """`ragbox extract --json`, EXTRACT_BATCH paths a process: texts by id, plus the sum of the
    per-file milliseconds it reports, its parts per file and its errors."""
    texts, parts, errors, titles, ms = {}, {}, {}, {}, 0.0
    for start in range(0, len(files), EXTRACT_BATCH):
        batch = files[start:start + EXTRACT_BATCH]
        cmd = [peers.RAGBOX, "extract", "--json", "--workspace", batch[0].parent, *batch]
        with peers.LOG.open("a") as log:
            r = subprocess.run(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=log, env=peers.ragbox_env(),
                               text=True)
        for line in r.stdout.splitlines():
            obj = json.loads(line)
            doc = pathlib.PurePath(obj["path"]).stem
            ms += obj.get("ms", 0.0)
            if "error" in obj:
                errors[doc] = obj["error"]
                texts[doc] = None
            else:
                texts[doc] = "\n".join(p["text"] for p in obj["parts"])
                parts[doc] = [p.get("label") for p in obj["parts"]]
                titles[doc] = obj.get("title")
        for f in batch:
            if f.stem not in texts:
                texts[f.stem] = None
                errors[f.stem] = f"no line for it in `ragbox extract` output (exit {r.returncode}; see {peers.LOG})"
    return texts, {"ms": ms, "parts": parts, "errors": errors, "titles": titles}


def ragbox_each(files):
    """`ragbox extract --json` a process a file, as pdftotext is run, on the first EACH files only."""
    texts = {}
    for f in files[:EACH]:
        t, _ = ragbox_all([f])
        texts.update(t)
    return texts, {}


EXTRACTORS = {"pdftotext": pdftotext_all, "pypdf": pypdf_all, "ragbox": ragbox_all, EACH_NAME: ragbox_each}


def ragbox_can_extract():
    r = subprocess.run([peers.RAGBOX, "extract", "--help"], capture_output=True, text=True)
    return r.returncode == 0 and "--json" in r.stdout


def pages(files):
    return {f.stem: len(pypdf.PdfReader(f).pages) for f in files}


def throughput(root, ids, rounds, with_ragbox):
    """Per extractor: the wall seconds of each run over every PDF, and the texts of the first run."""
    files = [root / "pdf" / f"{i}.pdf" for i in ids]
    tools = [t for t in EXTRACTORS if (with_ragbox or not t.startswith("ragbox")) and (rounds or t != EACH_NAME)]
    if with_ragbox:
        ragbox_all(files[:2])  # warm-up: the extractor component compiled and cached, not timed
    walls = {t: [] for t in tools}
    texts, extras = {}, {}
    for n in range(max(rounds, 1)):
        for tool in tools:
            started = time.perf_counter()
            t, extra = EXTRACTORS[tool](files)
            walls[tool].append(time.perf_counter() - started)
            extras.setdefault(tool, []).append(extra)
            texts.setdefault(tool, t)
            print(f"round {n + 1}: {tool} {walls[tool][-1]:.2f} s", flush=True)
    return walls, texts, extras


# ---------------------------------------------------------------- sanity


HYPHENS = re.compile("\\s*[-\u00ad\u2010\u2011]\\s*")


def words(text):
    """Words in order, as counted here: NFKC, case-folded, hyphens taken out with the white space around
    them (at a line end, pdftotext joins `collateral-` and `dependent` into `collateraldependent`, pypdf
    keeps the hyphen and the line break: conventions, not losses)."""
    return re.findall(r"\w+", HYPHENS.sub("", unicodedata.normalize("NFKC", text).casefold()))


def sanity(plain_texts, extracted):
    """What one extractor recovered, beside the plain text: failures, characters other than white
    space (ratio), words kept (the plain text's words found as many times), extra words, the files
    whose words are the plain text's in the same order, and those that kept under 99 % of their words."""
    failed = [d for d, t in extracted.items() if t is None]
    ok = [d for d, t in extracted.items() if t is not None]
    nonspace = lambda s: sum(not c.isspace() for c in s)  # noqa: E731
    plain_chars = sum(nonspace(plain_texts[d]) for d in ok)
    got_chars = sum(nonspace(extracted[d]) for d in ok)
    total = kept = extra = in_order = 0
    worst = []
    for d in ok:
        p, e = words(plain_texts[d]), words(extracted[d])
        in_order += p == e
        p, e = collections.Counter(p), collections.Counter(e)
        n, k = sum(p.values()), sum((p & e).values())
        total, kept, extra = total + n, kept + k, extra + sum((e - p).values())
        if n and k / n < 0.99:
            worst.append((k / n, d, sorted((p - e).elements())[:8]))
    return {"files": len(extracted), "failed": failed, "chars": got_chars / max(plain_chars, 1),
            "kept": kept / max(total, 1), "extra": extra / max(total, 1), "in_order": in_order,
            "worst": sorted(worst)}


def titled(titles, docs):
    """How many extractions came with a title, and how many of those are the abstract's own title."""
    given = {d: t for d, t in titles.items() if t}
    same = sum(t.split() == title_and_paragraphs(docs[d])[0].split() for d, t in given.items())
    return f"{len(given):,} of {len(titles):,} files with one, {same:,} of them the abstract's title"


# ---------------------------------------------------------------- report


def cpu_flags():
    return " ".join(sorted({f for line in open("/proc/cpuinfo") if line.startswith("flags")
                            for f in line.split(":", 1)[1].split() if f.startswith(("avx", "fma", "f16c", "amx"))}))


def version(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return ((r.stdout or r.stderr).strip().splitlines() or ["?"])[0]


def report(ids, n_queries, q, walls, page_count, extras, sanity_rows, docx_ms, total_s):
    binary = peers.RAGBOX
    try:
        shown = binary.relative_to(peers.ROOT)
    except ValueError:
        shown = binary
    command = " ".join(["bench/.venv/bin/python bench/documents.py", *sys.argv[1:]])
    if "RAGBOX_BIN" in os.environ:
        command = f"RAGBOX_BIN={shown} {command}"
    lines = [
        "# Documents: SciFact as PDF and DOCX beside plain text\n",
        f"- command: `{command}`, {total_s / 60:.1f} min in all",
        f"- machine: {peers.machine()}; CPU flags: {cpu_flags()}; load average (1 min) at the start "
        f"{LOAD[0]:.1f}, at the end {os.getloadavg()[0]:.1f} (shared machine: other work runs beside this)",
        f"- ragbox: `{shown}` ({version([binary, '--version'])}); pdftotext: {version([PDFTOTEXT, '-v'])}; "
        f"pypdf {pypdf.__version__}; rendered by {version([SOFFICE, '--version'])}",
        f"- documents: {len(ids):,} SciFact abstracts (every one relevant to a test claim, the rest drawn at "
        f"random, seed {SEED}), each as plain text (`ID.txt`: title, blank line, paragraphs) and as HTML "
        f"(`<h1>` title, `<p>` paragraphs, `<title>`) rendered by LibreOffice (`--infilter=\"{INFILTER}\"`, "
        f"`--convert-to {TARGETS['pdf']}` and `--convert-to \"{TARGETS['docx']}\"`); "
        f"{n_queries} test claims with a relevant document among them",
        "",
    ]
    if q:
        base = q["txt"]["ndcg10"]
        worst = max(abs(q[f]["ndcg10"] - base) for f in ("pdf", "docx"))
        lines += [
            "## Retrieval quality\n",
            "Each workspace indexed from scratch by `ragbox index`; every claim asked through MCP `search` "
            "(hybrid, 50 results, one per file), each hit's file name mapped back to its SciFact id.\n",
            "| workspace | files | indexed | index errors | nDCG@10 | − plain text | top 10 shared with plain "
            "text | same first document | index time |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        txt_runs = q["txt"]["runs"]
        for fmt in FORMATS:
            r = q[fmt]
            shared = statistics.mean(len(set(r["runs"][k][:10]) & set(txt_runs[k][:10])) / max(len(txt_runs[k][:10]), 1)
                                     for k in r["runs"])
            first = sum(r["runs"][k][:1] == txt_runs[k][:1] for k in r["runs"])
            lines.append(f"| {fmt} | {len(ids):,} | {r['indexed']:,} | {len(r['report'].get('errors') or [])} | "
                         f"{r['ndcg10']:.4f} | {r['ndcg10'] - base:+.4f} | {shared * 100:.1f} % | "
                         f"{first} of {len(r['runs'])} | {r['index_s']:.1f} s |")
        lines += ["", f"Largest difference from plain text: {worst:.4f} "
                  f"({'within' if worst <= 0.01 else 'NOT within'} 0.01).", ""]
        for fmt in ("pdf", "docx"):
            errors = q[fmt]["report"].get("errors") or []
            if errors:
                lines.append(f"{fmt} indexing errors ({len(errors)}), e.g. `{errors[0]['path']}`: "
                             f"{errors[0]['error']}")
                lines.append("")
    if walls:
        n_pages = sum(page_count.values())
        measured = {t: n_pages for t in walls}
        if EACH_NAME in walls:
            measured[EACH_NAME] = sum(page_count[i] for i in ids[:EACH])
        med = {t: statistics.median(w) for t, w in walls.items()}
        lines += [
            "## PDF extraction throughput\n",
            f"{len(ids):,} PDFs, {n_pages:,} pages (pypdf's count). Wall time to extract every page of every file, "
            f"the extractors taking turns, {len(next(iter(walls.values())))} runs each, median shown. "
            "pdftotext: `pdftotext FILE -`, a process a file; pypdf: `PdfReader(f).pages[i].extract_text()` in "
            f"this Python process; ragbox: `ragbox extract --json`, {EXTRACT_BATCH} files a process (process "
            "start included), the sum of the per-file times it reports (read, sandboxed extraction), and, for "
            f"its start-up cost, a process a file as pdftotext is run (the first {min(EACH, len(ids))} files only; "
            "ragbox's "
            "indexer extracts in its own process).\n",
            "| extractor | median wall | pages/s | runs | ÷ pdftotext's pages/s |",
            "|---|---:|---:|---|---:|",
        ]
        rate = {t: measured[t] / s for t, s in med.items()}
        rows = [(t, walls[t]) for t in walls]
        if "ragbox" in walls:
            sums = [e["ms"] / 1e3 for e in extras["ragbox"]]
            measured["sum"], rate["sum"] = n_pages, n_pages / statistics.median(sums)
            med["sum"] = statistics.median(sums)
            rows.insert(list(walls).index("ragbox") + 1, ("sum", sums))
        for tool, runs in rows:
            name = {"sum": "ragbox, sum of per-file `ms`",
                    EACH_NAME: f"{EACH_NAME} (first {min(EACH, len(ids))} files)"}.get(tool, tool)
            lines.append(f"| {name} | {med[tool]:.2f} s | {rate[tool]:.0f} | "
                         f"{', '.join(f'{s:.2f}' for s in runs)} s | {rate[tool] / rate['pdftotext']:.2f} |")
        if "ragbox" in walls:
            ratio = rate["ragbox"] / rate["pdftotext"]
            lines += ["", f"ragbox (whole processes) extracts at {ratio:.2f}× pdftotext's pages/s: "
                      f"{'meets' if ratio >= 0.5 else 'does NOT meet'} the ≥ 0.5 target."]
            if docx_ms is not None:
                lines.append(f"For comparison, ragbox read the {len(ids):,} DOCX files in {docx_ms / 1e3:.2f} s "
                             "(sum of per-file `ms`, one run).")
        else:
            lines += ["", f"ragbox not measured: `{shown} extract --json` is not in this binary."]
        lines.append("")
    if sanity_rows:
        lines += [
            "## What was extracted\n",
            "Beside the plain text of the same files: characters other than white space (extracted ÷ plain), "
            "and words (NFKC, case-folded, hyphens and the white space around them taken out, `\\w+`): the share "
            "of the plain text's words found in the extraction as many times, and words it has that the plain "
            "text has not; files whose words are the plain text's, in the same order.\n",
            "| extractor | format | files | failed | characters ÷ plain | words kept | extra words | "
            "files under 99 % kept | same words in the same order |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for (tool, fmt), s in sanity_rows.items():
            lines.append(f"| {tool} | {fmt} | {s['files']:,} | {len(s['failed'])} | {s['chars']:.4f} | "
                         f"{s['kept'] * 100:.2f} % | {s['extra'] * 100:.2f} % | {len(s['worst'])} | "
                         f"{s['in_order']:,} |")
        lines.append("")
        for (tool, fmt), s in sanity_rows.items():
            if s["failed"]:
                why = extras.get(("errors", tool, fmt), {}).get(s["failed"][0], "")
                lines.append(f"- {tool} {fmt}: failed on {len(s['failed'])}, e.g. `{s['failed'][0]}.{fmt}`"
                             + (f": {why}" if why else ""))
            for kept, doc, lost in s["worst"][:3]:
                lines.append(f"- {tool} {fmt}: `{doc}.{fmt}` kept {kept * 100:.1f} % of its words; "
                             f"missing e.g. {', '.join(lost)}")
        for key in ("pages", "titles"):
            if key in extras:
                lines.append(f"- {extras[key]}")
        lines.append("")
    out = peers.RESULTS / "documents.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(out.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="1000", help="how many abstracts (every relevant one first), or `all`")
    parser.add_argument("--skip-quality", action="store_true", help="no indexing or searching")
    parser.add_argument("--skip-throughput", action="store_true",
                        help="extract once, untimed, for the sanity table only")
    args = parser.parse_args()
    n = None if args.docs == "all" else int(args.docs)
    if not peers.RAGBOX.exists():
        raise SystemExit(f"{peers.RAGBOX} is missing: run `make release`, or set RAGBOX_BIN")
    for tool in (SOFFICE, PDFTOTEXT):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not on PATH (LibreOffice and poppler-utils are needed)")
    CACHE.mkdir(parents=True, exist_ok=True)
    peers.LOG.write_text("")
    started = time.perf_counter()

    docs, queries, relevant = peers.scifact()
    ids = select(docs, relevant, n)
    root = render(ids, docs, "all" if n is None else str(n))
    plain_texts = {i: (root / "txt" / f"{i}.txt").read_text() for i in ids}
    print(f"SciFact: {len(ids)} documents", flush=True)

    q, n_queries = None, sum(bool(r & set(ids)) for r in relevant.values())
    if not args.skip_quality:
        q, n_queries = quality(root, ids, queries, relevant)

    with_ragbox = ragbox_can_extract()
    if not with_ragbox:
        print(f"{peers.RAGBOX} has no `extract --json`: ragbox's extraction is not measured", flush=True)
    walls, texts, extras = throughput(root, ids, 0 if args.skip_throughput else ROUNDS, with_ragbox)
    page_count = pages([root / "pdf" / f"{i}.pdf" for i in ids])
    rows, notes = {}, {}
    for tool in (t for t in walls if t != EACH_NAME):
        rows[(tool, "pdf")] = sanity(plain_texts, texts[tool])
    docx_ms = None
    if with_ragbox:
        notes[("errors", "ragbox", "pdf")] = extras["ragbox"][0]["errors"]
        docx_texts, docx_extra = ragbox_all([root / "docx" / f"{i}.docx" for i in ids])
        rows[("ragbox", "docx")] = sanity(plain_texts, docx_texts)
        notes[("errors", "ragbox", "docx")] = docx_extra["errors"]
        docx_ms = docx_extra["ms"]
        parts = extras["ragbox"][0]["parts"]
        off = [d for d, p in parts.items() if len(p) != page_count[d]]
        notes["titles"] = "ragbox's titles (the index's title field; the txt files have none): " + "; ".join(
            f"{fmt} {titled(extra['titles'], docs)}" for fmt, extra in (("pdf", extras["ragbox"][0]),
                                                                       ("docx", docx_extra)))
        notes["pages"] = (f"ragbox pdf parts: {sum(len(p) for p in parts.values()):,} parts for "
                          f"{sum(page_count.values()):,} pages; {len(off)} files whose part count differs from "
                          "their page count"
                          + (f", e.g. `{off[0]}.pdf`: {parts[off[0]]}" if off else ""))
    extras_out = {"ragbox": extras.get("ragbox", []), **notes}
    report(ids, n_queries, q, {} if args.skip_throughput else walls, page_count, extras_out, rows, docx_ms,
           time.perf_counter() - started)


if __name__ == "__main__":
    main()
