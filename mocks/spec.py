"""What a mock MCP server does, as plain data.

Strategy: one `ServerSpec` describes a mock whatever its transport (HTTP, TLS, stdio),
so a behaviour is written once and served three ways. A spec is built from Python or read
from a JSON / TOML file (`load_spec`); the file form is the dict form of these
dataclasses. Misbehaviour is data too (`Misbehaviour`), so the named mocks of
`mcp_host_conformance.mocks.named` are just specs.

This module must stay light (no SDK import): the stdio mock reads specs at start.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
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
    """

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    jsonrpc_error: dict[str, Any] | None = None
    echo: bool = False
    pad_to: int | None = None

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


def with_markers(spec: ServerSpec, token: str) -> ServerSpec:
    """A copy of `spec` whose tools (and the tools it changes to) carry their markers."""
    import copy

    marked = copy.deepcopy(spec)
    for tool in [*marked.tools, *marked.misbehaviour.changed_tools]:
        tool.marker = tool_marker(token, tool.name)
    return marked


@dataclass
class Misbehaviour:
    """Everything a mock can do wrong on purpose. All off by default.

    - stall: JSON-RPC methods never answered (the request is read and journalled).
    - delays: seconds to wait before answering a method, e.g. {"initialize": 0.5}.
    - redirect_status / redirect_to / redirect_at: answer the request carrying the method
      `redirect_at` ("initialize", "tools/call", or "*" for every POST) with this 3xx status
      and `Location: redirect_to`.
    - oversize_at: a method ("tools/list" or "tools/call") whose answer is one message of
      `oversize_bytes` (default 1 MiB + 64 KiB), in the spec's response mode.
    - drop_call: after reading a whole `tools/call` request: "reset" (TCP RST),
      "close" (clean FIN, no response) or "stall" (never answer).
    - reject_status: 401 (with `WWW-Authenticate: Bearer`) or 403 for every request.
    - accept_header / accept_value: answer 401 unless that request header holds exactly
      that value (the header seen is journalled either way).
    - change_tools_after_call: after the first tools/call, switch to `changed_tools` and
      send `notifications/tools/list_changed`.
    - stderr_flood: stdio only, bytes written to stderr at start and on each call.
    - exit_at_once: stdio only, exit with this code before reading anything.
    - garbage: stdio only, answer every line with non-JSON text.
    - spawn_child: stdio only, at start spawn a child process that stays in the server's
      process group and sleeps until killed (STDIO-5: a client that signals only the
      server's pid leaves it running); its pid is journalled as event "child-spawned".
    """

    stall: list[str] = field(default_factory=list)
    delays: dict[str, float] = field(default_factory=dict)
    redirect_status: int | None = None
    redirect_to: str | None = None
    redirect_at: str = "initialize"
    oversize_at: str | None = None
    oversize_bytes: int = 1024 * 1024 + 64 * 1024
    drop_call: str | None = None
    reject_status: int | None = None
    accept_header: str | None = None
    accept_value: str | None = None
    change_tools_after_call: bool = False
    changed_tools: list[Tool] = field(default_factory=list)
    stderr_flood: int = 0
    exit_at_once: int | None = None
    garbage: bool = False
    spawn_child: bool = False


@dataclass
class ServerSpec:
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


def _build(cls: type, data: Any, where: str) -> Any:
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a table/object, got {type(data).__name__}")
    names = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(names)}")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if cls is ServerSpec and key == "tools":
            value = _tools(value, f"{where}.tools")
        elif cls is ServerSpec and key == "misbehaviour":
            value = _build(Misbehaviour, value, f"{where}.misbehaviour")
        elif cls is Misbehaviour and key == "changed_tools":
            value = _tools(value, f"{where}.changed_tools")
        elif cls is Tool and key == "reply":
            value = _build(Reply, value, f"{where}.reply")
        kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:  # pragma: no cover - keys are checked above
        raise SpecError(f"{where}: {exc}") from None


def _tools(value: Any, where: str) -> list[Tool]:
    if not isinstance(value, list):
        raise SpecError(f"{where}: expected a list of tools")
    tools = [_build(Tool, t, f"{where}[{i}]") for i, t in enumerate(value)]
    for i, t in enumerate(tools):
        if not isinstance(t.name, str) or not t.name:
            raise SpecError(f"{where}[{i}].name: a tool needs a non-empty string name")
    return tools


def spec_from_dict(data: Any, where: str = "spec") -> ServerSpec:
    spec = _build(ServerSpec, data, where)
    if spec.response_mode not in ("sse", "json"):
        raise SpecError(
            f"{where}.response_mode: must be 'sse' or 'json', not {spec.response_mode!r}"
        )
    if spec.page_size is not None and (not isinstance(spec.page_size, int) or spec.page_size < 1):
        raise SpecError(f"{where}.page_size: must be a positive integer")
    drop = spec.misbehaviour.drop_call
    if drop not in (None, "reset", "close", "stall"):
        raise SpecError(
            f"{where}.misbehaviour.drop_call: must be reset, close or stall, not {drop!r}"
        )
    return spec


def load_spec(path: str | os.PathLike[str]) -> ServerSpec:
    """Read a spec from a .json or .toml file. Raises SpecError naming the problem."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec file: {exc.strerror}") from None
    try:
        if path.endswith(".toml"):
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: malformed spec file: {exc}") from None
    return spec_from_dict(data, where=os.path.basename(path))


def dump_spec(spec: ServerSpec, path: str | os.PathLike[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec.to_dict(), f)
