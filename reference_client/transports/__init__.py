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
import math
from typing import Any, Protocol

MAX_MESSAGE_BYTES = 1024 * 1024  # NET-4: one protocol message or HTTP response
MAX_DEPTH = 100  # JSON nesting accepted from a server; deeper is hostile, not a schema


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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def _hostile_part(value: Any) -> str | None:
    """What makes a decoded value unusable (too deep, lone surrogates), or None.

    Iterative, so a hostile message cannot exhaust the stack here either. A lone surrogate
    (legal as a JSON escape) could not be written to a session file or sent to the model.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return "nested too deeply"
        if isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "holding text that is not valid Unicode"
    return None


def parse_json(data: bytes | str, what: str = "message") -> Any:
    """Decode untrusted JSON strictly: UTF-8, no NaN/Infinity, no numbers that overflow, at
    most MAX_DEPTH deep. Raises ProtocolError with a short reason, never anything else."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise ProtocolError(f"the server sent a {what} that is not valid UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise ProtocolError(f"the server sent a {what} nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, huge ints, NaN
        raise ProtocolError(
            f"the server sent a {what} that is not valid JSON ({_short(exc)})"
        ) from None
    problem = _hostile_part(value)
    if problem:
        raise ProtocolError(f"the server sent a {what} {problem}")
    return value


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:117] + "..."


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
