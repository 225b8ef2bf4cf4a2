"""`make run`: start `ragbox serve` on the example workspace with the official
MCP client, list its tools and run a search, as an agent would."""

import asyncio
import json
import os
import pathlib
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = pathlib.Path(__file__).resolve().parents[1]


async def main(binary: str, workspace: str, query: str) -> None:
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--workspace", workspace],
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""), "RAGBOX_LOG": "warn"},
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
            print(json.dumps(found["results"][0], indent=2) if found["results"] else "")


if __name__ == "__main__":
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "debug" / "ragbox")
    workspace = sys.argv[2] if len(sys.argv) > 2 else str(ROOT / "examples" / "workspace")
    query = sys.argv[3] if len(sys.argv) > 3 else "jwt"
    asyncio.run(main(binary, workspace, query))
