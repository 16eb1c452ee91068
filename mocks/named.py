"""The named mocks (`CATALOG`): what each is, how to build its spec, how to start it.

(Named `named`, not `catalog`, so it is never confused with `harness.catalog`, the
requirements catalog.)

Strategy: a named mock is a `ServerSpec` plus a transport (`kind`), so `CATALOG` is a
table of small builder functions. The builders of the limit breakers are public
(`pages_spec`, `many_tools_spec`, `schema_of_size`, `schema_spec`, `definitions_spec`)
so conformance cases can make their own sizes with the same measuring rule: a size is the
UTF-8 length of the compact JSON encoding, and a server's definitions total is the sum,
over its tools, of the size of `{"name", "description", "inputSchema"}` (the fields the
tool has). `start(entry, workdir)` gives a `RunningMock` with what a person or a host
needs: a URL or a command, and where the journal is.

The stdio mock and the Responses service live in their own modules and are imported only
when started, so `python -m mcp_host_conformance.mocks list` stays fast.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_host_conformance.mocks.journal import Journal
from mcp_host_conformance.mocks.spec import (
    MARKER_LENGTH,
    MARKER_PREFIX,
    MISSING,
    Misbehaviour,
    Reply,
    ServerSpec,
    Tool,
    marked_schema,
)

KIB = 1024
MIB = 1024 * KIB

__all__ = [
    "CATALOG",
    "CatalogEntry",
    "RunningMock",
    "definitions_size",
    "definitions_spec",
    "json_size",
    "many_tools_spec",
    "pages_spec",
    "schema_of_size",
    "schema_spec",
    "start",
]


# ---- measuring ------------------------------------------------------------------------------


def json_size(value: Any) -> int:
    """UTF-8 length of the compact JSON encoding of `value` (the suite's size rule)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


# Every running mock marks its tools (mocks.spec.with_markers); sizes are measured as served.
_SOME_MARKER = MARKER_PREFIX + "0" * (MARKER_LENGTH - len(MARKER_PREFIX))


def _as_served(tool: Tool) -> Tool:
    return tool if tool.marker is not None else dataclasses.replace(tool, marker=_SOME_MARKER)


def definitions_size(tools: list[Tool]) -> int:
    """A server's tool definitions total (DISC-9): name, description and schema, as sent."""
    total = 0
    for tool in tools:
        full = _as_served(tool).definition()
        total += json_size(
            {k: full[k] for k in ("name", "description", "inputSchema") if k in full}
        )
    return total


# ---- builders of the limit breakers and their twins ----------------------------------------


def _good_tool() -> Tool:
    return Tool(
        "fine", "A perfectly ordinary tool beside the bad one.", reply=Reply.echo_arguments()
    )


def pages_spec(n_pages: int, page_size: int = 2) -> ServerSpec:
    """A server whose `tools/list` needs exactly `n_pages` pages."""
    tools = [
        Tool(f"paged_{i:03d}", f"Tool {i} of a paginated list.") for i in range(n_pages * page_size)
    ]
    return ServerSpec(
        name=f"pages-{n_pages}",
        description=f"tools/list in {n_pages} pages of {page_size}",
        tools=tools,
        page_size=page_size,
    )


def many_tools_spec(n: int, page_size: int | None = None) -> ServerSpec:
    """A server with `n` small tools, in one page or in pages of `page_size`."""
    tools = [Tool(f"tool_{i:03d}", f"Tool number {i}.") for i in range(n)]
    return ServerSpec(name=f"tools-{n}", description=f"{n} tools", tools=tools, page_size=page_size)


def _filler(n_bytes: int, fill: str) -> str:
    """Text of exactly `n_bytes` UTF-8 bytes: as many `fill` characters as fit, then "s"s
    (a multi-byte `fill` makes bytes and characters differ: "€" is 3 bytes, 1 character)."""
    width = len(fill.encode("utf-8"))
    return fill * (n_bytes // width) + "s" * (n_bytes % width)


def schema_of_size(n_bytes: int, fill: str = "s") -> dict[str, Any]:
    """An object schema whose compact JSON, as served (a running mock adds its marker to the
    schema's description), is exactly `n_bytes` UTF-8 bytes long (n_bytes >= 100); its bulk
    is `fill` characters (a multi-byte one makes its length in characters much smaller)."""
    schema: dict[str, Any] = {"type": "object", "properties": {}, "title": ""}
    missing = n_bytes - json_size(marked_schema(schema, _SOME_MARKER))
    if missing < 0:
        raise ValueError(f"a schema cannot be as small as {n_bytes} bytes")
    schema["title"] = _filler(missing, fill)
    return schema


def schema_spec(n_bytes: int, fill: str = "s") -> ServerSpec:
    """One tool whose inputSchema is `n_bytes` long (bulk of `fill`), beside an ordinary tool."""
    return ServerSpec(
        name=f"schema-{n_bytes}",
        description=f"an inputSchema of {n_bytes} bytes",
        tools=[
            Tool(
                "sized",
                f"Its schema is {n_bytes} bytes.",
                input_schema=schema_of_size(n_bytes, fill),
            ),
            _good_tool(),
        ],
    )


def bad_schema_spec(schema: Any, label: str) -> ServerSpec:
    return ServerSpec(
        name=f"schema-{label}",
        description=f"a tool whose inputSchema is {label}",
        tools=[Tool("broken", f"Its inputSchema is {label}.", input_schema=schema), _good_tool()],
    )


def definitions_spec(total_bytes: int, per_tool: int = 8 * KIB, fill: str = "d") -> ServerSpec:
    """Medium tools (each schema well under 16 KiB) whose definitions total `total_bytes`
    UTF-8 bytes, their bulk in descriptions made of `fill` characters."""
    count = max(1, -(-total_bytes // per_tool))
    tools = [
        Tool(f"medium_{i:02d}", "", input_schema={"type": "object", "properties": {}})
        for i in range(count)
    ]
    for tool in tools:  # description "" is omitted from the definition, so start from "d"
        tool.description = "d"
    missing = total_bytes - definitions_size(tools)
    if missing < 0:
        raise ValueError(f"{count} tools cannot total as little as {total_bytes} bytes")
    for i, tool in enumerate(tools):
        share = missing // count + (1 if i < missing % count else 0)
        tool.description += _filler(share, fill)
    assert definitions_size(tools) == total_bytes
    return ServerSpec(
        name=f"defs-{total_bytes}",
        description=f"definitions totalling {total_bytes} bytes",
        tools=tools,
    )


# ---- the well-behaved ones ---------------------------------------------------------------------

CANARY_B64 = base64.b64encode(b"MOCK-BINARY-CANARY-0451").decode()


def healthy_spec(mode: str = "sse") -> ServerSpec:
    return ServerSpec(
        name="healthy" if mode == "sse" else "healthy-json",
        description="A well-behaved server.",
        response_mode=mode,
        tools=[
            Tool(
                "echo",
                "Echoes its arguments back as JSON.",
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
            ),
            Tool("hello", "Says hello.", reply=Reply.text("hello from the mock")),
            Tool(
                "lookup",
                "Reads nothing; marked read-only.",
                annotations={"readOnlyHint": True},
                reply=Reply.text("looked up"),
            ),
        ],
    )


def rich_results_spec() -> ServerSpec:
    tools = [
        Tool("text", "Two text blocks.", reply=Reply.text("first", "second")),
        Tool("image", "An image.", reply=Reply.image(CANARY_B64)),
        Tool("audio", "Audio.", reply=Reply.audio(CANARY_B64)),
        Tool(
            "resource_link",
            "A link to a resource.",
            reply=Reply.resource_link("file:///mock/linked.txt", "linked"),
        ),
        Tool(
            "resource_text",
            "An embedded text resource.",
            reply=Reply.resource_text("file:///mock/r.txt", "resource text"),
        ),
        Tool(
            "resource_blob",
            "An embedded binary resource.",
            reply=Reply.resource_blob("file:///mock/r.bin", CANARY_B64),
        ),
        Tool(
            "structured",
            "Only structuredContent.",
            reply=Reply.structured_only({"answer": 42, "unit": "none"}),
        ),
        Tool(
            "tool_error",
            "A result with isError.",
            reply=Reply.tool_error("the tool failed on purpose"),
        ),
        Tool(
            "rpc_error",
            "A JSON-RPC error.",
            reply=Reply.rpc_error("the server failed on purpose", code=-32000),
        ),
        Tool("echo", "Echoes its arguments.", reply=Reply.echo_arguments()),
        Tool(
            "large",
            "A result over 64 KiB.",
            reply=Reply(
                content=[{"type": "text", "text": "START-OF-LARGE-OUTPUT "}], pad_to=96 * KIB
            ),
        ),
    ]
    return ServerSpec(name="rich-results", description="One tool per kind of result.", tools=tools)


def _misbehaving(name: str, description: str, mode: str = "sse", **mis: Any) -> ServerSpec:
    spec = healthy_spec(mode)
    spec.name = name
    spec.description = description
    spec.misbehaviour = Misbehaviour(**mis)
    return spec


def changing_tools_spec() -> ServerSpec:
    changed = [
        Tool("renamed", "Appeared after the first call."),
        Tool("echo", "Echoes, with a new description."),
    ]
    return _misbehaving(
        "changing-tools", "changes its tools", change_tools_after_call=True, changed_tools=changed
    )


# ---- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    summary: str  # one line, for `python -m mcp_host_conformance.mocks list`
    kind: str  # "http" | "tls" | "stdio" | "responses"
    build: Callable[[], ServerSpec | None]
    tls: str | None = None  # for kind "tls": "trusted" | "untrusted"
    redirect_target: bool = False  # start a healthy target mock and redirect to it
    sdk: bool = False  # served by the mcp SDK's own Streamable HTTP app (well-behaved only)


def _entries() -> list[CatalogEntry]:
    out = [
        CatalogEntry("healthy", "well-behaved HTTP server, SSE responses", "http", healthy_spec),
        CatalogEntry(
            "healthy-json",
            "well-behaved HTTP server, JSON responses",
            "http",
            lambda: healthy_spec("json"),
        ),
        CatalogEntry(
            "tls",
            "well-behaved HTTPS server; trust its ca_file",
            "tls",
            healthy_spec,
            tls="trusted",
        ),
        CatalogEntry(
            "tls-untrusted",
            "HTTPS server whose certificate comes from a CA nobody trusts",
            "tls",
            healthy_spec,
            tls="untrusted",
        ),
        CatalogEntry(
            "sdk-http",
            "well-behaved HTTP server run by the mcp SDK's low-level Server (slower to start)",
            "http",
            lambda: pages_spec(3),
            sdk=True,
        ),
        CatalogEntry(
            "rich-results",
            "one tool per result kind (text, image, audio, resources, errors, >64 KiB)",
            "http",
            rich_results_spec,
        ),
        CatalogEntry(
            "changing-tools",
            "switches its tools and sends tools/list_changed after the first call",
            "http",
            changing_tools_spec,
        ),
        CatalogEntry(
            "pages-16", "tools/list needs 16 pages (at the limit)", "http", lambda: pages_spec(16)
        ),
        CatalogEntry(
            "pages-17", "tools/list needs 17 pages (over the limit)", "http", lambda: pages_spec(17)
        ),
        CatalogEntry("tools-128", "128 tools (at the limit)", "http", lambda: many_tools_spec(128)),
        CatalogEntry(
            "tools-129", "129 tools (over the limit)", "http", lambda: many_tools_spec(129)
        ),
        CatalogEntry(
            "schema-array",
            "a tool whose inputSchema is an array",
            "http",
            lambda: bad_schema_spec(["object"], "array"),
        ),
        CatalogEntry(
            "schema-string",
            "a tool whose inputSchema is a string",
            "http",
            lambda: bad_schema_spec("object", "string"),
        ),
        CatalogEntry(
            "schema-missing",
            "a tool with no inputSchema",
            "http",
            lambda: bad_schema_spec(MISSING, "missing"),
        ),
        CatalogEntry(
            "schema-15k",
            "an inputSchema of 15 KiB (under the 16 KiB limit)",
            "http",
            lambda: schema_spec(15 * KIB),
        ),
        CatalogEntry(
            "schema-17k",
            "an inputSchema of 17 KiB (over the 16 KiB limit)",
            "http",
            lambda: schema_spec(17 * KIB),
        ),
        CatalogEntry(
            "defs-under-64k",
            "tool definitions totalling 63 KiB (under 64 KiB)",
            "http",
            lambda: definitions_spec(63 * KIB),
        ),
        CatalogEntry(
            "defs-over-64k",
            "tool definitions totalling 65 KiB (over 64 KiB)",
            "http",
            lambda: definitions_spec(65 * KIB),
        ),
    ]
    for status in (301, 302, 307, 308):
        for at, label in (("initialize", "init"), ("tools/call", "call")):
            name = f"redirect-{status}-{label}"

            def redirecting(name: str = name, status: int = status, at: str = at) -> ServerSpec:
                return _misbehaving(name, f"redirects {at}", redirect_status=status, redirect_at=at)

            out.append(
                CatalogEntry(
                    name,
                    f"answers {at} with {status} to another mock (its own journal)",
                    "http",
                    redirecting,
                    redirect_target=True,
                )
            )
    for mode in ("json", "sse"):
        for at, label in (("tools/list", "list"), ("tools/call", "call")):
            name = f"oversize-{label}-{mode}"

            def oversized(name: str = name, mode: str = mode, at: str = at) -> ServerSpec:
                return _misbehaving(name, f"oversized {at}", mode, oversize_at=at)

            out.append(
                CatalogEntry(
                    name,
                    f"answers {at} with one message over 1 MiB ({mode.upper()})",
                    "http",
                    oversized,
                )
            )
    for how, what in (
        ("reset", "resets the TCP connection"),
        ("close", "closes the connection cleanly"),
        ("stall", "never answers"),
    ):

        def flaky(how: str = how) -> ServerSpec:
            return _misbehaving(f"flaky-{how}", f"drops calls ({how})", drop_call=how)

        out.append(
            CatalogEntry(f"flaky-{how}", f"reads a tools/call whole, then {what}", "http", flaky)
        )
    for variant, what in (
        ("deliver", "delivers the result on the GET that resumes with Last-Event-ID"),
        ("stall", "never delivers: the resuming GET is held open, empty"),
        ("error", "delivers a JSON-RPC error on the resuming GET"),
        ("close-again", "closes the resumed stream once more; delivers on the GET after"),
    ):
        name = "sse-poll" if variant == "deliver" else f"sse-poll-{variant}"

        def polling(name: str = name, variant: str = variant) -> ServerSpec:
            return _misbehaving(name, f"SSE polling ({variant})", poll_call=variant)

        out.append(
            CatalogEntry(name, f"primes and closes each tools/call stream; {what}", "http", polling)
        )
    out += [
        CatalogEntry(
            "stall-initialize",
            "never answers initialize",
            "http",
            lambda: _misbehaving("stall-initialize", "stalls", stall=["initialize"]),
        ),
        CatalogEntry(
            "reject-401",
            "answers 401 with WWW-Authenticate: Bearer",
            "http",
            lambda: _misbehaving("reject-401", "rejects", reject_status=401),
        ),
        CatalogEntry(
            "reject-403",
            "answers 403 Forbidden",
            "http",
            lambda: _misbehaving("reject-403", "rejects", reject_status=403),
        ),
        CatalogEntry(
            "token-check",
            "accepts only 'Authorization: Bearer mock-token' (401 otherwise), journals what it saw",
            "http",
            lambda: _misbehaving(
                "token-check",
                "checks a token",
                accept_header="authorization",
                accept_value="Bearer mock-token",
            ),
        ),
        CatalogEntry("stdio", "well-behaved stdio server", "stdio", lambda: _stdio("stdio")),
        CatalogEntry(
            "stdio-flood",
            "stdio server that writes megabytes to stderr",
            "stdio",
            lambda: _stdio("stdio-flood", stderr_flood=4 * MIB),
        ),
        CatalogEntry(
            "stdio-exit",
            "stdio server that exits at once",
            "stdio",
            lambda: _stdio("stdio-exit", exit_at_once=3),
        ),
        CatalogEntry(
            "stdio-garbage",
            "stdio server that prints garbage instead of JSON-RPC",
            "stdio",
            lambda: _stdio("stdio-garbage", garbage=True),
        ),
        CatalogEntry(
            "stdio-oversize",
            "stdio server answering tools/list with one line over 1 MiB",
            "stdio",
            lambda: _stdio("stdio-oversize", oversize_at="tools/list"),
        ),
        CatalogEntry(
            "responses",
            "mock OpenAI Responses service (autopilot without a script)",
            "responses",
            lambda: None,
        ),
    ]
    return out


def _stdio(name: str, **mis: Any) -> ServerSpec:
    spec = _misbehaving(name, "a stdio mock", **mis)
    return spec


CATALOG: dict[str, CatalogEntry] = {entry.name: entry for entry in _entries()}


# ---- running one ---------------------------------------------------------------------------------


@dataclass
class RunningMock:
    """A started catalog mock: where to reach it and where its journal is."""

    name: str
    kind: str
    journal: Journal
    journal_ref: str  # a URL (HTTP mocks, responses) or a file path (stdio)
    url: str | None = None
    command: list[str] | None = None
    ca_file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    target: Any = None  # the redirect target mock, if any
    server: Any = None  # the HttpMock / StdioMock / MockResponses itself
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        """The JSON line of `python -m mcp_host_conformance.mocks serve --json`."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.url:
            out["url"] = self.url
        if self.command:
            out["command"] = self.command
        out["journal"] = self.journal_ref
        if self.ca_file:
            out["ca_file"] = self.ca_file
        out.update(self.extra)
        return out

    def close(self) -> None:
        while self._closers:
            try:
                self._closers.pop()()
            except Exception:  # pragma: no cover - closing must go on
                pass

    def __enter__(self) -> RunningMock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _journal_url(url: str) -> str:
    return url.rsplit("/", 1)[0] + "/__journal"


def start_spec(spec: ServerSpec, name: str | None = None, tls: str | None = None) -> RunningMock:
    """Serve any spec as an HTTP mock."""
    from mcp_host_conformance.mocks.http_server import HttpMock

    mock = HttpMock(spec, tls=tls).start()
    assert mock.url is not None
    return RunningMock(
        name=name or spec.name,
        kind="tls" if tls else "http",
        journal=mock.journal,
        journal_ref=_journal_url(mock.url),
        url=mock.url,
        ca_file=mock.ca_file,
        server=mock,
        _closers=[mock.close],
    )


def start(entry: CatalogEntry | str, workdir: str | os.PathLike[str] | None = None) -> RunningMock:
    """Start a named mock. `workdir` holds stdio spec and journal files (required for stdio)."""
    if isinstance(entry, str):
        if entry not in CATALOG:
            raise KeyError(
                f"unknown mock {entry!r}; "
                "`python -m mcp_host_conformance.mocks list` shows the names"
            )
        entry = CATALOG[entry]
    if entry.kind == "responses":
        from mcp_host_conformance.mocks.responses import MockResponses

        model = MockResponses().start()
        return RunningMock(
            name=entry.name,
            kind="responses",
            journal=model.journal,
            journal_ref=model.journal_url,
            url=model.url,
            extra={"api_key": model.api_key},
            server=model,
            _closers=[model.close],
        )
    spec = entry.build()
    assert spec is not None
    if entry.kind == "stdio":
        if workdir is None:
            raise ValueError("a stdio mock needs a workdir for its spec and journal files")
        from mcp_host_conformance.mocks.stdio_server import StdioMock

        stdio = StdioMock(spec, workdir)
        return RunningMock(
            name=entry.name,
            kind="stdio",
            journal=stdio.journal,
            journal_ref=stdio.journal_path,
            command=list(stdio.command),
            server=stdio,
        )
    if entry.sdk:
        from mcp_host_conformance.mocks.sdk_http_server import SdkHttpMock

        sdk_mock = SdkHttpMock(spec).start()
        assert sdk_mock.url is not None
        return RunningMock(
            name=entry.name,
            kind="http",
            journal=sdk_mock.journal,
            journal_ref=_journal_url(sdk_mock.url),
            url=sdk_mock.url,
            server=sdk_mock,
            _closers=[sdk_mock.close],
        )
    closers: list[Callable[[], None]] = []
    target = None
    if entry.redirect_target:
        target = start_spec(healthy_spec(), name=f"{entry.name}-target")
        closers.append(target.close)
        spec.misbehaviour.redirect_to = target.url
    try:
        running = start_spec(spec, name=entry.name, tls=entry.tls)
    except BaseException:
        for close in closers:
            close()
        raise
    running.kind = entry.kind
    running._closers[:0] = closers
    if target is not None:
        running.target = target
        running.extra.update({"redirect_to": target.url, "target_journal": target.journal_ref})
    return running
