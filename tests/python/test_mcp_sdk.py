"""The official MCP Python SDK drives `ragbox serve`: an outside check that
ragbox speaks MCP the way other clients expect (the SDK also validates
structuredContent against each tool's outputSchema, which the server lists
with --output-schemas)."""

import ast
import asyncio
import contextlib
import json
import os
import pathlib

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import RAGBOX, ROOT, ragbox_env

def server(ws):
    return StdioServerParameters(command=RAGBOX, args=["serve", "--workspace", str(ws), "--output-schemas"], env=ragbox_env(ws))


@contextlib.asynccontextmanager
async def connected(ws):
    """An MCP session with `ragbox serve` on `ws`, initialized, and what initialize answered."""
    async with stdio_client(server(ws)) as (read, write):
        async with ClientSession(read, write) as session:
            yield session, await session.initialize()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


def test_initialize_list_and_call(workspace):
    async def scenario():
        async with connected(workspace) as (session, init):
            assert init.server_info.name == "ragbox"
            assert init.capabilities.tools is not None

            tools = (await session.list_tools()).tools
            tool = next(t for t in tools if t.name == "search_workspace")
            assert tool.input_schema["required"] == ["query"]
            assert tool.output_schema["type"] == "object"
            assert tool.annotations.read_only_hint is True

            result = await session.call_tool("search_workspace", {"query": "JWT"})
            assert result.is_error is False
            expected = {
                "success": True,
                "query": "JWT",
                "num_results": 2,
                "more_results": False,
                "files_searched": 4,
                "files_skipped": 0,
                "results": [
                    {
                        "conversation": "001-auth-ideas",
                        "type": "brainstorm",
                        "date": "2025-11-17",
                        "file": "conversation.md",
                        "line": 3,
                        "text": "We compared JWT tokens with server sessions.",
                        "path": "brainstorm/2025-11-17/001-auth-ideas/conversation.md",
                    },
                    {
                        "conversation": "002-token-leak",
                        "type": "debug",
                        "date": "2025-10-02",
                        "file": "conversation.md",
                        "line": 3,
                        "text": "Fix: redact jwt fields before logging.",
                        "path": "debug/2025-10-02/002-token-leak/conversation.md",
                    },
                ],
            }
            assert result.structured_content == expected
            assert json.loads(result.content[0].text) == expected

            filtered = await session.call_tool(
                "search_workspace", {"query": "jwt", "type": "debug", "date_range": "2025-10"}
            )
            assert [r["path"] for r in filtered.structured_content["results"]] == [
                "debug/2025-10-02/002-token-leak/conversation.md"
            ]

    run(scenario())


def test_errors_come_back_as_tool_errors(workspace):
    async def scenario():
        async with connected(workspace) as (session, _):
            bad = await session.call_tool("search_workspace", {"query": "jwt", "limit": "ten"})
            assert bad.is_error is True
            body = json.loads(bad.content[0].text)
            assert body["success"] is False
            assert body["error"].startswith("argument 'limit'")

            denied = await session.call_tool("search_workspace", {"query": "jwt", "workspace_path": "/"})
            assert denied.is_error is True
            assert json.loads(denied.content[0].text)["error"].startswith("Workspace not allowed: /")

            # The server keeps serving after errors.
            ok = await session.call_tool("search_workspace", {"query": "jwt", "limit": 1})
            assert ok.is_error is False
            assert ok.structured_content["more_results"] is True

    run(scenario())


def test_embedding_tools_with_progress(workspace):
    async def scenario():
        async with connected(workspace) as (session, _):
            reports = []

            async def on_progress(progress, total, message):
                reports.append((progress, total, message))

            result = await session.call_tool("embed_workspace", {}, progress_callback=on_progress)
            assert not result.is_error, result.content
            body = result.structured_content
            # .gitignore'd private/ is not indexed.
            assert (body["success"], body["embedded"], body["skipped"], body["total_files"]) == (True, 4, 0, 4)
            assert reports and reports[-1][0] == reports[-1][1] == 4, reports

            again = await session.call_tool("embed_workspace", {})
            assert (again.structured_content["embedded"], again.structured_content["skipped"]) == (0, 4)

            status = await session.call_tool("get_embedding_status", {})
            s = status.structured_content
            assert (s["num_documents"], s["up_to_date"]) == (4, True), s
            assert s["recent_embeddings"][0]["embedded_at"].endswith("Z")

            found = await session.call_tool("search_semantic", {"query": "authentication", "n_results": 2})
            body = found.structured_content
            assert (body["success"], body["num_results"]) == (True, 2), body
            assert body["results"][0]["conversation"] == "001-auth-ideas", body
            assert body["results"][0]["score"] >= body["results"][1]["score"]
            planned = await session.call_tool("search_semantic", {"query": "auth", "conversation_type": "plan"})
            assert planned.structured_content["results"] == []

            similar = await session.call_tool("get_similar", {"source_path": "nope.md"})
            assert similar.is_error
            assert json.loads(similar.content[0].text) == {"success": False, "error": "Document not found: nope.md"}

            missing = await session.call_tool("embed_document", {"path": "nonexistent/path"})
            assert missing.is_error
            assert json.loads(missing.content[0].text) == {
                "success": False,
                "error": "Path not found: nonexistent/path",
            }

    run(scenario())


def test_documents_and_skills_are_resources(workspace):
    skill = "---\nname: rotate-keys\ndescription: Rotate signing keys without downtime.\n---\n# Rotate keys\n\nStep one.\n"
    (workspace / "skills" / "rotate-keys").mkdir(parents=True)
    (workspace / "skills" / "rotate-keys" / "SKILL.md").write_text(skill)

    async def scenario():
        async with connected(workspace) as (session, init):
            assert init.capabilities.resources is not None
            result = await session.call_tool("embed_workspace", {})
            assert not result.is_error, result.content

            listed = (await session.list_resources()).resources
            uris = {str(r.uri) for r in listed}
            todo = (workspace / "notes" / "todo.md").resolve().as_uri()
            uri = "skill://skills/rotate-keys/SKILL.md"
            assert todo in uris and uri in uris, uris
            assert not any("private" in u for u in uris), uris
            entry = next(r for r in listed if str(r.uri) == uri)
            assert (entry.name, entry.description) == ("rotate-keys", "Rotate signing keys without downtime.")

            read_back = await session.read_resource(todo)
            assert read_back.contents[0].text == "Nothing about tokens here.\n"
            # By the Skills extension's URI, and by the skill://NAME of before.
            for by in (uri, "skill://rotate-keys"):
                whole = await session.read_resource(by)
                assert whole.contents[0].text == skill
                assert whole.contents[0].mime_type == "text/markdown"

            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates][1] == "skill://{+path}"

    run(scenario())


DATA = pathlib.Path(os.environ.get("RAGBOX_DATA", ROOT.parent / "shared" / "data"))
PYTHON_SOURCES = [
    "skills/wshobson+agents/tools/doc_gardener.py",
    "skills/K-Dense-AI+claude-scientific-skills/scientific-skills/pptx/scripts/office/validators/base.py",
]


def parses(chunk):
    """True when a chunk is complete Python; an indented one (a method) inside a block."""
    source = "if True:\n" + chunk if chunk[:1].isspace() else chunk
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False


def test_python_code_comes_back_in_whole_units(tmp_path):
    """Every chunk search returns from real Python files is complete Python, as
    Python's own parser reads it: code is never cut in the middle of a unit."""
    ws = tmp_path / "ws"
    for i, rel in enumerate(PYTHON_SOURCES):
        target = ws / "tools" / f"{i}_{pathlib.Path(rel).name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((DATA / rel).read_bytes())
    (tmp_path / "user-config").mkdir()

    async def scenario():
        async with connected(ws) as (session, _):
            embedded = await session.call_tool("embed_workspace", {})
            assert embedded.structured_content["embedded"] == 2, embedded.content
            chunks = set()
            for query in ["validate xml", "report findings", "repair whitespace", "links", "main", "schema", "ids"]:
                found = await session.call_tool("search_semantic", {"query": query, "n_results": 100})
                chunks.update(hit["text"] for hit in found.structured_content["results"])
                # `search` answers once per file: stretches of whole units, ⋮ between them.
                found = await session.call_tool("search", {"query": query, "search_type": "hybrid", "limit": 50})
                for hit in found.structured_content["results"]:
                    chunks.update(hit["content"].split("\n⋮\n"))
            broken = [text[:300] for text in chunks if not parses(text)]
            assert len(chunks) >= 30, len(chunks)
            assert not broken, broken

    asyncio.run(asyncio.wait_for(scenario(), timeout=180))
