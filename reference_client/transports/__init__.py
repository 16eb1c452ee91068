"""Own MCP client transports, and the errors every layer above them understands.

Strategy: the `mcp` SDK's client transports break host rules, so the reference host does
not use them, nor its `ClientSession` (see rpc.py):
- its Streamable HTTP client follows same-origin redirects (NET-3 forbids any redirect);
- it caps SSE events at 1 MiB but reads JSON responses whole (NET-4 wants 1 MiB for both);
- its `stdio_client` passes HOME, LOGNAME, PATH, SHELL, TERM and USER to the child and not
  LANG (STDIO-2 wants exactly PATH, HOME, LANG plus the configured variables);
- `ClientSession.call_tool` may send an extra `tools/list` (DISC-5: never re-list).
So `http.py` speaks Streamable HTTP over httpx and `stdio.py` spawns the process itself.

Both transports move whole JSON-RPC messages: `request(message)` sends one request and
returns the response with the same id; `notify(message)` sends a notification. Every
failure is one of the exceptions below, whose text is safe to show (it never holds a
header or environment value; the host still redacts it). `maybe_acted` tells the turn loop
whether the server may have received the request: if so, a failure at call time is
`unknown`, never retried (RES-7, RETRY-1).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from mcp_host_conformance.reference_client import untrusted_json

MAX_MESSAGE_BYTES = 1024 * 1024  # NET-4: one protocol message or HTTP response
MAX_DEPTH = untrusted_json.MAX_DEPTH  # JSON nesting accepted from a server


class McpError(Exception):
    """Something went wrong talking to a server. `str(err)` is a reason a user can read."""

    maybe_acted = True  # the server may have received (and acted on) what we sent


class TransportError(McpError):
    """The connection failed or was lost."""

    def __init__(self, message: str, *, maybe_acted: bool = True) -> None:
        super().__init__(message)
        self.maybe_acted = maybe_acted


class MessageTooLarge(TransportError):
    """A message or response over 1 MiB (NET-4, RES-8); the connection is abandoned."""

    def __init__(self, what: str = "message") -> None:
        super().__init__(f"the server sent a {what} over the 1 MiB limit")


class ProtocolError(McpError):
    """The server answered something that is not a valid JSON-RPC message."""


class Transport(Protocol):
    destination: str

    async def connect(self) -> None: ...

    async def request(self, message: dict[str, Any]) -> dict[str, Any]: ...

    async def notify(self, message: dict[str, Any]) -> None: ...

    def set_protocol_version(self, version: str) -> None: ...

    async def close(self) -> None: ...


def parse_json(data: bytes | str, what: str = "message") -> Any:
    """Decode untrusted JSON (see `untrusted_json`). Raises ProtocolError with a short
    reason, never anything else."""
    try:
        return untrusted_json.decode(data)
    except untrusted_json.UntrustedJsonError as exc:
        raise ProtocolError(f"the server sent a {what} {exc}") from None


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
