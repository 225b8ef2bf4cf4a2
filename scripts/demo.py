"""`make run`: start `ragbox serve` on a copy of the example workspace with the
official MCP client, list its tools, search by keyword, embed the workspace and
search it by meaning, as an agent would."""

import asyncio
import json
import os
import pathlib
import shutil
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = pathlib.Path(__file__).resolve().parents[1]


async def main(binary: str, workspace: str, query: str) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""), "RAGBOX_LOG": "warn"}
    # The embedding model is where `make model` put it.
    for var in ("XDG_CACHE_HOME", "RAGBOX_MODEL"):
        if var in os.environ:
            env[var] = os.environ[var]
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--workspace", workspace],
        env=env,
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print(f"connected to {init.server_info.name} {init.server_info.version}")
            for tool in (await session.list_tools()).tools:
                print(f"  tool: {tool.name} - {tool.description.splitlines()[0][:90]}")
            print(f"\nsearch_workspace {{query: {query!r}}}:")
            result = await session.call_tool("search_workspace", {"query": query})
            if result.is_error:
                sys.exit(f"search failed: {result.content[0].text}")
            found = result.structured_content
            for match in found["results"]:
                where = match["conversation"] or match["path"]
                print(f"  [{match['type'] or '-'} {match['date'] or ''}] {where}:{match['line']}  {match['text']}")
            print(f"\n{found['num_results']} matching lines in {found['files_searched']} files")

            print("\nembed_workspace {}:")
            result = await session.call_tool("embed_workspace", {})
            if result.is_error:
                sys.exit(f"embedding failed: {result.content[0].text}")
            report = result.structured_content
            print(f"  embedded {report['embedded']} files ({report['chunks']} chunks), skipped {report['skipped']}")

            print(f"\nsearch_semantic {{query: {query!r}, n_results: 3}}:")
            result = await session.call_tool("search_semantic", {"query": query, "n_results": 3})
            if result.is_error:
                sys.exit(f"semantic search failed: {result.content[0].text}")
            found = result.structured_content
            for hit in found["results"]:
                print(f"  {hit['score'] * 100:5.1f}%  {hit['conversation']}  ({hit['source_path']})")
            print(json.dumps(found["results"][0], indent=2) if found["results"] else "")


if __name__ == "__main__":
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "debug" / "ragbox")
    workspace = sys.argv[2] if len(sys.argv) > 2 else str(ROOT / "examples" / "workspace")
    query = sys.argv[3] if len(sys.argv) > 3 else "jwt"
    # A copy, so the index the demo builds does not land in the repository.
    with tempfile.TemporaryDirectory(prefix="ragbox-demo-") as tmp:
        copy = pathlib.Path(tmp) / "workspace"
        shutil.copytree(workspace, copy)
        asyncio.run(main(binary, str(copy), query))
