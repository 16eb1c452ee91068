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
import math
import os
import re
from dataclasses import asdict, dataclass, field, fields

from mcp_host_conformance.mocks.json_input import JsonInputError, check_value, read_json

TYPE_CHECKING = False  # no `typing` at run time: the stdio mock imports this (stdio_server)
if TYPE_CHECKING:
    from typing import Any


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
    - progress: `notifications/progress` sent while the call works, before the result, each
      after `progress_interval` seconds, when the call carries a `progressToken` (as real
      servers do; over SSE and stdio; a JSON response only waits as long).
    """

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    jsonrpc_error: dict[str, Any] | None = None
    echo: bool = False
    pad_to: int | None = None
    meta: dict[str, Any] | None = None
    progress: int = 0
    progress_interval: float = 0.0

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
    # the other fields of a tool definition in the current MCP schema, sent as they are
    title: str | None = None
    output_schema: Any = None  # `outputSchema`; None omits it
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None  # the definition's `_meta`
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
        if self.title is not None:
            d["title"] = self.title
        if self.output_schema is not None:
            d["outputSchema"] = self.output_schema
        if self.icons is not None:
            d["icons"] = self.icons
        if self.meta is not None:
            d["_meta"] = self.meta
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
    - call_session_lost: HTTP only, answer the first `tools/call` POST as a server that lost
      the session (restarted behind the client, or a balancer sending it to another
      instance) answers: HTTP 404 with a JSON-RPC error `Session not found` (id null), after
      the request was read and journalled, and forget the session, so the client must
      initialize again; later calls are answered normally. A library that then initializes
      and sends the call again has sent it twice (RETRY-1). stdio answers normally.
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
      "refuse-resume": the GET is refused (405, as a server that supports no resumption
      answers), so the call's outcome stays unknown.
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
    call_session_lost: bool = False
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
    # The `serverInfo` it answers `initialize` with (a server names itself, however it is
    # configured); None: {"name": name, "version": ...}.
    server_info: dict[str, Any] | None = None
    # HTTP: how a response body is framed: "default" (JSON by Content-Length, SSE chunked),
    # "chunked" (JSON too) or "length" (an SSE stream sent whole with a Content-Length).
    framing: str = "default"

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- a server that syncs well -----------------------------------------------------------

_LIMITS = {"tools": 128, "schema": 16 * 1024, "definitions": 64 * 1024}


def healthy(spec: ServerSpec) -> ServerSpec:
    """The server `spec` describes, answering as a healthy one: no misbehaviour, one page,
    and its tools up to the first that would break a discovery limit. What a host that syncs
    at add (the verified-add profile) meets while a case adds a server that only starts to
    misbehave after it was saved."""
    kept: list[Tool] = []
    total = 0
    for tool in spec.tools:
        definition = tool.definition()
        schema = definition.get("inputSchema")
        size = len(json.dumps(definition, separators=(",", ":"), ensure_ascii=False).encode())
        schema_size = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode())
        if (
            not isinstance(schema, dict)
            or schema_size > _LIMITS["schema"]
            or total + size > _LIMITS["definitions"]
            or len(kept) >= _LIMITS["tools"]
        ):
            break
        kept.append(tool)
        total += size
    return dataclasses.replace(spec, tools=kept, page_size=None, misbehaviour=Misbehaviour())


# ---- reading specs from dicts and files -------------------------------------------------
#
# A spec file is hostile input like any other (a person's typo, or a file made to break
# the mock): it is checked against `spec.schema.json` (JSON Schema 2020-12; the same document
# tells an editor what a spec file may hold), so a mock never meets a value it cannot serve,
# and every problem is one SpecError naming the field. The check is fastjsonschema's, which
# compiles the schema to Python once a process: jsonschema took 53 ms for a spec of 128 tools
# (every mock a case starts is checked), this 3 ms. The stdio mock's own process skips the
# check (`load_spec(..., checked=True)`): it reads the file `StdioMock` wrote from a spec
# checked here, and compiling the schema would cost each of its starts more than the rest
# of its start together.

MAX_SPEC_BYTES = 16 * 1024 * 1024
MAX_TOML_KEY_PARTS = 256  # dotted keys and brackets on one line (tomllib is quadratic in them)
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spec.schema.json")

# Which fields hold nested specs: built into their dataclasses once checked.
_NESTED: dict[type, dict[str, type]] = {}
_NESTED_LISTS: dict[type, dict[str, type]] = {}

_validate: Any = None
_invalid: type[Exception] = ValueError  # the compiled checker's own exception class


def prepare_checks() -> None:
    """Compile the schema now (a process that forks workers does it once for all of them)."""
    global _validate, _invalid
    if _validate is None:
        import fastjsonschema

        with open(SCHEMA_FILE, encoding="utf-8") as f:
            _validate = fastjsonschema.compile(json.load(f))
        # kept with the code that raises it: the module imported again later (a test that
        # forgets modules) would make a class of the same name that this code never raises
        _invalid = fastjsonschema.JsonSchemaValueException


def _check(data: Any, where: str) -> None:
    prepare_checks()
    try:
        _validate(data)
    except _invalid as error:
        raise SpecError(_said(error, data, where)) from None
    # JSON has no NaN or infinity (a file cannot hold one), so the schema has no word for
    # them, but a Python-built spec can: a delay of NaN passes every bound.
    delays = data.get("misbehaviour", {}).get("delays", {})
    for method, seconds in delays.items():
        if isinstance(seconds, float) and not math.isfinite(seconds):
            raise SpecError(
                f"{where}.misbehaviour.delays.{method}: must be a number, not {seconds}"
            )


_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "a table/object",
    "array": "a list",
    "null": "nothing (null)",
}


def _shown(value: Any) -> str:
    return type(value).__name__ if isinstance(value, dict | list) else ascii(value)[:40]


def _path(data: Any, steps: list[str], where: str) -> str:
    """`where.tools[0].name` from the checker's path (`["data", "tools", "0", "name"]`)."""
    shown, here = where, data
    for step in steps[1:]:
        if isinstance(here, list):
            shown, here = f"{shown}[{step}]", here[int(step)]
        else:
            shown, here = f"{shown}.{step}", here.get(step) if isinstance(here, dict) else None
    return shown


def _said(error: Any, data: Any, where: str) -> str:
    """One line naming the field and what it must be (the checker's own message may quote a
    value of megabytes)."""
    path = _path(data, list(error.path), where)
    rule, definition, value = error.rule, error.definition or {}, error.value
    if rule == "additionalProperties":
        known = sorted(definition.get("properties", {}))
        unknown = sorted(str(k) for k in value if k not in known)
        return f"{path}: unknown key(s) {', '.join(map(ascii, unknown))}; known: {', '.join(known)}"
    if rule == "required":
        missing = [k for k in error.rule_definition if k not in value]
        return f"{path}: missing key(s) {', '.join(missing)}"
    if rule == "type":
        types = error.rule_definition
        wanted = " or ".join(_TYPE_WORDS[t] for t in ([types] if isinstance(types, str) else types))
    elif rule in ("minimum", "maximum"):
        low, high = definition.get("minimum"), definition.get("maximum")
        number = "" if isinstance(value, float) else "an integer "
        wanted = f"{number}from {low} to {high}"
    elif rule == "enum":
        wanted = " or ".join(repr(a) for a in error.rule_definition if a is not None)
    else:  # pattern, minLength: the schema says what the value must be
        wanted = definition.get("description", f"valid ({rule})")
    return f"{path}: must be {wanted}, not {_shown(value)}"


_ATOMS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """The dict form of a spec or any part of it, sharing no container with `value` (a
    Python-built spec is checked like a file's). (dataclasses.asdict and copy.deepcopy did
    this at 3 ms a spec, which every mock start paid twice.)"""
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return copy.deepcopy(value)


def _build(cls: type, data: dict[str, Any]) -> Any:
    """`cls` from its checked, plain dict form."""
    made = dict(data)
    for key, nested in _NESTED.get(cls, {}).items():
        if key in made:
            made[key] = _build(nested, made[key])
    for key, nested in _NESTED_LISTS.get(cls, {}).items():
        if key in made:
            made[key] = [_build(nested, item) for item in made[key]]
    return cls(**made)


def _tools(value: Any, where: str) -> list[Tool]:
    plain = _plain(list(value)) if isinstance(value, list) else value
    _check({"tools": plain}, where.rpartition(".")[0] or "spec")
    return [_build(Tool, item) for item in plain]


def spec_from_dict(data: Any, where: str = "spec", checked: bool = False) -> ServerSpec:
    """A checked ServerSpec from its dict form (or a ServerSpec, checked), sharing nothing
    with `data`. Raises SpecError. `checked=True` builds without the check: only for a spec
    this module checked already (the stdio mock's own file)."""
    plain = _plain(data)
    if not isinstance(plain, dict):
        raise SpecError(f"{where}: expected a table/object, got {type(data).__name__}")
    if not checked:
        _check(plain, where)
    try:
        spec: ServerSpec = _build(ServerSpec, plain)
    except (TypeError, AttributeError) as exc:  # only where the check was skipped
        raise SpecError(f"{where}: not a checked spec ({type(exc).__name__})") from None
    return spec


def load_spec(path: str | os.PathLike[str], checked: bool = False) -> ServerSpec:
    """Read a spec from a .json or .toml file. Raises SpecError naming the problem.
    `checked`: see `spec_from_dict`."""
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
    return spec_from_dict(data, where=name, checked=checked)


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


_NESTED.update({ServerSpec: {"misbehaviour": Misbehaviour}, Tool: {"reply": Reply}})
_NESTED_LISTS.update({ServerSpec: {"tools": Tool}, Misbehaviour: {"changed_tools": Tool}})

_TOML_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')


def dump_spec(spec: ServerSpec, path: str | os.PathLike[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec.to_dict(), f)
