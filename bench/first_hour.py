"""A new user's first hour, timed: from `git clone` to an agent's first answer.

In a fresh folder with a fresh home (so nothing is cached but the Rust
toolchain: crates, pip packages and the embedding model are all downloaded),
it clones the repository, follows the README step by step and times each:
`make run`, `make install`, then the README's "Add it to an agent" block line
by line in a copy of `examples/workspace`, then what an agent does next: it
reads the `.mcp.json` that `ragbox init` wrote, starts that command, and asks
`search` through the official MCP Python SDK. The figures go to
bench/results/first-hour.md.

    python3 bench/first_hour.py [--repo PATH] [--query TEXT]

It runs with the standard library; the MCP client part runs again under the
clone's own venv (`--client`), which `make run` made. One run is a full build:
about half an hour on 2 cores."""

import argparse
import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from machine import cpu_flags, machine  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "first-hour.md"
# The README block a new user types after installing.
MARK = "<!-- readme: run by tests/e2e/readme.rs -->"


def readme_block(readme: str) -> list[str]:
    """The commands of the README's "Add it to an agent" block, comments dropped."""
    _, rest = readme.split(MARK + "\n```sh\n", 1)
    block = rest.split("\n```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def timed(label: str, command: list[str] | str, cwd: pathlib.Path, env: dict, log: pathlib.Path) -> float:
    """Runs `command` (a shell line when a string), its output to `log`; its wall time."""
    print(f"{label}: {command if isinstance(command, str) else ' '.join(command)}", flush=True)
    started = time.monotonic()
    with log.open("a") as out:
        out.write(f"\n$ {command}\n")
        out.flush()
        done = subprocess.run(command, cwd=cwd, env=env, shell=isinstance(command, str),
                              stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{label} failed ({done.returncode}) after {took:.1f} s: see {log}")
    print(f"  {shown(took)}", flush=True)
    return took


class Load:
    """The 1-minute load average, sampled every 30 s while the run goes on: on
    a machine shared with other builds the figures mean little without it."""

    def __init__(self) -> None:
        self.seen = [os.getloadavg()[0]]
        self.done = threading.Event()
        threading.Thread(target=self.sample, daemon=True).start()

    def sample(self) -> None:
        while not self.done.wait(30):
            self.seen.append(os.getloadavg()[0])

    def shown(self) -> str:
        self.done.set()
        return f"{min(self.seen):.1f}–{max(self.seen):.1f} (median {sorted(self.seen)[len(self.seen) // 2]:.1f})"


def shown(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


async def first_answer(project: pathlib.Path, query: str) -> dict:
    """What an agent does once configured: start the server `.mcp.json`
    names, in the project, and ask `search` (hybrid)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["ragbox"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(project),
                                   env=dict(os.environ))
    started = time.monotonic()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.monotonic()
            tools = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool("search", {"query": query, "search_type": "hybrid", "limit": 3})
            answered = time.monotonic()
    if result.is_error:
        sys.exit(f"search failed: {result.content[0].text}")
    found = result.structured_content or json.loads(result.content[0].text)
    return {
        "initialize_s": initialized - started,
        "answer_s": answered - started,
        "tools": tools,
        "first": found["results"][0]["source"]["filepath"] if found["results"] else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=str(ROOT), help="the repository to clone (default: this one)")
    parser.add_argument("--query", default="why do websocket connections drop",
                        help="what the agent asks (of examples/workspace)")
    parser.add_argument("--client", metavar="PROJECT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(asyncio.run(first_answer(pathlib.Path(args.client), args.query))))
        return

    rev = subprocess.run(["git", "-C", args.repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, check=True).stdout.strip()
    rustup_home = os.environ.get("RUSTUP_HOME", str(pathlib.Path.home() / ".rustup"))
    toolchain_bin = pathlib.Path(shutil.which("cargo") or sys.exit("cargo is not on PATH")).parent
    with tempfile.TemporaryDirectory(prefix="ragbox-first-hour-", ignore_cleanup_errors=True) as tmp:
        tmp = pathlib.Path(tmp)
        home = tmp / "home"
        home.mkdir()
        cargo_home = home / ".cargo"
        # A new user's environment: their own home and cargo folder (whose bin
        # rustup puts on PATH), the toolchain rustup installed, nothing else.
        env = {
            "HOME": str(home),
            "CARGO_HOME": str(cargo_home),
            "RUSTUP_HOME": rustup_home,
            "PATH": os.pathsep.join([str(cargo_home / "bin"), str(toolchain_bin), "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "TMPDIR": str(tmp),
        }
        log = tmp / "log.txt"
        load = Load()
        clone = home / "ragbox"
        steps: list[tuple[str, str, float]] = []
        steps.append(("clone", f"`git clone {args.repo}`",
                      timed("clone", ["git", "clone", "--quiet", args.repo, str(clone)], home, env, log)))
        steps.append(("build", "`make run`", timed("make run", ["make", "run"], clone, env, log)))
        steps.append(("build", "`make install`", timed("make install", ["make", "install"], clone, env, log)))
        installed = shutil.which("ragbox", path=env["PATH"])
        if installed != str(cargo_home / "bin" / "ragbox"):
            sys.exit(f"after make install, `ragbox` on PATH is {installed}, not {cargo_home / 'bin' / 'ragbox'}")
        project = home / "my-project"
        shutil.copytree(clone / "examples" / "workspace", project)
        for line in readme_block((clone / "README.md").read_text()):
            if line.startswith("cd "):
                continue
            steps.append(("use", f"`{line}`", timed(line, line, project, env, log)))
        # The agent's server hands its session to the per-user service, which
        # stays 120 s after its last session: here it may leave at once.
        client = subprocess.run([str(clone / ".venv" / "bin" / "python"), str(clone / "bench" / "first_hour.py"),
                                 "--client", str(project), "--query", args.query],
                                cwd=project, env={**env, "RAGBOX_SERVICE_LINGER": "1"}, capture_output=True, text=True)
        time.sleep(3)
        if client.returncode != 0:
            sys.exit(f"the MCP client failed:\n{client.stdout}\n{client.stderr}")
        answer = json.loads(client.stdout.strip().splitlines()[-1])
        steps.append(("use", "the agent starts the server `.mcp.json` names; `search` answers", answer["answer_s"]))
        total = sum(t for _, _, t in steps)
        built = sum(t for kind, _, t in steps if kind == "build")
        model = home / ".cache" / "ragbox" / "models" / "all-MiniLM-L6-v2"
        lines = [
            "# A new user's first hour: from `git clone` to an agent's first answer",
            "",
            f"- command: `python3 bench/first_hour.py` (repository at {rev}, cloned with `git clone` from a local path)",
            f"- machine: {machine()}; CPU flags: {cpu_flags()}; load average (1 min) during the run {load.shown()}",
            "- nothing cached but the Rust toolchain: a fresh home and CARGO_HOME (crates, pip packages and the "
            f"model downloaded; model {'present' if model.is_dir() else 'missing'} afterwards in the fresh home)",
            f"- the agent's query: {args.query!r} (hybrid `search`, limit 3) on a copy of examples/workspace; "
            f"first hit {answer['first']}; tools listed: {len(answer['tools'])}",
            "",
            "| step | time |",
            "|---|---|",
        ]
        lines += [f"| {step} | {shown(took)} |" for _, step, took in steps]
        lines += [
            f"| **all, `git clone` to the first answer** | **{shown(total)}** |",
            f"| of which the build (`make run`, `make install`) | {shown(built)} |",
            "",
            f"The agent's server answered `initialize` {shown(answer['initialize_s'])} after it was started.",
            "",
        ]
        RESULTS.write_text("\n".join(lines))
        print("\n".join(lines))


if __name__ == "__main__":
    main()
