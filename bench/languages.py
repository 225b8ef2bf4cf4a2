"""Keyword, semantic and hybrid search in five languages: the Debian Reference
in its translations (English, Japanese, simplified Chinese, German, French),
cut into its sections, ragbox's search modes beside bm25s, in one run. Writes
bench/results/languages.md.

    bench/.venv/bin/python bench/languages.py [--langs en,ja,zh-cn,de,fr] [--half tune|report]
        [--before BIN]

Each language is a workspace of its own: one Markdown file per section (its
own text, without its subsections, its title or its number; files are named
by number, so no path word gives an answer away). Two kinds of question,
each section asked once, the kind picked by a stable hash of its id:
- title: the section's title (numbering cut), which no document holds;
- sentence: the section's first sentence, cut from the section.
A section is asked about only when it is translated (its title and text
differ from the English ones), and keeps at least 100 characters once cut.
The answer is that section. Questions are split into a tuning half and a
reporting half by another stable hash: ragbox's choices (the fusion weight
per language) were made on the tuning half, the report shows the other.

Beside ragbox: bm25s over the same files with character bigrams for CJK runs
(single characters for one-character runs, as Lucene's CJK analyzer) and
lowercased words for the rest; bm25s with the language's Snowball stemmer and
stop words (PyStemmer), the words a stemming analyzer should reach; and, for
Japanese and Chinese, bm25s over the words of a dictionary segmenter, Lindera
with the dictionary a Rust build would embed (IPADIC, jieba's), when its venv
is there (`python3 -m venv bench/.venv-lindera-ipadic` and `pip install
lindera-python-ipadic==2.2.0`; `-jieba` likewise: the bindings share a module
name). tests/benches/detection.rs reads the workspaces this writes.

With --before, an older ragbox binary answers the same questions in the same
run: the binaries take turns on each workspace, each rebuilding the keyword
index its own way from the same store (the vectors are shared).

The packages come from Debian with `apt-get download` into
bench/.cache/languages/deb and are unpacked there with `dpkg-deb -x` (no root
install): run once, on a machine with Debian's package lists.
"""

import argparse
import asyncio
import html.parser
import json
import pathlib
import re
import shutil
import subprocess
import sys
import time
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  (data paths, MCP session, machine line)
import quality  # noqa: E402  (workspaces, rankings, metrics)

import bm25s  # noqa: E402
import bm25s.stopwords  # noqa: E402
import Stemmer  # noqa: E402

CACHE = peers.CACHE / "languages"
DOCS = CACHE / "root" / "usr" / "share" / "debian-reference"
LANGS = {"en": "English", "ja": "Japanese", "zh-cn": "Chinese (simplified)", "de": "German", "fr": "French"}
# PyStemmer's and bm25s's names for each language's stemmer and stop words (none for CJK).
SNOWBALL = {"en": "english", "de": "german", "fr": "french"}
STOPWORDS = {"en": "STOPWORDS_EN", "de": "STOPWORDS_GERMAN", "fr": "STOPWORDS_FRENCH"}
MIN_CHARS = 100
# A dictionary segmenter beside the bigrams: Lindera (the Rust crate, through its Python binding, one venv per
# dictionary as the bindings share a module name) with the dictionary a Rust build would embed.
LINDERA = {"ja": "ipadic", "zh-cn": "jieba"}
# Every ranked list ragbox returned, per binary, language, mode and question (for the fusion weights).
LISTS = {}
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"


def fetch():
    """The packages, downloaded and unpacked once."""
    if DOCS.exists():
        return
    deb = CACHE / "deb"
    deb.mkdir(parents=True, exist_ok=True)
    names = [f"debian-reference-{lang}" for lang in LANGS]
    subprocess.run(["apt-get", "download", *names], cwd=deb, check=True)
    for package in sorted(deb.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", package, CACHE / "root"], check=True)


# ---------------------------------------------------------------- sections


class Sections(html.parser.HTMLParser):
    """The sections of one DocBook HTML chapter: id, title and own text (without subsections)."""

    BLOCKS = {"p", "pre", "li", "tr", "dt", "dd", "div", "table", "h1", "h2", "h3", "h4", "h5", "br", "blockquote"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found = []  # [id, title, [text pieces]]
        self.open = []  # per open <div>: the index of the section it opened, or None
        self.stack = []  # the sections open, innermost last
        self.titlepage = None  # the div depth of an open titlepage
        self.skip = None  # the div depth of an open toc or navigation block
        self.heading = False
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "div":
            if self.skip is None and any(c in cls for c in ("toc", "navheader", "navfooter", "list-of-tables")):
                self.skip = len(self.open)
            if "section" in cls:
                self.found.append([None, "", []])
                self.stack.append(len(self.found) - 1)
                self.open.append(len(self.found) - 1)
            else:
                self.open.append(None)
            if "titlepage" in cls and self.titlepage is None:
                self.titlepage = len(self.open) - 1
        if tag in ("h2", "h3", "h4", "h5") and self.titlepage is not None and self.stack:
            self.heading = True
        if tag == "a" and self.heading and a.get("id") and self.stack:
            self.found[self.stack[-1]][0] = a["id"]
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCKS:
            self.text("\n")
        if tag in ("td", "th"):
            self.text(" | ")

    def handle_endtag(self, tag):
        if tag == "div" and self.open:
            opened = self.open.pop()
            if opened is not None and self.stack and self.stack[-1] == opened:
                self.stack.pop()
            if self.titlepage is not None and len(self.open) <= self.titlepage:
                self.titlepage = None
            if self.skip is not None and len(self.open) <= self.skip:
                self.skip = None
        if tag in ("h2", "h3", "h4", "h5"):
            self.heading = False
        if tag == "pre":
            self.pre -= 1
        if tag in self.BLOCKS:
            self.text("\n")

    def handle_data(self, data):
        if self.heading and self.stack:
            self.found[self.stack[-1]][1] += data
        elif self.titlepage is None:
            self.text(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self, piece):
        if self.stack and self.skip is None and self.titlepage is None:
            self.found[self.stack[-1]][2].append(piece)


def sections(lang):
    """Every section of the language's edition: id → (title without its number, own text)."""
    out = {}
    for page in sorted(DOCS.glob(f"*.{lang}.html")):
        parser = Sections()
        parser.feed(page.read_text())
        for sid, title, pieces in parser.found:
            if sid is None:
                continue
            title = re.sub(r"^\s*[\dA-Z]+(\.\d+)*\.\s*", "", re.sub(r"\s+", " ", title)).strip()
            body = re.sub(r"[ \t]*\n[ \t\n]*", "\n", "".join(pieces)).strip()
            body = re.sub(r"\n(?!\s)", "\n\n", body)  # one paragraph per block, as Markdown
            out[sid] = (title, body)
    return out


def first_sentence(lang, body):
    """The body's first sentence and the body without it; None when it has none worth asking."""
    paragraph = body.split("\n\n", 1)[0]
    if lang in ("ja", "zh-cn"):
        m = re.search(r"[。！？]", paragraph)
        end = m.end() if m else None
        long_enough = lambda s: len(re.findall(f"[{CJK}]", s)) >= 10  # noqa: E731
    else:
        m = re.search(r"(?<=[a-zà-ÿ0-9)])[.!?](\s|$)", paragraph)
        end = m.end() if m else None
        long_enough = lambda s: len(s.split()) >= 5  # noqa: E731
    if end is None:
        return None
    sentence = paragraph[:end].strip()
    if not long_enough(sentence):
        return None
    return sentence, body.replace(paragraph[:end], "", 1).strip()


def half_of(key):
    return "tune" if zlib.crc32(("half:" + key).encode()) % 2 == 0 else "report"


def kind_of(key):
    return "title" if zlib.crc32(("kind:" + key).encode()) % 2 == 0 else "sentence"


def language_set(lang, english, half):
    """The language's files (name → text), its questions (id → text), their answers and kinds, and
    the names of the files of translated sections."""
    own = sections(lang)
    ids = sorted(own)
    name = {sid: f"s{i:04d}.md" for i, sid in enumerate(ids)}
    files, queries, answers, kinds, translations = {}, {}, {}, {}, []
    for sid in ids:
        title, body = own[sid]
        translated = lang == "en" or (sid in english and english[sid][0] != title and english[sid][1] != body)
        if lang in ("ja", "zh-cn"):
            translated = translated and re.search(f"[{CJK}]", title) is not None
        kind = kind_of(sid)
        text = body
        if translated:
            translations.append(name[sid])
        if translated and half_of(sid) == half and title:
            if kind == "sentence":
                cut = first_sentence(lang, body)
                if cut is not None and len(cut[1]) >= MIN_CHARS:
                    queries[sid], text = cut
            elif len(body) >= MIN_CHARS:
                queries[sid] = title
            if sid in queries:
                answers[sid], kinds[sid] = {name[sid]}, kind
        if text:
            files[name[sid]] = text + "\n"
    return files, queries, answers, kinds, [n for n in translations if n in files]


# ---------------------------------------------------------------- bm25s


def cjk_bigrams(run):
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


TOKEN = re.compile(f"([{CJK}]+)|(\\w+)")


def bigram_tokens(text):
    """Character bigrams for CJK runs, lowercased words for the rest."""
    out = []
    for cjk, word in TOKEN.findall(text):
        out.extend(cjk_bigrams(cjk) if cjk else [word.lower()])
    return out


def bm25s_rank(files, queries, tokenize):
    names = list(files)
    started = time.perf_counter()
    retriever = bm25s.BM25()
    corpus = [tokenize(files[n]) or ["<empty>"] for n in names]
    retriever.index(corpus, show_progress=False)
    built = time.perf_counter() - started
    vocab = set(retriever.vocab_dict)
    runs = {}
    for qid, text in queries.items():
        tokens = [t for t in tokenize(text) if t in vocab]
        if not tokens:
            runs[qid] = []
            continue
        hits, scores = retriever.retrieve([tokens], k=min(50, len(names)), show_progress=False)
        runs[qid] = [names[i] for i, s in zip(hits[0], scores[0]) if s > 0]
    return runs, built


def python_of(lang):
    """The Python of the venv holding Lindera with the language's dictionary."""
    return peers.ROOT / "bench" / f".venv-lindera-{LINDERA[lang]}" / "bin" / "python"


def lindera_rank(lang, files, queries):
    """bm25s over Lindera's words, and the seconds Lindera took per MB of text; None without its venv."""
    python = python_of(lang)
    if not python.exists():
        return None
    names, qids = list(files), list(queries)
    request = json.dumps({"dictionary": LINDERA[lang], "texts": [files[n] for n in names] + [queries[q] for q in qids]})
    started = time.perf_counter()
    done = subprocess.run([python, peers.ROOT / "bench" / "peers" / "lindera_worker.py"], input=request,
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    cut = json.loads(done.stdout)
    by_text = dict(zip([files[n] for n in names] + [queries[q] for q in qids], cut))
    runs, _ = bm25s_rank(files, queries, lambda text: by_text[text])
    return runs, seconds / (sum(len(t.encode()) for t in files.values()) / 1e6)


def stemmed(lang):
    """bm25s's words with the language's stop words and Snowball stemmer; None for CJK."""
    if lang not in SNOWBALL:
        return None
    stemmer = Stemmer.Stemmer(SNOWBALL[lang])
    stop = set(getattr(bm25s.stopwords, STOPWORDS[lang]))

    def tokenize(text):
        words = [w.lower() for w in re.findall(r"\w+", text)]
        return stemmer.stemWords([w for w in words if w not in stop])

    return tokenize


# ---------------------------------------------------------------- ragbox


def keyword_bytes(ws):
    """The keyword index's size on disk."""
    folder = ws / ".ragbox" / "keyword"
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def ragbox_side(ws, queries, binary):
    """Each mode's rankings for `queries` from `binary` over `ws`, its index time and keyword index size.
    The keyword index is rebuilt from the store first, so its time is that of this binary's analyzer."""
    shutil.rmtree(ws / ".ragbox" / "keyword", ignore_errors=True)
    peers.RAGBOX = binary
    seconds = quality.index(ws)
    started = time.perf_counter()
    runs, latencies = asyncio.run(quality.ragbox_rankings(ws, queries, lambda p: pathlib.PurePath(p).name))
    return runs, {"index_s": seconds, "search_s": time.perf_counter() - started,
                  "keyword_bytes": keyword_bytes(ws), "p50": {m: quality.p50_ms(v) for m, v in latencies.items()}}


def measure(lang, english, half, binaries):
    files, queries, answers, kinds, translated = language_set(lang, english, half)
    results = {"files": len(files), "bytes": sum(len(t.encode()) for t in files.values()), "queries": len(queries),
               "kinds": {k: sum(v == k for v in kinds.values()) for k in ("title", "sentence")}, "systems": {}}
    runs, timing = {}, {}
    ws = CACHE / "ws" / lang
    quality.write_workspace(ws, files)
    # Whatever changed since the last run is embedded first, untimed: each binary's time is its keyword index's.
    peers.RAGBOX = binaries["this build"]
    quality.index(ws)
    for label, binary in binaries.items():
        # Which files are in the language, for tests/benches/detection.rs.
        (CACHE / "ws" / f"{lang}.translated").write_text("".join(f"{n}\n" for n in translated))
        quality.SET[0] = f"{lang}:{label}"
        own, timing[label] = ragbox_side(ws, queries, binary)
        runs.update({(f"ragbox {m}" if label == "this build" else f"{label} {m}"): r for m, r in own.items()})
        LISTS.setdefault(label, {})[lang] = {m: {q: quality.RAW[m][f"{lang}:{label}:{q}"] for q in queries}
                                             for m in quality.MODES}
    runs["bm25s bigrams/words"], bigram_s = bm25s_rank(files, queries, bigram_tokens)
    stem = stemmed(lang)
    if stem:
        runs["bm25s stemmed"], _ = bm25s_rank(files, queries, stem)
    if lang in LINDERA and (found := lindera_rank(lang, files, queries)):
        runs["bm25s Lindera"], results["lindera_s_per_mb"] = found
        binding = python_of(lang).parents[1].glob("lib/python*/site-packages/lindera/lindera*.so")
        results["lindera_bytes"] = sum(p.stat().st_size for p in binding)
    for name, run in runs.items():
        scores = {"all": quality.hits_metrics(run, answers, 5)}
        for kind in ("title", "sentence"):
            subset = {q: a for q, a in answers.items() if kinds[q] == kind}
            if subset:
                scores[kind] = quality.hits_metrics(run, subset, 5)
        cjk_only = {q: a for q, a in answers.items() if not re.search(r"[A-Za-z]", queries[q])}
        if lang in ("ja", "zh-cn") and cjk_only:
            scores["no Latin"] = quality.hits_metrics(run, cjk_only, 5)
            scores["no Latin"]["n"] = len(cjk_only)
        scores["empty"] = sum(not run.get(q) for q in answers)
        results["systems"][name] = scores
    results["timing"], results["bigram_index_s"] = timing, bigram_s
    results["answers"] = {q: sorted(a) for q, a in answers.items()}
    return results


# ---------------------------------------------------------------- fusion weights


def fusion_weights(results, label="this build"):
    """Per language, hit@5 and MRR of hybrid fusion at each semantic weight, from the lists this
    run's ragbox returned (the same fusion as guest-tools/sdk/src/search/hybrid.rs, bench/fusion.py)."""
    import fusion

    table = {}
    for lang, r in results.items():
        lists = LISTS[label][lang]
        answers = {q: set(a) for q, a in r["answers"].items()}
        row = {}
        for w in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5):
            runs = {q: fusion.fuse(lists["semantic"][q], lists["fulltext"][q], w, 1.0) for q in answers}
            row[w] = fusion.metrics(runs, answers)
        table[lang] = row
    return table


# ---------------------------------------------------------------- report


def report(results, weights, command, total, binaries):
    systems = list(dict.fromkeys(name for r in results.values() for name in r["systems"]))
    lines = [
        "# Keyword search in five languages: the Debian Reference, one run\n",
        f"- command: `{command}`, {total / 60:.1f} min in all",
        f"- machine: {peers.machine()}; CPU flags: {peers.cpu_flags()}",
        "- ragbox: " + "; ".join(
            f"{label}: {subprocess.run([b, '--version'], capture_output=True, text=True).stdout.strip()} ({b})"
            for label, b in binaries.items()) + "; its `search` tool over MCP stdio, 50 results (one per file)",
        "- data: Debian Reference 2.100 (`debian-reference-{en,ja,zh-cn,de,fr}`), one file per section (its own "
        "text, no title); question: the section's title, or its first sentence cut from it (a stable hash picks "
        "which); only translated sections asked; reporting half of the questions",
        "- bm25s bigrams/words: character bigrams for CJK runs (single characters alone), lowercased words "
        "otherwise; bm25s stemmed: the language's Snowball stemmer and stop words (PyStemmer); bm25s Lindera: the "
        "words of Lindera 2.2 (the Rust crate, through its Python binding) with the dictionary a build would embed "
        "(IPADIC for Japanese, jieba's for Chinese)",
        "",
        "## hit@5 / MRR\n",
        "| language | files | questions | " + " | ".join(systems) + " |",
        "|---|---|---|" + "---|" * len(systems),
    ]
    def cells(r, shown):
        """One row's cells, a system's measures `shown` (empty where it did not run)."""
        return " | ".join(shown(m) if (m := r["systems"].get(s)) else "" for s in systems)

    for lang, r in results.items():
        row = cells(r, lambda m: f"{m['all']['hit5']:.3f} / {m['all']['mrr']:.3f}")
        lines.append(f"| {LANGS[lang]} | {r['files']} | {r['queries']} | {row} |")
    lines += ["", "By kind of question, hit@5 (titles / first sentences), and questions with no answer at all:\n",
              "| language | " + " | ".join(systems) + " |", "|---|" + "---|" * len(systems)]
    for lang, r in results.items():
        row = cells(r, lambda m: f"{m['title']['hit5']:.3f} / {m['sentence']['hit5']:.3f}; {m['empty']} empty")
        lines.append(f"| {LANGS[lang]} | {row} |")
    cjk = [(lang, r) for lang, r in results.items() if any("no Latin" in m for m in r["systems"].values())]
    if cjk:
        lines += ["", "CJK questions with no Latin letter in them, hit@5:\n",
                  "| language | questions | " + " | ".join(systems) + " |", "|---|---|" + "---|" * len(systems)]
        for lang, r in cjk:
            n = next(m["no Latin"]["n"] for m in r["systems"].values() if "no Latin" in m)
            lines.append(f"| {LANGS[lang]} | {n} | " + " | ".join(
                f"{r['systems'][s]['no Latin']['hit5']:.3f}" if "no Latin" in r["systems"].get(s, {}) else ""
                for s in systems) + " |")
    lines += ["", "## Indexing\n",
              "Each workspace's keyword index is rebuilt from its store (the vectors kept), by `ragbox index`:\n",
              "| language | text | build | `ragbox index` | s per MB | keyword index | per MB of text | "
              "bm25s bigrams/words index |",
              "|---|---|---|---|---|---|---|---|"]
    for lang, r in results.items():
        for label, t in r["timing"].items():
            mb = r["bytes"] / 1e6
            lines.append(f"| {LANGS[lang]} | {mb:.2f} MB | {label} | {t['index_s']:.2f} s | {t['index_s'] / mb:.2f} | "
                         f"{t['keyword_bytes'] / 2**20:.2f} MiB | {t['keyword_bytes'] / 2**20 / mb:.2f} MiB | "
                         f"{r['bigram_index_s']:.2f} s |")
    segmented = [(lang, r) for lang, r in results.items() if "lindera_s_per_mb" in r]
    if segmented:
        lines += ["", "Lindera, for comparison: " + "; ".join(
            f"{LANGS[lang]} ({LINDERA[lang]}) {r['lindera_s_per_mb']:.2f} s per MB of text, its binding with the "
            f"dictionary {r['lindera_bytes'] / 2**20:.0f} MiB" for lang, r in segmented) + "."]
    lines += ["", "## Hybrid fusion's semantic weight, by language\n",
              "hit@5 / MRR of the fusion of this build's fulltext and semantic lists at each semantic weight "
              "(guest-tools/sdk/src/search/hybrid.rs's fusion, bench/fusion.py's copy):\n",
              "| language | " + " | ".join(f"w={w}" for w in next(iter(weights.values()))) + " |",
              "|---|" + "---|" * len(next(iter(weights.values())))]
    for lang, row in weights.items():
        lines.append(f"| {LANGS[lang]} | " + " | ".join(f"{h:.3f} / {m:.3f}" for h, m in row.values()) + " |")
    out = peers.RESULTS / "languages.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument("--half", choices=("tune", "report"), default="report",
                        help="which half of the questions to ask; only `report` writes bench/results/languages.md")
    parser.add_argument("--before", help="an older ragbox binary to answer the same questions in the same run")
    args = parser.parse_args()
    if not peers.RAGBOX.exists():
        raise SystemExit(f"{peers.RAGBOX} is missing: build it (RAGBOX_BIN names another)")
    fetch()
    CACHE.mkdir(parents=True, exist_ok=True)
    peers.LOG.write_text("")
    binaries = {"this build": peers.RAGBOX}
    if args.before:
        binaries["before"] = pathlib.Path(args.before).resolve()
    english = sections("en")
    started = time.perf_counter()
    results = {}
    for lang in args.langs.split(","):
        if lang not in LANGS:
            raise SystemExit(f"unknown language {lang!r}: use {', '.join(LANGS)}")
        results[lang] = measure(lang, english, args.half, binaries)
        print(f"{lang}: " + ", ".join(f"{n} {s['all']['hit5']:.3f}/{s['all']['mrr']:.3f}"
                                      for n, s in results[lang]["systems"].items()), flush=True)
    (CACHE / f"results-{args.half}.json").write_text(json.dumps(results, indent=1))
    weights = fusion_weights(results)
    command = "bench/.venv/bin/python bench/languages.py " + " ".join(
        "BIN" if a == args.before else a for a in sys.argv[1:])
    if args.half == "tune":
        for lang, row in weights.items():
            print(lang, " ".join(f"w={w} {h:.3f}/{m:.3f}" for w, (h, m) in row.items()))
        return
    report(results, weights, command.strip(), time.perf_counter() - started, binaries)


if __name__ == "__main__":
    main()
