"""Five agents, five `ragbox serve` processes: what they cost together.

Starts one server, then five, over raw stdio JSON-RPC, each answering semantic
searches, and reads each process's proportional set size (PSS: a page shared
by n processes counts 1/n to each) from /proc/PID/smaps_rollup: the `serve`
processes and, where they hand their sessions to the user's service (the
default), the service's too. Each case runs both ways: through the service,
and with `--standalone` (every server a process of its own). The weights
are the packed model file every process maps (~/.cache/ragbox/packed), the
tool components the compile cache's mapped files. Also times each server's
first semantic answer, asked right after `initialized` and again after a
second's wait, against its warm ones. Three cases: five servers on one
small workspace, five on five, and five on SciFact's 5,183 abstracts (a real
workspace's documents and vector index). Writes bench/results/agents.md.

    RAGBOX_BIN=target/release/ragbox bench/.venv/bin/python bench/agents.py   (make bench; Linux only)
"""

import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("RAGBOX_DATA", ROOT.parent / "shared" / "data"))
RAGBOX = pathlib.Path(os.environ.get("RAGBOX_BIN", ROOT / "target" / "release" / "ragbox"))
CACHE = ROOT / "bench" / ".cache" / "agents"
# How long every server has been idle when its memory is read (ragbox gives freed memory back after 2 s).
IDLE_S = 3.0
QUERIES = ["what lowers blood pressure", "gene expression in tumour cells", "vitamin D and bone density",
           "antibiotic resistance in hospitals", "sleep and memory consolidation", "insulin signalling in muscle"]
sys.path.insert(0, str(ROOT / "bench"))
from peers import cpu_flags, machine  # noqa: E402


# The bench's own service folder: each case starts its own service, gone a second after its last session.
SERVICE_DIR = CACHE / "run"
MODES = ("service", "standalone")


def server_env(mode):
    env = dict(os.environ, RAGBOX_SERVICE_DIR=str(SERVICE_DIR), RAGBOX_SERVICE_LINGER="1")
    if mode == "standalone":
        env["RAGBOX_STANDALONE"] = "1"
    return env


def services():
    """The pids of the services in the bench's folder."""
    pids = []
    for proc in pathlib.Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"service" in args and any(a.startswith(str(SERVICE_DIR).encode()) for a in args):
            pids.append(int(proc.name))
    return pids


def pss_mib(pid):
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0])
    return fields["Pss"] / 1024, fields["Anonymous"] / 1024


class Server:
    def __init__(self, workspace, mode):
        self.proc = subprocess.Popen([RAGBOX, "serve", "--workspace", workspace], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env(mode))
        self.next_id = 0

    def call(self, method, params):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n"
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                if "error" in message or message["result"].get("isError"):
                    raise SystemExit(f"ragbox answered an error: {message}")
                return message

    def start(self):
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "agents-bench", "version": "0"}})
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def search_ms(self, query):
        started = time.perf_counter()
        self.call("tools/call", {"name": "search", "arguments": {"query": query, "search_type": "semantic", "limit": 10}})
        return (time.perf_counter() - started) * 1e3

    def pss_mib(self):
        return pss_mib(self.proc.pid)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def workspaces(count, docs_each):
    """`count` workspaces of `docs_each` SciFact abstracts each (different ones), indexed."""
    docs = []
    for line in (DATA / "scifact" / "corpus.jsonl").open():
        d = json.loads(line)
        docs.append((d["_id"], f"# {d['title']}\n\n{d['text']}\n"))
        if len(docs) >= count * docs_each:
            break
    out = []
    for w in range(count):
        ws = CACHE / f"ws{w}-{docs_each}"
        (ws / "docs").mkdir(parents=True, exist_ok=True)
        for doc, text in docs[w * docs_each:(w + 1) * docs_each]:
            path = ws / "docs" / f"{doc}.md"
            if not path.exists():
                path.write_text(text)
        subprocess.run([RAGBOX, "index", "--workspace", ws], check=True, capture_output=True)
        out.append(ws)
    return out


def scifact_workspace():
    """SciFact's 5,183 abstracts as one indexed workspace: peers.py's (make bench runs it first), else made here."""
    ws = ROOT / "bench" / ".cache" / "scifact-5183" / "ragbox"
    if (ws / ".ragbox" / "store.redb").exists():
        return ws
    ws = CACHE / "scifact"
    (ws / "docs").mkdir(parents=True, exist_ok=True)
    for line in (DATA / "scifact" / "corpus.jsonl").open():
        d = json.loads(line)
        (ws / "docs" / f"{d['_id']}.md").write_text(f"# {d['title']}\n\n{d['text']}\n")
    subprocess.run([RAGBOX, "index", "--workspace", ws], check=True, capture_output=True)
    return ws


def evict(spaces):
    """Drops the files every server maps (the binary, the packed model, the compiled
    tools, the workspaces' indexes) from the page cache. How much of a shared file a
    process maps depends on how much of it is cached (the kernel maps cached pages
    around each one touched): a file just written counts twice what it does after a
    reboot. Each case starts from the latter, the same every run."""
    home = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "ragbox"
    shared = [pathlib.Path(os.environ.get(env) or home / sub)
              for env, sub in (("RAGBOX_PACKED_CACHE", "packed"), ("RAGBOX_COMPILE_CACHE", "components"))]
    files = [RAGBOX, *(f for d in shared for f in d.rglob("*"))]
    files += [f for ws in set(spaces) for f in (pathlib.Path(ws) / ".ragbox").rglob("*")]
    for f in files:
        if f.is_file() and not f.is_symlink():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def run(case, spaces, mode):
    """Servers on `spaces` (one each), started one after another as agents would be:
    a list of rows, one per server, and the service's (PSS, anonymous) or None."""
    deadline = time.time() + 30
    while services():
        if time.time() > deadline:
            raise SystemExit(f"the last case's service is still running: {services()}")
        time.sleep(0.1)
    evict(spaces)
    servers, rows = [], []
    for i, ws in enumerate(spaces):
        s = Server(ws, mode)
        s.start()
        at_once = s.search_ms(QUERIES[0])
        time.sleep(1.0)
        after_wait = s.search_ms(QUERIES[1])
        warm = statistics.median(s.search_ms(q) for q in QUERIES[2:] * 3)
        servers.append(s)
        rows.append({"server": i + 1, "at_once": at_once, "after_wait": after_wait, "warm": warm})
    # Agents think between calls: an idle server gives its freed memory back after 2 s.
    time.sleep(IDLE_S)
    found = services()
    if len(found) != (mode == "service"):
        raise SystemExit(f"{case}, {mode}: {len(found)} services running")
    service = pss_mib(found[0]) if found else None
    for s, row in zip(servers, rows):
        row["pss"], row["anon"] = s.pss_mib()
        row["after_idle"] = s.search_ms(QUERIES[0])
    for s in servers:
        s.stop()
    print(case, mode, rows, service, flush=True)
    return rows, service


def total(measured):
    rows, service = measured
    return sum(r["pss"] for r in rows) + (service[0] if service else 0)


def main():
    if not RAGBOX.exists():
        raise SystemExit(f"{RAGBOX} is missing: run `make release` (make bench does)")
    if not pathlib.Path("/proc/self/smaps_rollup").exists():
        raise SystemExit("agents.py reads /proc/PID/smaps_rollup: Linux only")
    shutil.rmtree(CACHE, ignore_errors=True)
    started = time.perf_counter()
    five = workspaces(5, 200)
    scifact = scifact_workspace()
    cases = [("one server", five[:1], "one server"), ("one workspace", five[:1] * 5, "one server"),
             ("five workspaces", five, "one server"), ("SciFact, one server", [scifact], "SciFact, one server"),
             ("SciFact, five servers", [scifact] * 5, "SciFact, one server")]
    # The two ways side by side, case by case: the machine is shared and noisy.
    results = {(name, mode): run(name, spaces, mode) for name, spaces, _ in cases for mode in MODES}
    status = subprocess.run([RAGBOX, "status", "--json", "--workspace", scifact], check=True, capture_output=True)
    scifact_chunks = json.loads(status.stdout)["total_chunks"]
    lines = [
        "# Five agents' servers on one machine\n",
        f"- command: `RAGBOX_BIN={RAGBOX.relative_to(ROOT) if RAGBOX.is_relative_to(ROOT) else RAGBOX} "
        f"bench/.venv/bin/python bench/agents.py` (in `make bench`), {(time.perf_counter() - started) / 60:.1f} min",
        f"- machine: {machine()}; CPU flags: {cpu_flags()}",
        "- workspaces: SciFact abstracts, 200 a workspace (different ones), each indexed once before; and all "
        f"5,183 abstracts ({scifact_chunks:,} chunks) in one, whose rows compare with one server on it; "
        "every server is `ragbox serve` over raw stdio JSON-RPC, started after the one before it answered",
        "- modes: **service** (the default on Linux and macOS): each `serve` hands its session to this user's ragbox "
        "service, started by the first and gone a second (the bench's linger) after the last, and copies bytes; "
        "**standalone** (`--standalone`): each `serve` serves in its own process. Each case runs both ways, one "
        "after the other",
        "- memory: PSS (a page shared by n processes counts 1/n to each) and private anonymous memory, from "
        f"/proc/PID/smaps_rollup once every server answered its searches and sat idle {IDLE_S:.0f} s, summed over "
        "the `serve` processes and the service; the model's packed weights are one "
        "file every process maps, the tools' compiled code the compile cache's mapped files; each case starts with "
        "those files, the binary and the workspaces' indexes out of the page cache, as after a reboot (a file just "
        "written is mapped about twice as far around each page a server touches, which makes one server look "
        "heavier and the ratios lower), so the first server's first answers read from disk\n",
        "| case | mode | servers | PSS in all | ÷ one server's (same mode) | each `serve`: PSS, private anonymous (median) | the service: PSS, private anonymous |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, _, base in cases:
        for mode in MODES:
            rows, service = results[(name, mode)]
            all_pss = total((rows, service))
            one = total(results[(base, mode)])
            each = f"{statistics.median(r['pss'] for r in rows):.1f} MiB, {statistics.median(r['anon'] for r in rows):.1f} MiB"
            svc = f"{service[0]:.1f} MiB, {service[1]:.1f} MiB" if service else "none"
            lines.append(f"| {name} | {mode} | {len(rows)} | {all_pss:.0f} MiB | {all_pss / one:.2f} | {each} | {svc} |")
    lines += ["", "First semantic answers (search, limit 10), ms: asked right after `initialized` (the model and "
              "indexes still loading), after a one-second wait, warm (median of 12), and after the idle wait "
              "(its freed memory given back)\n",
              "| case | mode | server | right after initialized | after 1 s | warm | after idle |",
              "|---|---|---|---|---|---|---|"]
    for name in ("one workspace", "five workspaces", "SciFact, five servers"):
        for mode in MODES:
            for r in results[(name, mode)][0]:
                lines.append(f"| {name} | {mode} | {r['server']} | {r['at_once']:.1f} | {r['after_wait']:.1f} | "
                             f"{r['warm']:.1f} | {r['after_idle']:.1f} |")
    out = ROOT / "bench" / "results" / "agents.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written to {out}")


if __name__ == "__main__":
    sys.exit(main())
