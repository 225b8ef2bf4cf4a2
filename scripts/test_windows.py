"""`make test-windows`: the Windows build, run under wine. It serves a copy of
the example workspace over stdio MCP (the official Python SDK as the client),
embeds it, finds a note by meaning and by keyword, refuses paths that lead
out of the workspace (`..`, `\\`, drive paths, a junction where wine can make
one), and keeps the data dir out of reach."""

import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = pathlib.Path(__file__).resolve().parents[1]
SECRET = "zanzibarwinesecret"


def windows_path(path: pathlib.Path) -> str:
    """The path as a program under wine names it: drive Z: is the Unix root."""
    return "Z:" + str(path.resolve()).replace("/", "\\")


def wine_env(prefix: pathlib.Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", ""),
        "WINEPREFIX": str(prefix),
        "WINEDEBUG": "-all",
        # No Mono or Gecko installer prompts: ragbox needs neither.
        "WINEDLLOVERRIDES": "mscoree,mshtml=",
        "RAGBOX_LOG": "warn",
    }
    model = os.environ.get("RAGBOX_MODEL") or str(
        pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "ragbox/models/all-MiniLM-L6-v2")
    env["RAGBOX_MODEL"] = windows_path(pathlib.Path(model))
    return env


def prepare_prefix(env: dict[str, str]) -> None:
    """Creates the wine prefix once, with the stand-in for the
    bcryptprimitives.dll that wine 8 lacks (see scripts/wine/)."""
    prefix = pathlib.Path(env["WINEPREFIX"])
    system32 = prefix / "drive_c" / "windows" / "system32"
    if not system32.is_dir():
        subprocess.run(["wineboot", "--init"], env=env, capture_output=True, timeout=600, check=True)
    dll = system32 / "bcryptprimitives.dll"
    if not dll.exists():
        subprocess.run(["x86_64-w64-mingw32-gcc", "-O2", "-shared", "-o", str(dll),
                        str(ROOT / "scripts" / "wine" / "bcryptprimitives.c"), "-ladvapi32"], check=True)


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def check(exe: pathlib.Path, workspace: pathlib.Path, env: dict[str, str]) -> None:
    params = StdioServerParameters(command="wine", args=[str(exe), "serve", "--workspace", windows_path(workspace)],
                                   env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            for needed in ("embed_workspace", "search", "search_workspace"):
                assert needed in tools, f"{needed} missing from {sorted(tools)}"
            embedded = await session.call_tool("embed_workspace", {})
            assert not embedded.is_error, text_of(embedded)
            hits = await session.call_tool("search", {"query": "how are sessions authenticated", "limit": 3})
            assert not hits.is_error, text_of(hits)
            assert "auth" in text_of(hits).lower(), f"no auth note among {text_of(hits)}"
            words = await session.call_tool("search_workspace", {"query": "websocket"})
            assert not words.is_error and "websocket" in text_of(words).lower(), text_of(words)
            for tool, args in (("search_workspace", {"query": SECRET}),
                               ("search", {"query": SECRET, "search_type": "fulltext"})):
                found = await session.call_tool(tool, args)
                results = json.dumps(json.loads(text_of(found)).get("results"))
                assert SECRET not in results, f"{tool} read outside the workspace: {results}"
            # Paths that leave the workspace, as Windows writes them too.
            for path in ("../outside/secret.md", "..\\outside\\secret.md", windows_path(workspace.parent / "outside" / "secret.md"),
                         "junction/secret.md"):
                refused = await session.call_tool("embed_document", {"path": path})
                assert refused.is_error and SECRET not in text_of(refused), f"{path}: {text_of(refused)}"
            # The data dir is not the workspace's to search.
            hidden = await session.call_tool("search_workspace", {"query": "owner"})
            assert ".ragbox" not in text_of(hidden), text_of(hidden)
    print(f"{exe.name} under wine: served, embedded, searched; paths out of the workspace refused")


def main(exe: str) -> None:
    exe_path = pathlib.Path(exe).resolve()
    if not exe_path.is_file():
        sys.exit(f"{exe} is missing: `make cross` builds it")
    prefix = ROOT / "target" / "wine-prefix"
    env = wine_env(prefix)
    prepare_prefix(env)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        outside = tmp / "outside"
        outside.mkdir()
        (outside / "secret.md").write_text(f"# Secret\n\nThe password is {SECRET}.\n")
        workspace = tmp / "workspace"
        shutil.copytree(ROOT / "examples" / "workspace", workspace)
        # A junction made the Windows way. Wine 8 accepts `mklink /J` but makes
        # nothing, and shows a Unix symlink to a program as the file it points
        # to, so under it no link can be tried; a wine that makes the junction
        # gets it checked.
        subprocess.run(["wine", "cmd", "/c", "mklink", "/J", windows_path(workspace / "junction"),
                        windows_path(outside)], env=env, capture_output=True, text=True, timeout=300)
        if not os.path.lexists(workspace / "junction"):
            print("note: this wine makes no junctions; links are checked by the Linux suites only")
        asyncio.run(check(exe_path, workspace, env))


if __name__ == "__main__":
    main(sys.argv[1])
