"""The official `mcp` Python client, which nobody here wrote, against the stdio mock."""

from __future__ import annotations

import os

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import PaginatedRequestParams

from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool
from mcp_host_conformance.mocks.stdio_server import StdioMock


def test_official_client_initializes_lists_every_page_and_calls(tmp_path):
    tools = [Tool(f"tool-{i}", description=f"number {i}") for i in range(5)]
    tools.append(Tool("greet", reply=Reply.text("hello", "world")))
    mock = StdioMock(ServerSpec(name="stdio-ok", tools=tools, page_size=2), tmp_path)
    params = StdioServerParameters(
        command=mock.command[0], args=mock.command[1:], env={"LANG": "C.UTF-8"}, cwd=str(tmp_path)
    )

    async def session() -> tuple[list[str], list[str], int]:
        with anyio.fail_after(10), open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    names, cursor, pages = [], None, 0
                    while True:
                        listed = await client.list_tools(
                            params=None if cursor is None else PaginatedRequestParams(cursor=cursor)
                        )
                        names += [t.name for t in listed.tools]
                        pages += 1
                        cursor = listed.next_cursor
                        if not cursor:
                            break
                    result = await client.call_tool("greet", {"who": "x"})
                    texts = [block.text for block in result.content]
                    return names, texts, pages

    names, texts, pages = anyio.run(session)
    assert names == [t.name for t in tools] and pages == 3
    assert texts == ["hello", "world"]
    methods = mock.journal.methods()
    assert methods[:2] == ["initialize", "notifications/initialized"]
    assert methods.count("tools/call") == 1
