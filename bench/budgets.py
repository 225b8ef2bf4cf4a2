"""One process for every agent: what one session can cost the others.

Every agent's `ragbox serve` is a session of one per-user service. Here a
quiet agent runs 100 searches through the service while another session
(a) asks for 150 reads of an 8 MiB file and reads none of the answers, or
(b) five agents each index a hostile DOCX (millions of empty paragraphs) at
once, or (c) both; and alone, as the baseline. Reports the service's peak
resident memory (VmHWM) and the quiet agent's p50/p99 search latency in each
case. With `--before BIN`, runs every case with that binary too, side by side
(the same machine, one run). Writes bench/results/budgets.md.

    RAGBOX_BIN=target/release/ragbox python3 bench/budgets.py [--before OTHER_BIN]
"""

import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("RAGBOX_DATA", ROOT.parent / "shared" / "data"))
RAGBOX = pathlib.Path(os.environ.get("RAGBOX_BIN", ROOT / "target" / "release" / "ragbox"))
CACHE = ROOT / "bench" / ".cache" / "budgets"
SERVICE_DIR = CACHE / "run"
SEARCHES = 100
FLOOD_READS = 150
HOSTILE_DOCS = 5
QUERIES = ["what lowers blood pressure", "gene expression in tumour cells", "vitamin D and bone density",
           "antibiotic resistance in hospitals", "sleep and memory consolidation"]
sys.path.insert(0, str(ROOT / "bench"))
from machine import cpu_flags, machine  # noqa: E402  (standard library only: no venv needed)

INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "budgets-bench", "version": "0"}}


def line(id_, method, params):
    return (json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n").encode()


class Session:
    """`ragbox serve` on `workspace` over raw stdio; `reads` False leaves its stdout unread."""

    def __init__(self, binary, workspace, reads=True):
        env = dict(os.environ, RAGBOX_SERVICE_DIR=str(SERVICE_DIR), RAGBOX_SERVICE_LINGER="1", RAGBOX_LOG="info")
        self.proc = subprocess.Popen([binary, "serve", "--workspace", workspace], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.stderr = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.next_id = 0
        if reads:
            self.call("initialize", INITIALIZE)
            self.send_raw(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def _drain(self):
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode(errors="replace"))

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, method, params):
        self.next_id += 1
        self.send_raw(line(self.next_id, method, params))
        return self.next_id

    def wait(self, id_):
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == id_:
                return message

    def call(self, method, params):
        return self.wait(self.send(method, params))

    def service_pid(self):
        said = "served by this user's ragbox service pid="
        deadline = time.time() + 30
        while time.time() < deadline:
            for text in list(self.stderr):
                if said in text:
                    return int(text.split(said, 1)[1].split()[0])
            time.sleep(0.05)
        raise SystemExit("the session was not handed to the service: " + "".join(self.stderr))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def peak_mib(pid):
    for text in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith("VmHWM:"):
            return int(text.split()[1]) / 1024
    return float("nan")


def end(pid):
    """Ends the case's service now (a flooded one may take long to wind down) and waits until it is gone."""
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        return
    while pathlib.Path(f"/proc/{pid}").exists() and "zombie" not in pathlib.Path(f"/proc/{pid}/status").read_text():
        time.sleep(0.05)


def quiet_workspace():
    ws = CACHE / "quiet"
    (ws / "docs").mkdir(parents=True, exist_ok=True)
    for n, raw in enumerate((DATA / "scifact" / "corpus.jsonl").open()):
        if n >= 1000:
            break
        d = json.loads(raw)
        (ws / "docs" / f"{d['_id']}.md").write_text(f"# {d['title']}\n\n{d['text']}\n")
    return ws


def loud_workspace():
    ws = CACHE / "loud"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "big.txt").write_text("pelican " * (1 << 20))
    made = CACHE / "hostile"
    subprocess.run([sys.executable, ROOT / "tests" / "documents" / "make_hostile.py", made, "--only",
                    "empty-markup.docx"], check=True)
    for i in range(HOSTILE_DOCS):
        shutil.copy(made / "empty-markup.docx", ws / f"doc-{i}.docx")
    return ws


def run(binary, case, quiet, loud):
    """One case: the service's peak memory and the quiet agent's latencies (ms)."""
    for ws in (quiet, loud):
        shutil.rmtree(ws / ".ragbox", ignore_errors=True)
    subprocess.run([binary, "index", "--workspace", quiet], check=True, capture_output=True)
    agent = Session(binary, quiet)
    pid = agent.service_pid()
    agent.call("tools/call", {"name": "search", "arguments": {"query": "warm-up"}})
    others = []
    if case in ("flood", "both"):
        flood = Session(binary, loud, reads=False)
        big = (loud / "big.txt").resolve().as_uri()
        flood.send_raw(line(0, "initialize", INITIALIZE) + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        flood.send_raw(b"".join(line(i, "resources/read", {"uri": big}) for i in range(1, FLOOD_READS + 1)))
        others.append(flood)
    indexing = []
    if case in ("documents", "both"):
        for i in range(HOSTILE_DOCS):
            s = Session(binary, loud)
            indexing.append((s, s.send("tools/call", {"name": "embed_document", "arguments": {"path": f"doc-{i}.docx"}})))
    time.sleep(0.5)
    times = []
    for i in range(SEARCHES):
        started = time.perf_counter()
        answer = agent.call("tools/call", {"name": "search", "arguments": {"query": QUERIES[i % len(QUERIES)]}})
        times.append((time.perf_counter() - started) * 1e3)
        if "error" in answer or answer["result"].get("isError"):
            raise SystemExit(f"{case}: the quiet agent's search failed: {answer}")
    for s, id_ in indexing:
        s.wait(id_)
    peak = peak_mib(pid)
    for s in [agent, *others, *(s for s, _ in indexing)]:
        s.stop()
    end(pid)
    times.sort()
    return {"peak": peak, "p50": statistics.median(times), "p99": times[int(len(times) * 0.99) - 1]}


def main():
    before = None
    if "--before" in sys.argv:
        before = pathlib.Path(sys.argv[sys.argv.index("--before") + 1])
    if not RAGBOX.exists():
        raise SystemExit(f"{RAGBOX} is missing: run `make release` (make bench does)")
    started = time.perf_counter()
    shutil.rmtree(SERVICE_DIR, ignore_errors=True)
    quiet, loud = quiet_workspace(), loud_workspace()
    builds = [("this build", RAGBOX)] + ([("before", before)] if before else [])
    cases = ["quiet", "flood", "documents", "both"]
    results = {}
    # Case by case, the builds one after the other: the machine is shared and noisy.
    for case in cases:
        for name, binary in builds:
            results[(name, case)] = run(binary, case, quiet, loud)
            print(name, case, results[(name, case)], flush=True)
    shown = lambda p: p.relative_to(ROOT) if p.is_relative_to(ROOT) else p  # noqa: E731
    out = [
        "# One process for every agent: what one session can cost the others\n",
        f"- command: `RAGBOX_BIN={shown(RAGBOX)} python3 bench/budgets.py"
        + (f" --before {shown(before)}" if before else "") + f"`, {(time.perf_counter() - started) / 60:.1f} min",
        f"- machine: {machine()}; CPU flags: {cpu_flags()}",
        f"- a quiet agent runs {SEARCHES} `search` calls (hybrid, the default) on 1,000 SciFact abstracts through the "
        "per-user service while, on another workspace: **flood**, a session sends "
        f"{FLOOD_READS} `resources/read` of an 8 MiB file and reads none of the answers; **documents**, "
        f"{HOSTILE_DOCS} agents each call `embed_document` on a DOCX of 8 million empty paragraphs at once; "
        "**both**; **quiet**, nothing else. Peak: the service's VmHWM at the end of the case (each case starts a "
        "new service)\n",
        "| case | build | service peak RSS | quiet agent p50 | p99 | p99 ÷ quiet case's |",
        "|---|---|---|---|---|---|",
    ]
    for case in cases:
        for name, _ in builds:
            r, q = results[(name, case)], results[(name, "quiet")]
            out.append(f"| {case} | {name} | {r['peak']:.0f} MiB | {r['p50']:.1f} ms | {r['p99']:.1f} ms | "
                       f"{r['p99'] / q['p99']:.2f}x |")
    out.append("\nGoals (issue: one process for every agent): peak under 1 GiB in every case; the quiet agent's p99 "
               "within 2x of its quiet run.")
    target = ROOT / "bench" / "results" / "budgets.md"
    target.write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
