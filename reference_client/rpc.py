"""A minimal MCP client session over one of our transports: initialize, tools/list, tools/call.

Strategy: the SDK's `ClientSession` is not used because its `call_tool` may send an extra
`tools/list` (DISC-5 says discovery happens once) and it rides on the SDK transports. What
the host needs is three requests, so they are written out here, each checking the shape of
what came back: a hostile server's answer becomes `ProtocolError` (discovery: unavailable;
call: unknown) and a JSON-RPC error becomes `RpcError` (call: failed with its message).
Nothing here retries or repeats a request (RETRY-1); pagination stops at 16 pages (DISC-6).
"""

from __future__ import annotations

import functools
import itertools
from importlib import metadata
from typing import Any

from mcp_host_conformance.reference_client.transports import McpError, ProtocolError, Transport

PROTOCOL_VERSION = "2025-11-25"  # its Streamable HTTP polling (SSE resumption) is implemented
KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MAX_PAGES = 16  # DISC-6 (same number as limits.MAX_PAGES)
CLIENT_NAME = "mcp-reference-host"


@functools.lru_cache(maxsize=1)  # a metadata lookup costs a millisecond, per connection
def _client_version() -> str:
    try:
        return metadata.version("mcp-host-conformance")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "0.0.0"


class RpcError(McpError):
    """The server answered a request with a JSON-RPC error. It did answer, so for a call the
    outcome is known: failed, with the server's message."""

    maybe_acted = False

    def __init__(self, error: dict[str, Any]) -> None:
        self.error = error
        super().__init__(f"the server answered with an error: {error.get('message', '')}")


def check_response(response: Any) -> dict[str, Any]:
    """The `result` object of a response; raises RpcError / ProtocolError (pure)."""
    if not isinstance(response, dict) or response.get("jsonrpc") != "2.0":
        raise ProtocolError("the server's response is not JSON-RPC 2.0")
    if "error" in response:
        error = response["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("message"), str)
            or not isinstance(error.get("code"), int)
            or isinstance(error.get("code"), bool)
        ):
            raise ProtocolError("the server's error response is malformed")
        raise RpcError({"code": error["code"], "message": error["message"][:4096]})
    result = response.get("result")
    if not isinstance(result, dict):
        raise ProtocolError("the server's result is not a JSON object")
    return result


def check_tools_page(result: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """The tools and the next cursor of one tools/list page (pure)."""
    tools = result.get("tools")
    if not isinstance(tools, list):
        raise ProtocolError("tools/list did not return a list of tools")
    for tool in tools:
        if not isinstance(tool, dict):
            raise ProtocolError("tools/list returned a tool that is not a JSON object")
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ProtocolError("tools/list returned a tool without a string name")
        if "description" in tool and not isinstance(tool["description"], str | None):
            raise ProtocolError(
                f"tool {tool['name'][:64]!r} has a description that is not a string"
            )
    cursor = result.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        raise ProtocolError("tools/list returned a cursor that is not a string")
    return tools, cursor or None


class RpcSession:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._ids = itertools.count(1)
        self.server_info: dict[str, Any] = {}
        self.protocol_version: str | None = None

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        return check_response(await self.transport.request(message))

    async def initialize(self) -> dict[str, Any]:
        result = await self._request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": CLIENT_NAME, "version": _client_version()},
            },
        )
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in KNOWN_VERSIONS:
            raise ProtocolError(
                "the server answered initialize without a supported protocolVersion"
            )
        if not isinstance(result.get("capabilities", {}), dict):
            raise ProtocolError("the server's capabilities are not a JSON object")
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        self.protocol_version = version
        self.transport.set_protocol_version(version)
        await self.transport.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool, following cursors for at most 16 pages (DISC-6)."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _page in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else {}
            page, cursor = check_tools_page(await self._request("tools/list", params))
            tools.extend(page)
            if cursor is None:
                return tools
        raise ProtocolError(f"the server needs more than {MAX_PAGES} pages of tools/list")

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The raw CallToolResult; sent exactly once, whatever happens (RETRY-1)."""
        return await self._request("tools/call", {"name": name, "arguments": arguments})

    async def close(self) -> None:
        await self.transport.close()
