"""The official `mcp` client initializes, lists every page and calls tools on the mocks.

This is the check by software nobody here wrote (issue 2, point 9): if the SDK client
accepts the mock, the mock speaks MCP.
"""

from __future__ import annotations

import asyncio
import ssl

import pytest

from mcp_host_conformance.mocks import tls
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool


def _spec(mode: str) -> ServerSpec:
    tools = [Tool(f"tool{i}", f"tool number {i}") for i in range(7)]
    tools.append(Tool("hello", "says hello", reply=Reply.text("hello", "world")))
    tools.append(Tool("fail", "fails", reply=Reply.tool_error("it broke")))
    return ServerSpec(name="sdk-check", tools=tools, page_size=3, response_mode=mode)


async def _exercise(session):
    init = await session.initialize()
    names, cursor, pages = [], None, 0
    while True:
        from mcp.types import PaginatedRequestParams

        listed = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        pages += 1
        names += [t.name for t in listed.tools]
        cursor = listed.next_cursor
        if not cursor:
            break
    echoed = await session.call_tool("tool2", {"q": "x"})
    hello = await session.call_tool("hello", {})
    failed = await session.call_tool("fail", {})
    return init, names, pages, echoed, hello, failed


def _check(result, mock):
    init, names, pages, echoed, hello, failed = result
    assert init.server_info.name == "sdk-check"
    assert pages == 3 and len(names) == 9
    assert echoed.content[0].text == '{"q":"x"}'
    assert [c.text for c in hello.content] == ["hello", "world"]
    assert failed.is_error is True
    assert mock.journal.count("tools/call", where=lambda e: e.params["name"] == "tool2") == 1
    assert mock.journal.count("initialize") == 1


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_official_client_against_plain_http(start_mock, sdk, mode):
    mock = start_mock(_spec(mode))
    _check(sdk(mock.url, _exercise), mock)


def test_official_client_against_tls_with_the_ca(start_mock, sdk):
    mock = start_mock(_spec("sse"), tls="trusted")
    assert mock.url.startswith("https://127.0.0.1:")
    _check(sdk(mock.url, _exercise, verify=ssl.create_default_context(cafile=mock.ca_file)), mock)


def test_official_client_refuses_the_untrusted_tls_mock(start_mock, sdk):
    mock = start_mock(_spec("sse"), tls="untrusted")
    assert mock.ca_file == tls.trusted_ca_file()
    with pytest.raises(BaseException) as caught:  # noqa: B017 - the SDK wraps it in an ExceptionGroup
        sdk(mock.url, _exercise, verify=ssl.create_default_context(cafile=mock.ca_file), timeout=10)
    assert (
        "CERTIFICATE_VERIFY_FAILED" in repr(caught.value)
        or "certificate" in repr(caught.value).lower()
    )
    assert mock.journal.count(kind="http") == 0


def test_official_client_sees_list_changed_from_change_tools(start_mock, sdk):
    mock = start_mock(_spec("json"))
    seen = asyncio.Event

    async def body(session):
        await session.initialize()
        loop = asyncio.get_running_loop()
        # the SDK opens its GET stream after `initialized`; notify only once it is there
        await loop.run_in_executor(
            None,
            lambda: mock.journal.wait_for(
                kind="http", where=lambda e: e.http_method == "GET", timeout=30
            ),
        )
        await loop.run_in_executor(None, mock.change_tools, [Tool("new")])
        await asyncio.wait_for(changed.wait(), 30)
        return [t.name for t in (await session.list_tools()).tools]

    changed: asyncio.Event

    async def run():
        nonlocal changed
        changed = seen()
        import httpx2
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async def on_message(message):
            if (
                getattr(getattr(message, "root", message), "method", None)
                == "notifications/tools/list_changed"
            ):
                changed.set()

        async with httpx2.AsyncClient(timeout=5) as http:
            async with streamable_http_client(mock.url, http_client=http) as (read, write):
                async with ClientSession(read, write, message_handler=on_message) as session:
                    return await body(session)

    assert asyncio.run(asyncio.wait_for(run(), 10)) == ["new"]


def test_official_client_accepts_every_rich_result(start_mock, sdk):
    from mcp_host_conformance.mocks.named import rich_results_spec

    mock = start_mock(rich_results_spec())

    async def body(session):
        await session.initialize()
        outcomes = {}
        for tool in (await session.list_tools()).tools:
            try:
                result = await session.call_tool(tool.name, {"x": 1})
                outcomes[tool.name] = (
                    [c.type for c in result.content],
                    result.is_error,
                    result.structured_content,
                )
            except Exception as exc:  # the JSON-RPC error surfaces as an exception
                outcomes[tool.name] = str(exc)
        return outcomes

    outcomes = sdk(mock.url, body)
    assert outcomes["text"][0] == ["text", "text"]
    assert outcomes["image"][0] == ["image"] and outcomes["audio"][0] == ["audio"]
    assert outcomes["resource_link"][0] == ["resource_link"]
    assert outcomes["resource_text"][0] == ["resource"] == outcomes["resource_blob"][0]
    assert outcomes["structured"] == ([], False, {"answer": 42, "unit": "none"})
    assert outcomes["tool_error"][1] is True
    assert "failed on purpose" in outcomes["rpc_error"]
    assert outcomes["large"][0] == ["text", "text"]


@pytest.mark.parametrize("variant", ["deliver", "close-again", "error"])
def test_official_client_resumes_a_polled_call(start_mock, sdk, variant):
    """The mcp SDK (software nobody here wrote) follows the mock's SSE polling."""
    from mcp_host_conformance.mocks.spec import Misbehaviour

    spec = ServerSpec(
        tools=[Tool("slow", reply=Reply.text("polled ok"))],
        misbehaviour=Misbehaviour(poll_call=variant, poll_retry_ms=20),
    )
    mock = start_mock(spec)

    async def body(session):
        await session.initialize()
        try:
            return (await session.call_tool("slow", {})).content[0].text
        except Exception as exc:  # the JSON-RPC error surfaces as an exception
            return f"error: {exc}"

    got = sdk(mock.url, body)
    if variant == "error":
        assert got.startswith("error: ") and "stream was closed" in got
    else:
        assert got == "polled ok"
    assert mock.journal.count("tools/call") == 1
    resumed = [e.headers.get("last-event-id") for e in mock.journal.entries(kind="http")]
    assert len([r for r in resumed if r]) == (2 if variant == "close-again" else 1)
