"""The driver protocol's values: adapter dataclasses to JSON and back.

Strategy: the adapter contract's dataclasses cross the wire as JSON objects with the same
field names (paths as strings, tuples and profiles as lists, a server config tagged with
`type`), so the protocol documentation is the dataclass definitions in
`mcp_host_conformance.harness.contract.adapter`. Decoding is strict: a field of the wrong type (or
a call status outside the closed set) is a `WireError` naming the field, which the harness
reports as the client's failure rather than letting a half-filled record reach a case.
Pure functions only; the framing is `mcp_host_conformance.harness.contract.jsonrpc`, the I/O is in
`mcp_host_conformance.harness.run.driver` and `mcp_host_conformance.harness.contract.driver_server`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from mcp_host_conformance.harness.contract.adapter import HttpServer, ServerConfig, StdioServer
from mcp_host_conformance.harness.contract.jsonrpc import WireError

__all__ = [
    "PROTOCOL",
    "WireError",
    "decode",
    "decode_server",
    "encode",
    "encode_server",
]

PROTOCOL: Final = "mcp-host-conformance-driver/1"

T = TypeVar("T")


def encode(value: Any) -> Any:
    """A JSON-able form of an adapter value (dataclass, Path, frozenset, sequence, mapping,
    scalar)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, frozenset | set):
        return sorted(encode(v) for v in value)
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
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


def _type_name(value: Any) -> str:
    return type(value).__name__


def _sequence(item: Any, value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise WireError(f"{where}: expected a list, got {_type_name(value)}")
    return [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]


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
    if origin is Literal:
        if value not in args or not isinstance(value, str):
            allowed = ", ".join(repr(a) for a in args)
            raise WireError(f"{where}: expected one of {allowed}, got {str(value)[:60]!r}")
        return value
    if hint is Path:
        if not isinstance(value, str):
            raise WireError(f"{where}: expected a path string, got {_type_name(value)}")
        return Path(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise WireError(f"{where}: expected a number, got {_type_name(value)}")
        return float(value)
    if hint in (str, bool, int):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise WireError(f"{where}: expected {hint.__name__}, got {_type_name(value)}")
        return value
    if origin is tuple:  # only the homogeneous tuple[X, ...] appears in the contract
        return tuple(_sequence(args[0], value, where))
    if origin in (list, frozenset):
        items = _sequence(args[0], value, where)
        return frozenset(items) if origin is frozenset else items
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise WireError(f"{where}: expected an object, got {_type_name(value)}")
        return {
            _convert(args[0], k, f"{where} key"): _convert(args[1], v, f"{where}.{k}")
            for k, v in value.items()
        }
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode(hint, value, where)
    raise WireError(f"{where}: unsupported type {hint!r}")  # pragma: no cover - contract types


def decode(cls: type[T], obj: Any, where: str | None = None) -> T:
    """An instance of the dataclass `cls` from its JSON object; WireError naming the field
    otherwise. Unknown fields are ignored (newer drivers may send more); missing fields
    with a default take it."""
    where = where or cls.__name__
    if not isinstance(obj, dict):
        raise WireError(f"{where}: expected an object, got {_type_name(obj)}")
    if not dataclasses.is_dataclass(cls):  # pragma: no cover - contract types only
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in obj:
            kwargs[f.name] = _convert(hints[f.name], obj[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise WireError(f"{where}.{f.name}: missing")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # a record's own check (e.g. a status)
        raise WireError(f"{where}: {exc}") from None
