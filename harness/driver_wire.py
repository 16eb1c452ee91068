"""The driver protocol's wire format: adapter dataclasses to JSON and back, and framing.

Strategy: the adapter contract's dataclasses cross the wire as JSON objects with the same
field names (paths as strings, profiles as a list, a server config tagged with `type`), so
the protocol documentation is the dataclass definitions in
`mcp_host_conformance.harness.adapter`. Decoding is strict: a field of the wrong type is a
`WireError` naming the field, which the harness reports as the client's failure rather
than letting a half-filled record reach a case. Pure functions only; the I/O lives in
`mcp_host_conformance.harness.driver` and `mcp_host_conformance.harness.driver_server`.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.adapter import HttpServer, ServerConfig, StdioServer

__all__ = [
    "MAX_LINE",
    "PROTOCOL",
    "WireError",
    "decode",
    "decode_server",
    "encode",
    "encode_server",
    "frame",
    "parse_line",
]

PROTOCOL = "mcp-host-conformance-driver/1"
MAX_LINE = 32 * 1024 * 1024  # one message; larger is a protocol violation

# JSON-RPC error codes used by the protocol.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
ADAPTER_FAILED = -32000  # the adapter (the host under test) raised
CALLBACK_FAILED = -32001  # the harness's approve/acknowledge callback raised


class WireError(ValueError):
    """A message or a value does not have the shape the protocol requires."""


def encode(value: Any) -> Any:
    """A JSON-able form of an adapter value (dataclass, Path, frozenset, list, dict, scalar)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, frozenset | set):
        return sorted(encode(v) for v in value)
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def encode_server(server: ServerConfig) -> dict[str, Any]:
    kind = "http" if isinstance(server, HttpServer) else "stdio"
    return {"type": kind, **encode(server)}


def decode_server(obj: Any) -> ServerConfig:
    if not isinstance(obj, dict):
        raise WireError("server: expected an object")
    body = {k: v for k, v in obj.items() if k != "type"}
    if obj.get("type") == "http":
        return decode(HttpServer, body, "server")
    if obj.get("type") == "stdio":
        return decode(StdioServer, body, "server")
    raise WireError(f"server.type: expected 'http' or 'stdio', got {obj.get('type')!r}")


def _convert(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        return _convert(options[0], value, where)
    if hint is Any:
        return value
    if hint is Path:
        if not isinstance(value, str):
            raise WireError(f"{where}: expected a path string, got {type(value).__name__}")
        return Path(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise WireError(f"{where}: expected a number, got {type(value).__name__}")
        return float(value)
    if hint in (str, bool, int):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise WireError(f"{where}: expected {hint.__name__}, got {type(value).__name__}")
        return value
    if origin in (list, frozenset):
        if not isinstance(value, list):
            raise WireError(f"{where}: expected a list, got {type(value).__name__}")
        items = [_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        return frozenset(items) if origin is frozenset else items
    if origin is dict:
        if not isinstance(value, dict):
            raise WireError(f"{where}: expected an object, got {type(value).__name__}")
        return {
            _convert(args[0], k, f"{where} key"): _convert(args[1], v, f"{where}.{k}")
            for k, v in value.items()
        }
    if dataclasses.is_dataclass(hint):
        return decode(hint, value, where)
    raise WireError(f"{where}: unsupported type {hint!r}")  # pragma: no cover - contract types


def decode(cls: type, obj: Any, where: str | None = None) -> Any:
    """An instance of the dataclass `cls` from its JSON object; WireError naming the field
    otherwise. Unknown fields are ignored (newer drivers may send more); missing fields
    with a default take it."""
    where = where or cls.__name__
    if not isinstance(obj, dict):
        raise WireError(f"{where}: expected an object, got {type(obj).__name__}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in obj:
            kwargs[f.name] = _convert(hints[f.name], obj[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise WireError(f"{where}.{f.name}: missing")
    return cls(**kwargs)


def frame(message: dict[str, Any]) -> bytes:
    """One message as one line (JSON never contains a raw newline)."""
    return (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")


def parse_line(line: bytes | str) -> dict[str, Any]:
    """A JSON-RPC 2.0 message from one line; WireError if it is not one."""
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"not JSON ({exc.__class__.__name__}): {_preview(line)}") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise WireError(f"not a JSON-RPC 2.0 message: {_preview(line)}")
    is_request = isinstance(message.get("method"), str)
    is_response = "id" in message and ("result" in message or "error" in message)
    if not (is_request or is_response):
        raise WireError(f"neither a request nor a response: {_preview(line)}")
    return message


def _preview(line: bytes | str, limit: int = 120) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    return repr(text[:limit] + ("..." if len(text) > limit else ""))
