"""What a mock MCP server does, as plain data.

Strategy: one `ServerSpec` describes a mock whatever its transport (HTTP, TLS, stdio),
so a behaviour is written once and served three ways. A spec is built from Python or read
from a JSON / TOML file (`load_spec`); the file form is the dict form of these
dataclasses. Misbehaviour is data too (`Misbehaviour`), so the named mocks of
`mcp_host_conformance.mocks.named` are just specs.

This module must stay light (no SDK import): the stdio mock reads specs at start.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields

from mcp_host_conformance.mocks.json_input import JsonInputError, check_value, read_json

TYPE_CHECKING = False  # no `typing` at run time: the stdio mock imports this (stdio_server)
if TYPE_CHECKING:
    from typing import Any, TypeAlias


class SpecError(ValueError):
    """A spec (file or dict) that cannot describe a mock; the message names the problem."""


MISSING = "__missing__"  # an input_schema of MISSING means: send no inputSchema at all

DEFAULT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass
class Reply:
    """How a tool answers a `tools/call`.

    - content: raw MCP content blocks, sent as they are (text, image, audio,
      resource_link, resource with text or blob).
    - structured: `structuredContent`, sent beside content.
    - is_error: the result carries `isError: true`.
    - jsonrpc_error: {"code": int, "message": str}: answer with a JSON-RPC error instead.
    - echo: one text block holding the compact JSON of the arguments received.
    - pad_to: pad the text so the whole result is about this many bytes (RES-10 output
      limit; not the oversize misbehaviour, which breaks the 1 MiB message limit).
    - meta: the result's `_meta` object, sent as is (a host shows none of it: a result can
      be made large without changing what the model is told).
    """

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    jsonrpc_error: dict[str, Any] | None = None
    echo: bool = False
    pad_to: int | None = None
    meta: dict[str, Any] | None = None

    # constructors for the common cases -------------------------------------------------
    @classmethod
    def text(cls, *texts: str) -> Reply:
        return cls(content=[{"type": "text", "text": t} for t in texts])

    @classmethod
    def echo_arguments(cls) -> Reply:
        return cls(echo=True)

    @classmethod
    def image(cls, data_b64: str, mime_type: str = "image/png") -> Reply:
        return cls(content=[{"type": "image", "data": data_b64, "mimeType": mime_type}])

    @classmethod
    def audio(cls, data_b64: str, mime_type: str = "audio/wav") -> Reply:
        return cls(content=[{"type": "audio", "data": data_b64, "mimeType": mime_type}])

    @classmethod
    def resource_link(cls, uri: str, name: str = "link") -> Reply:
        return cls(content=[{"type": "resource_link", "uri": uri, "name": name}])

    @classmethod
    def resource_text(cls, uri: str, text: str, mime_type: str = "text/plain") -> Reply:
        return cls(
            content=[
                {"type": "resource", "resource": {"uri": uri, "text": text, "mimeType": mime_type}}
            ]
        )

    @classmethod
    def resource_blob(
        cls, uri: str, blob_b64: str, mime_type: str = "application/octet-stream"
    ) -> Reply:
        return cls(
            content=[
                {
                    "type": "resource",
                    "resource": {"uri": uri, "blob": blob_b64, "mimeType": mime_type},
                }
            ]
        )

    @classmethod
    def structured_only(cls, data: dict[str, Any]) -> Reply:
        return cls(content=[], structured=data)

    @classmethod
    def tool_error(cls, message: str) -> Reply:
        return cls(content=[{"type": "text", "text": message}], is_error=True)

    @classmethod
    def rpc_error(cls, message: str, code: int = -32603) -> Reply:
        return cls(jsonrpc_error={"code": code, "message": message})


@dataclass
class Tool:
    """One tool a mock serves: its definition in `tools/list` and how `tools/call` answers."""

    name: str
    description: str = ""
    input_schema: Any = field(default_factory=lambda: dict(DEFAULT_SCHEMA))  # raw; MISSING omits it
    annotations: dict[str, Any] | None = None
    reply: Reply = field(default_factory=Reply.echo_arguments)
    # Set by a running mock (see `with_markers`), never by hand: a token unique to this tool
    # of this mock, served in its description and schema so the mock model finds the
    # function a host offers for it, whatever the host named or labelled it.
    marker: str | None = None

    def definition(self) -> dict[str, Any]:
        """The tool as it appears in a `tools/list` result."""
        d: dict[str, Any] = {"name": self.name}
        description = marked_text(self.description, self.marker)
        if description:
            d["description"] = description
        if self.input_schema != MISSING:
            d["inputSchema"] = marked_schema(self.input_schema, self.marker)
        if self.annotations is not None:
            d["annotations"] = self.annotations
        return d


# ---- markers: how the mock model recognises a mock tool in any host's request ---------------

MARKER_PREFIX = "mcphc-tool-"
MARKER_LENGTH = len(MARKER_PREFIX) + 16


def tool_marker(token: str, tool_name: str) -> str:
    """The marker of tool `tool_name` on the mock whose marker token is `token`: unique per
    mock and tool, the same for a tool of that name whenever it is served."""
    import hashlib

    digest = hashlib.sha256(f"{token}\0{tool_name}".encode()).hexdigest()
    return MARKER_PREFIX + digest[:16]


def marked_text(text: str, marker: str | None) -> str:
    """A description with the marker at its end (the text itself first and unchanged)."""
    if marker is None:
        return text
    return f"{text} (ref {marker})" if text else f"(ref {marker})"


def marked_schema(schema: Any, marker: str | None) -> Any:
    """An object schema with the marker in its top-level `description` (others unchanged)."""
    if marker is None or not isinstance(schema, dict):
        return schema
    marked = dict(schema)
    current = marked.get("description")
    marked["description"] = marked_text(current if isinstance(current, str) else "", marker)
    return marked


def new_marker_token() -> str:
    import secrets

    return secrets.token_hex(8)


def marked_tools(tools: list[Tool], token: str) -> list[Tool]:
    """Checked copies of `tools` carrying their markers (for tools a running mock switches to)."""
    return _marked(_tools(list(tools), "tools"), token)


def with_markers(spec: ServerSpec | dict[str, Any], token: str) -> ServerSpec:
    """A checked copy of `spec` (`spec_from_dict`: it shares nothing with `spec`) whose tools
    (and the tools it changes to) carry their markers. Raises SpecError."""
    marked = spec_from_dict(spec)
    _marked([*marked.tools, *marked.misbehaviour.changed_tools], token)
    return marked


def _marked(tools: list[Tool], token: str) -> list[Tool]:
    for tool in tools:
        tool.marker = tool_marker(token, tool.name)
    return tools


@dataclass
class Misbehaviour:
    """Everything a mock can do wrong on purpose. All off by default.

    - stall: JSON-RPC methods never answered (the request is read and journalled).
    - delays: seconds to wait before answering a method, e.g. {"initialize": 0.5}.
    - redirect_status / redirect_to / redirect_at: answer the request carrying the method
      `redirect_at` ("initialize", "tools/call", or "*" for every POST) with this 3xx status
      and `Location: redirect_to`.
    - oversize_at: a method ("initialize", "tools/list" or "tools/call") whose answer is one
      message of exactly `oversize_bytes` bytes (its compact JSON in UTF-8; default 1 MiB +
      64 KiB), in the spec's response mode: padding made of `oversize_fill` repeated (a
      multi-byte character makes a message whose bytes and characters differ; the last
      few bytes are ASCII so the size is exact). Below 1 MiB it is a message near the limit.
    - drop_call: after reading a whole `tools/call` request: "reset" (TCP RST),
      "close" (clean FIN, no response) or "stall" (never answer).
    - reject_status: 401 (with `WWW-Authenticate: Bearer`) or 403 for every request.
    - accept_header / accept_value: answer 401 unless that request header holds exactly
      that value (the header seen is journalled either way).
    - reject_at: the JSON-RPC method whose POST is rejected ("*", the default: every
      request, GET and DELETE too), e.g. "tools/call" for a rejection at call time.
    - reject_challenge: the `WWW-Authenticate` value sent with the rejection (401 or 403),
      e.g. `Bearer resource_metadata="URL"` (the MCP authorization spec's discovery
      hint); default `Bearer realm="mock"` on a 401 and none on a 403.
    - fail_at / fail_message: answer that method (e.g. "initialize") with a JSON-RPC error
      (-32603) carrying `fail_message`, on every transport.
    - change_tools_after_call: after the first tools/call, switch to `changed_tools` and
      send `notifications/tools/list_changed`.
    - stderr_flood: stdio only, bytes written to stderr at start (before `exit_at_once`
      too) and on each call.
    - exit_at_once: stdio only, exit with this code before reading anything.
    - garbage: stdio only, answer every line with non-JSON text.
    - garbage_at: a method ("tools/call") answered with garbage instead of its reply, every
      other method answered normally (HTTP: a 200 whose body is not JSON-RPC, in the
      response mode's content type; stdio: a line that is not JSON-RPC).
    - call_http_status: HTTP only, answer every `tools/call` POST with this status (a 5xx,
      as a failing server or a proxy in front of it would) and a short text body, after
      the request was read and journalled (stdio answers the call normally).
    - spawn_child: stdio only, at start spawn a child process that stays in the server's
      process group and sleeps until killed (STDIO-5: a client that signals only the
      server's pid leaves it running); its pid is journalled as event "child-spawned".
    - exit_at: stdio only, exit (code 0) when a request for this method arrives, without
      answering it (e.g. "tools/list": a server that dies once the handshake is done).
    - ignore_sigterm: stdio only, ignore SIGTERM (so does any child it spawns after): only
      SIGKILL ends it (STDIO-5: a client must escalate after a grace period).
    - daemonize: stdio only, fork at start and let the first process exit at once; the
      forked one serves on the same pipes, in the same process group, its pid journalled
      as event "daemonized" (STDIO-5: a client that signals only a live leader misses it).
    - linger: stdio only, keep running when stdin closes (until a signal ends it) instead
      of exiting, as servers that ignore end of input do.
    - poll_call: HTTP only, SSE polling (resumability, MCP 2025-11-25) for `tools/call`:
      the call's POST is answered with an SSE stream holding only a priming event (an
      event id, `retry: poll_retry_ms`, empty data), which the mock then closes; the
      client must resume with a GET carrying `Last-Event-ID`. What that GET gets:
      "deliver" (the result), "stall" (nothing, the stream held open), "error" (a
      JSON-RPC error for the call), or "close-again" (another priming event and another
      close; the result comes on the GET after that). Event ids are `<stream>-<n>` and
      resuming from any of them replays what followed it. A polled call is answered by
      SSE even when `response_mode` is "json".
    - poll_tools: the tools whose calls poll (empty: every tool).
    - poll_retry_ms: the `retry` field of the priming events, in milliseconds.
    - barrier: "127.0.0.1:PORT" of a `mocks.barrier.Barrier`: `initialize` is answered only
      once the barrier has seen an `initialize` at each of its parties (the spec's `name`
      tells the parties apart), so a host that connects to servers one after the other is
      never answered by the first (DISC-2). An unreachable barrier holds nothing.

    Transports: `drop_call` on stdio: "stall" never answers, "close" and "reset" end the
    process (its stdout closes) after reading the call. `garbage` on HTTP answers with a
    body that is not JSON-RPC. Redirects, rejections and header checks are HTTP only.
    """

    stall: list[str] = field(default_factory=list)
    delays: dict[str, float] = field(default_factory=dict)
    redirect_status: int | None = None
    redirect_to: str | None = None
    redirect_at: str = "initialize"
    oversize_at: str | None = None
    oversize_bytes: int = 1024 * 1024 + 64 * 1024
    oversize_fill: str = "x"
    drop_call: str | None = None
    reject_status: int | None = None
    accept_header: str | None = None
    accept_value: str | None = None
    reject_at: str = "*"
    reject_challenge: str | None = None
    fail_at: str | None = None
    fail_message: str = "Internal error"
    change_tools_after_call: bool = False
    changed_tools: list[Tool] = field(default_factory=list)
    stderr_flood: int = 0
    exit_at_once: int | None = None
    garbage: bool = False
    garbage_at: str | None = None
    call_http_status: int | None = None
    spawn_child: bool = False
    exit_at: str | None = None
    ignore_sigterm: bool = False
    daemonize: bool = False
    linger: bool = False
    poll_call: str | None = None
    poll_tools: list[str] = field(default_factory=list)
    poll_retry_ms: int = 100
    barrier: str | None = None


@dataclass
class ServerSpec:
    """What a mock MCP server serves (its tools, in pages or not) and how it misbehaves."""

    name: str = "mock"
    description: str = "A mock MCP server"
    tools: list[Tool] = field(default_factory=list)
    page_size: int | None = None  # tools/list page size; None = one page
    response_mode: str = "sse"  # "sse" or "json" (Streamable HTTP only)
    instructions: str | None = None
    misbehaviour: Misbehaviour = field(default_factory=Misbehaviour)

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- reading specs from dicts and files -------------------------------------------------
#
# A spec file is hostile input like any other (a person's typo, or a file made to break
# the mock): every field is checked for its type and range here, so a mock never meets a
# value it cannot serve, and every problem is one SpecError naming the field.

MAX_SPEC_BYTES = 16 * 1024 * 1024
MAX_TOML_KEY_PARTS = 256  # dotted keys and brackets on one line (tomllib is quadratic in them)
MAX_BYTES_FIELD = 64 * 1024 * 1024  # oversize_bytes, pad_to: a mock builds these in memory
MAX_FLOOD = 1024 * 1024 * 1024  # stderr_flood is written in chunks, never held whole
MAX_DELAY = 24 * 3600.0
DROP_MODES = ("reset", "close", "stall")
POLL_MODES = ("deliver", "stall", "error", "close-again")
RESPONSE_MODES = ("sse", "json")

Check: TypeAlias = "Callable[[Any, str], Any]"


def _fail(where: str, wanted: str, value: Any) -> SpecError:
    shown = type(value).__name__ if isinstance(value, dict | list) else ascii(value)[:40]
    return SpecError(f"{where}: must be {wanted}, not {shown}")


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(where, "a string", value)
    return value


def _optional(check: Check) -> Check:
    def run(value: Any, where: str) -> Any:
        return None if value is None else check(value, where)

    return run


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, "true or false", value)
    return value


def _integer(low: int, high: int) -> Check:
    def run(value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _fail(where, f"an integer from {low} to {high}", value)
        return value

    return run


def _one_of(*allowed: str) -> Check:
    def run(value: Any, where: str) -> str:
        if value not in allowed:
            raise _fail(where, " or ".join(repr(a) for a in allowed), value)
        return str(value)

    return run


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list):
        raise _fail(where, "a list of strings", value)
    return [_string(item, f"{where}[{i}]") for i, item in enumerate(value)]


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, "a table/object", value)
    return value


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _fail(where, "a list of tables/objects", value)
    return [_object(item, f"{where}[{i}]") for i, item in enumerate(value)]


def _anything(value: Any, where: str) -> Any:
    return value


def _delays(value: Any, where: str) -> dict[str, float]:
    out = {}
    for method, seconds in _object(value, where).items():
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise _fail(f"{where}.{method}", "a number of seconds", seconds)
        if not 0 <= seconds <= MAX_DELAY:  # also refuses NaN
            raise _fail(f"{where}.{method}", f"from 0 to {MAX_DELAY:g} seconds", seconds)
        out[method] = float(seconds)
    return out


def _fill(value: Any, where: str) -> str:
    # One character that compact JSON writes as itself (no quote, backslash or control), so
    # a padded message's size in bytes can be made exact.
    if (
        not isinstance(value, str)
        or len(value) != 1
        or value in '"\\'
        or ord(value) < 0x20
        or 0xD800 <= ord(value) <= 0xDFFF
    ):
        raise _fail(where, "one character other than a quote, a backslash or a control", value)
    return value


def _header_value(value: Any, where: str) -> str:
    # Latin-1 text without control characters: what an HTTP header line can carry.
    if not isinstance(value, str) or re.search(r"[^\t\x20-\x7e\xa0-\xff]", value):
        raise _fail(where, "header text (no control characters, Latin-1)", value)
    return value


def _barrier_address(value: Any, where: str) -> str:
    host, sep, port = _string(value, where).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise _fail(where, "a barrier address HOST:PORT", value)
    return str(value)


def _rpc_error(value: Any, where: str) -> dict[str, Any]:
    error = _object(value, where)
    code = error.get("code", -32603)
    if isinstance(code, bool) or not isinstance(code, int) or abs(code) > 2**31:
        raise _fail(f"{where}.code", "a 32-bit integer", code)
    _string(error.get("message", ""), f"{where}.message")
    return error


def _tool_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(f"{where}: a tool needs a non-empty string name")
    return value


def _tools(value: Any, where: str) -> list[Tool]:
    if not isinstance(value, list):
        raise SpecError(f"{where}: expected a list of tools")
    return [_build(Tool, t, f"{where}[{i}]") for i, t in enumerate(value)]


def _nested(cls: type) -> Check:
    return lambda value, where: _build(cls, value, where)


CHECKS: dict[type, dict[str, Check]] = {
    Reply: {
        "content": _objects,
        "structured": _optional(_object),
        "is_error": _boolean,
        "jsonrpc_error": _optional(_rpc_error),
        "echo": _boolean,
        "pad_to": _optional(_integer(0, MAX_BYTES_FIELD)),
        "meta": _optional(_object),
    },
    Tool: {
        "name": _tool_name,
        "description": _string,
        "input_schema": _anything,  # raw on purpose: mocks send malformed schemas
        "annotations": _optional(_object),
        "reply": _nested(Reply),
        "marker": _optional(_string),
    },
    Misbehaviour: {
        "stall": _strings,
        "delays": _delays,
        "redirect_status": _optional(_integer(300, 399)),
        "redirect_to": _optional(_string),
        "redirect_at": _string,
        "oversize_at": _optional(_string),
        "oversize_bytes": _integer(0, MAX_BYTES_FIELD),
        "oversize_fill": _fill,
        "drop_call": _optional(_one_of(*DROP_MODES)),
        "reject_status": _optional(_integer(400, 599)),
        "accept_header": _optional(_string),
        "accept_value": _optional(_string),
        "reject_at": _string,
        "reject_challenge": _optional(_header_value),
        "fail_at": _optional(_string),
        "fail_message": _string,
        "change_tools_after_call": _boolean,
        "changed_tools": _tools,
        "stderr_flood": _integer(0, MAX_FLOOD),
        "exit_at_once": _optional(_integer(0, 255)),
        "garbage": _boolean,
        "garbage_at": _optional(_string),
        "call_http_status": _optional(_integer(400, 599)),
        "spawn_child": _boolean,
        "exit_at": _optional(_string),
        "ignore_sigterm": _boolean,
        "daemonize": _boolean,
        "linger": _boolean,
        "poll_call": _optional(_one_of(*POLL_MODES)),
        "poll_tools": _strings,
        "poll_retry_ms": _integer(0, 3_600_000),
        "barrier": _optional(_barrier_address),
    },
    ServerSpec: {
        "name": _string,
        "description": _string,
        "tools": _tools,
        "page_size": _optional(_integer(1, 1_000_000)),
        "response_mode": _one_of(*RESPONSE_MODES),
        "instructions": _optional(_string),
        "misbehaviour": _nested(Misbehaviour),
    },
}


_ATOMS = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """A copy of a JSON-like value sharing no container with it. Nested specs are left to
    `_build`, which checks and copies them. (dataclasses.asdict and copy.deepcopy did this at
    3 ms a spec, which every mock start paid twice.)"""
    if isinstance(value, _ATOMS) or type(value) in CHECKS:
        return value
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return copy.deepcopy(value)


def _build(cls: type, data: Any, where: str) -> Any:
    """A new `cls` from its dict form or from an instance (checked like a dict: a
    Python-built spec can be wrong too), sharing no container with `data`."""
    if isinstance(data, cls) and dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = {f.name: getattr(data, f.name) for f in fields(data)}
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a table/object, got {type(data).__name__}")
    checks = CHECKS[cls]
    unknown = sorted(str(k) for k in set(data) - set(checks))
    if unknown:
        known = ", ".join(f.name for f in fields(cls))
        raise SpecError(f"{where}: unknown key(s) {', '.join(map(ascii, unknown))}; known: {known}")
    checked = {key: checks[key](_copied(value), f"{where}.{key}") for key, value in data.items()}
    try:
        return cls(**checked)
    except TypeError:  # a required key is missing (a tool's name)
        missing = [f.name for f in fields(cls) if f.name not in checked and _required(f)]
        raise SpecError(f"{where}: missing key(s) {', '.join(missing)}") from None


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def spec_from_dict(data: Any, where: str = "spec") -> ServerSpec:
    """A checked ServerSpec from its dict form (or a ServerSpec, checked). Raises SpecError."""
    spec: ServerSpec = _build(ServerSpec, data, where)
    return spec


def load_spec(path: str | os.PathLike[str]) -> ServerSpec:
    """Read a spec from a .json or .toml file. Raises SpecError naming the problem."""
    path = os.fspath(path)
    name = os.path.basename(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec file: {exc.strerror}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: a spec file over {MAX_SPEC_BYTES} bytes")
    try:
        data = _read_toml(raw) if path.endswith(".toml") else read_json(raw)
    except JsonInputError as exc:
        raise SpecError(f"{path}: malformed spec file: {exc}") from None
    return spec_from_dict(data, where=name)


def _read_toml(raw: bytes) -> Any:
    import tomllib

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"not UTF-8 (byte {exc.start})") from None
    for number, line in enumerate(text.splitlines(), 1):
        bare = _TOML_STRINGS.sub("", line)
        if sum(bare.count(c) for c in ".[{") > MAX_TOML_KEY_PARTS:
            raise JsonInputError(f"line {number} nests or dots keys too deeply")
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise JsonInputError("nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        raise JsonInputError(str(exc)) from None
    check_value(data)
    return data


_TOML_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')


def dump_spec(spec: ServerSpec, path: str | os.PathLike[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec.to_dict(), f)
