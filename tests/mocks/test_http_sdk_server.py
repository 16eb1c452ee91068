"""The SDK-backed variant (`sdk-http`) serves the same tools through the SDK's own stack."""

from __future__ import annotations

import httpx

from mcp_host_conformance.mocks.named import start


def test_official_client_lists_every_page_and_calls_on_sdk_http(sdk):
    with start("sdk-http") as running:

        async def body(session):
            from mcp.types import PaginatedRequestParams

            await session.initialize()
            names, cursor = [], None
            while True:
                listed = await session.list_tools(
                    params=PaginatedRequestParams(cursor=cursor) if cursor else None
                )
                names += [t.name for t in listed.tools]
                cursor = listed.next_cursor
                if not cursor:
                    break
            echoed = await session.call_tool("paged_001", {"a": 1})
            return names, echoed.content[0].text

        names, echoed = sdk(running.url, body)
        assert len(names) == 6 and echoed == '{"a":1}'
        assert running.journal.count("tools/list") == 3
        assert running.journal.count("tools/call") == 1
        journal = httpx.get(running.describe()["journal"]).json()
        assert any(e["method"] == "initialize" for e in journal)
        assert (
            httpx.post(running.describe()["journal"].replace("__journal", "__reset")).status_code
            == 204
        )
        assert running.journal.is_empty()
