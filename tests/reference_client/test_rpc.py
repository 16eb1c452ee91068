"""The JSON-RPC session: response shapes, pagination limit (DISC-6), one request per call."""

from __future__ import annotations

import pytest

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.spec import ServerSpec, Tool
from mcp_host_conformance.reference_client.rpc import (
    RpcError,
    RpcSession,
    check_response,
    check_tools_page,
)
from mcp_host_conformance.reference_client.transports import ProtocolError
from mcp_host_conformance.reference_client.transports.http import HttpTransport
from tests.reference_client.engine_support import run


def test_check_response_result_error_and_garbage() -> None:
    assert check_response({"jsonrpc": "2.0", "id": 1, "result": {"a": 1}}) == {"a": 1}
    with pytest.raises(RpcError) as caught:
        check_response(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "no such tool"}}
        )
    assert caught.value.error["message"] == "no such tool"
    for bad in (
        [],
        {"id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": []},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "m"}},
        {"jsonrpc": "2.0", "id": 1},
    ):
        with pytest.raises(ProtocolError):
            check_response(bad)


def test_check_tools_page_shapes() -> None:
    assert check_tools_page({"tools": [{"name": "a"}], "nextCursor": "c"}) == ([{"name": "a"}], "c")
    assert check_tools_page({"tools": []}) == ([], None)
    for bad in (
        {},
        {"tools": {}},
        {"tools": [1]},
        {"tools": [{"name": 5}]},
        {"tools": [], "nextCursor": 3},
        {"tools": [{"name": "a", "description": 7}]},
    ):
        with pytest.raises(ProtocolError):
            check_tools_page(bad)


def tools(n: int) -> list[Tool]:
    return [Tool(f"t{i}") for i in range(n)]


async def listing(url: str) -> list[dict]:
    transport = HttpTransport(url, {})
    session = RpcSession(transport)
    await transport.connect()
    try:
        await session.initialize()
        return await session.list_tools()
    finally:
        await session.close()


def test_sixteen_pages_accepted_seventeen_refused() -> None:
    with HttpMock(ServerSpec(tools=tools(16), page_size=1, response_mode="json")) as mock:
        assert len(run(listing(mock.url))) == 16
        assert mock.journal.count("tools/list") == 16
    with HttpMock(ServerSpec(tools=tools(17), page_size=1, response_mode="json")) as mock:
        with pytest.raises(ProtocolError, match="more than 16 pages"):
            run(listing(mock.url))
        assert mock.journal.count("tools/list") == 16


def test_call_is_sent_once_and_errors_are_rpc_errors() -> None:
    with HttpMock(ServerSpec(tools=tools(1))) as mock:

        async def go() -> None:
            transport = HttpTransport(mock.url, {})
            session = RpcSession(transport)
            await transport.connect()
            try:
                await session.initialize()
                result = await session.call_tool("t0", {"k": "v"})
                assert result["content"][0]["text"] == '{"k":"v"}'
                with pytest.raises(RpcError):
                    await session.call_tool("missing", {})
            finally:
                await session.close()

        run(go())
        assert mock.journal.count("tools/call") == 2
        assert mock.journal.count("tools/list") == 0
