"""A scenario's server plans as the mocks' specs: each catalogue value as the mock settings
that make it (`spec_of`), and the secret and headers or environment a server is configured
with."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_host_conformance.harness.cases.hostrun import Timeouts
from mcp_host_conformance.harness.explorer.scenario import ServerPlan, ToolPlan
from mcp_host_conformance.mocks.named import definitions_size
from mcp_host_conformance.mocks.spec import (
    DEFAULT_SCHEMA,
    Misbehaviour,
    Reply,
    ServerSpec,
    Tool,
)

__all__ = ["FAILS_AT_CALL", "FAILS_AT_CONNECT", "ServerSetup", "input_schema", "spec_of", "tool_of"]

KIB = 1024
# what a shell would change, and a program started without one receives as written
SHELL_CHARACTERS = ("a;b", "$HOME", "two words", "$(echo x)", "*", "x|y", "")
# how long a "slow" call takes, times the run's timeout scale: well under the call timeout
# the host is given (1 s, scaled), so a slow answer is never a silent one
SLOW_CALL = 0.2
# an answer under NET-4's limit (1 MiB, 1,048,576 bytes) by 8.5 KiB, over a megabyte by 40 KB:
# a host that reads the limit as 1,000,000 bytes refuses it
UNDER_MIB = 1_040_000
# the total size of a server's definitions (DISC-9's measure) each `definitions` value makes
DEFINITIONS = {"63-kib": 63 * KIB, "65-kib": 65 * KIB}
EXIT_SAYS = 1 * KIB  # what a stdio server that exits at once writes to stderr before it exits
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


@dataclass
class ServerSetup:
    """What the world needs to configure one planned server."""

    spec: ServerSpec
    secret: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # stdio: after the mock's own command
    tls: str | None = None  # HTTP: "trusted" or "untrusted"


# text of more than one byte a character (two, three and four in UTF-8), as servers in any
# language send it: a host that decodes it with another charset changes what it passes on
NON_ASCII = "Größe, naïve café — 東京 ✓ 🙂"
# The certificate a failure serves (mocks/tls.py): untrusted, or the trusted CA's leaf for
# another host, or its expired one; each only NET-2's case served before.
BAD_CERTIFICATES = {
    "untrusted-certificate": "untrusted",
    "certificate-for-another-host": "wrong-host",
    "expired-certificate": "expired",
}
# The failures whose discovery answers come after the connect timeout a start is given
# (harness Timeouts.connect), each delay a share of it: at once late, or each answer in time
# and together late (a host that times each request, not the connection, takes its tools).
LATE = {
    "initialize-late": {"initialize": 1.5},
    "discovery-late": {"initialize": 0.6, "tools/list": 0.6},
}
# The failures whose server never answers an initialize as any other does: they wait at no
# scenario's barrier (a party the host never reaches, or one that fails anyway, would hold
# the others for nothing); every other failure is at a call, a list or a stream.
FAILS_AT_CONNECT = frozenset(
    {
        "initialize-error",
        "initialize-stalls",
        *LATE,
        "http-500-at-connect",
        "rejects-401",
        "redirects",
        "exits-at-once",
        *BAD_CERTIFICATES,
    }
)
LINKED_PAGE = "reports/q3.txt"
LINKED_FILE = "file:///srv/report.txt"
# a table a server returns as a blob of a text type (a file read whole): data, not text for
# the model, whatever its type says (RES-2)
BLOB_TABLE = base64.b64encode("region,total\nGröße-Nord,4217\n".encode()).decode()


def token_variable(server: str) -> str:
    """The variable a stdio server's secret is configured in, named after the server as
    real ones are (`GITHUB_TOKEN`, `SLACK_BOT_TOKEN`): under one name for every server, a host
    that hands each server every server's variables would hand each its own value last."""
    return re.sub(r"[^A-Z0-9]+", "_", server.upper()).strip("_")[:40] + "_API_TOKEN"


def _sized(text: str, size: int) -> str:
    return (text + " " + "lorem ipsum " * (size // 12 + 1))[:size]


def input_schema(kind: str) -> Any:
    """The inputSchema of a tool of the catalogue's `schema` value `kind`."""
    if kind == "closed-with-a-default":
        # as pydantic writes a model that forbids extra fields (zod's strict objects
        # likewise): its members only, one of them optional with a default
        return {
            "type": "object",
            "title": "Search",
            "properties": {
                "q": {"type": "string", "title": "Q"},
                "limit": {"type": "integer", "title": "Limit", "default": 10},
            },
            "required": ["q"],
            "additionalProperties": False,
        }
    if kind == "nested-with-ref":
        return {
            "type": "object",
            "$defs": {"Key": {"type": "object", "properties": {"id": {"type": "string"}}}},
            "properties": {"key": {"$ref": "#/$defs/Key"}, "limit": {"type": "integer"}},
            "required": ["key"],
        }
    if kind in ("15-kib", "17-kib"):
        size = (15 if kind == "15-kib" else 17) * KIB
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"q": {"type": "string", "description": ""}},
        }
        # the compact UTF-8 JSON encoding is what DISC-8 measures
        pad = size - len(json.dumps(schema, separators=(",", ":")).encode())
        schema["properties"]["q"]["description"] = "d" * pad
        return schema
    if kind == "not-an-object":
        return ["not", "an", "object"]
    return dict(DEFAULT_SCHEMA)


_ANNOTATIONS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "read-only": {"readOnlyHint": True},
    "not-destructive": {"destructiveHint": False},
    "idempotent": {"idempotentHint": True},
    "all-hints": {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    },
}


def _reply(kind: str, secret: str | None, progress: bool, links: str | None = None) -> Reply:
    if kind == "echo":
        reply = Reply.echo_arguments()
    elif kind == "structured":
        reply = Reply(content=[{"type": "text", "text": '{"count": 2}'}], structured={"count": 2})
    elif kind == "structured-only":
        reply = Reply.structured_only({"count": 2, "items": ["a", "b"]})
    elif kind == "image":
        reply = Reply.image(PIXEL)
    elif kind == "resource-link":
        # a page of the run's link target (a mock no host is told of), where an opened link
        # shows in its journal; without one, a file no host has
        reply = Reply.resource_link(f"{links}/{LINKED_PAGE}" if links else LINKED_FILE, "report")
    elif kind == "tool-error":
        reply = Reply.tool_error("the lookup failed: no such record")
    elif kind == "json-rpc-error":
        reply = Reply.rpc_error("internal failure of the tool")
    elif kind == "over-64-kib":
        reply = Reply.text("START-OF-LARGE-OUTPUT")
        reply.pad_to = 80 * KIB
    elif kind == "control-characters":
        reply = Reply.text("done \x1b[2J\x1b]0;title\x07 then \u202eesrever\u202c and \x9b1m")
    elif kind == "non-ascii-text":
        reply = Reply.text(f"result: {NON_ASCII}")
    elif kind == "resource-blob":
        reply = Reply.resource_blob("file:///srv/totals.csv", BLOB_TABLE, "text/csv")
    elif kind == "echoes-its-secret" and secret is not None:
        reply = Reply.text(f"configured with token {secret}")
    else:
        reply = Reply.text("result: 42")
    if progress:
        reply.progress, reply.progress_interval = 3, 0.05
    return reply


def tool_of(
    plan: ToolPlan, secret: str | None = None, progress: bool = False, links: str | None = None
) -> Tool:
    description = {
        "short": "Looks something up.",
        "8-kib": _sized("Looks something up.", 8 * KIB),
        "empty": "",
        "non-ascii": f"Looks something up: {NON_ASCII}.",
    }[plan.description]
    return Tool(
        plan.name,
        description,
        input_schema=input_schema(plan.schema),
        annotations=_ANNOTATIONS[plan.annotations],
        reply=_reply(plan.reply, secret, progress, links),
    )


def _grown(planned: list[Tool], filler: list[Tool], size: int | None) -> list[Tool]:
    """`filler` with its descriptions grown (ASCII, evenly) so that all the definitions
    total `size` bytes; as they are when the planned tools alone reach it, or no size."""
    if size is None or not filler:
        return filler
    missing = size - definitions_size(planned + filler)
    if missing <= 0:
        return filler
    each, rest = divmod(missing, len(filler))
    return [
        dataclasses.replace(t, description=_sized(t.description, len(t.description) + each + add))
        for t, add in zip(filler, [rest] + [0] * (len(filler) - 1), strict=True)
    ]


# Each failure of the catalogue as the mock's misbehaviour fields it sets (the two that need
# more than fields, a stall and a redirect to the run's sink, are in `_misbehaviour`)
_FAILURES: dict[str, dict[str, object]] = {
    "http-500-at-call": {"call_http_status": 500},
    "http-404-at-call": {"call_http_status": 404},
    "http-500-at-connect": {"reject_status": 500},
    "session-lost-at-call": {"call_session_lost": True},
    "reset-after-call": {"drop_call": "reset"},
    "close-after-call": {"drop_call": "close"},
    "garbage-at-call": {"garbage_at": "tools/call"},
    "over-1-mib-at-call": {"oversize_at": "tools/call"},
    "over-1-mib-at-list": {"oversize_at": "tools/list"},
    "under-1-mib-at-call": {"oversize_at": "tools/call", "oversize_bytes": UNDER_MIB},
    "under-1-mib-at-list": {"oversize_at": "tools/list", "oversize_bytes": UNDER_MIB},
    "polled-call": {"poll_call": "deliver"},
    "refused-resume": {"poll_call": "refuse-resume"},
    "stdio-exits-at-call": {"exit_at": "tools/call"},
    "initialize-error": {"fail_at": "initialize"},
    "rejects-401": {"reject_status": 401},
    "stderr-flood": {"stderr_flood": 256 * KIB},
    # a server that fails at start says why on stderr first (an error, a traceback), as real
    # ones do: what a host then shows of it is STDIO-4's to judge
    "exits-at-once": {"stderr_flood": EXIT_SAYS, "exit_at_once": 1},
}

# The failures that show only at a call that reaches the server: each acts on tools/call
_CALL_ONLY = {"call_http_status", "call_session_lost", "drop_call", "poll_call"}
FAILS_AT_CALL = frozenset(
    failure
    for failure, attributes in _FAILURES.items()
    if any(a in _CALL_ONLY or v == "tools/call" for a, v in attributes.items())
)


# How a stdio server ends: most exit at the end of their input; some keep running until a
# signal; some leave a child in their group; some (a wrapper and the server it started) only
# SIGKILL ends; some fork away from the process the host started (STDIO-5: what the host's
# stop must still end)
_ENDINGS: dict[str, dict[str, object]] = {
    "at-end-of-input": {},
    "lingers": {"linger": True},
    "ignores-sigterm": {"linger": True, "ignore_sigterm": True, "spawn_child": True},
    "spawns-a-child": {"spawn_child": True},
    "daemonizes": {"linger": True, "daemonize": True},
}


def _misbehaviour(
    plan: ServerPlan, scale: float, tools: list[Tool], sink: str | None
) -> Misbehaviour:
    bad = Misbehaviour()
    failure = plan.failure
    if failure in _FAILURES:
        for attribute, value in _FAILURES[failure].items():
            setattr(bad, attribute, value)
    elif failure == "initialize-stalls":
        bad.stall.append("initialize")
    elif failure in LATE:
        connect = Timeouts.scaled(scale).connect
        bad.delays.update({method: share * connect for method, share in LATE[failure].items()})
    elif failure == "redirects" and sink is not None:
        bad.redirect_status, bad.redirect_to, bad.redirect_at = 307, sink, "*"
    if plan.transport == "stdio":
        for attribute, value in _ENDINGS[plan.ending].items():
            setattr(bad, attribute, value)
    if plan.timing == "slow":
        bad.delays["tools/call"] = SLOW_CALL * scale
    elif plan.timing == "silent":
        bad.stall.append("tools/call")
    if plan.tools_change in _CHANGES:
        bad.change_tools_after_call = True
        bad.changed_tools = [_CHANGES[plan.tools_change](t) for t in tools]
    elif plan.tools_change == "a-tool-disappears":
        bad.change_tools_after_call = True
        bad.changed_tools = tools[1:]
    elif _appearing(plan) is not None:
        bad.change_tools_after_call = True  # served without it at first: see `spec_of`
        bad.changed_tools = list(tools)
    return bad


def _appearing(plan: ServerPlan) -> int | None:
    """For `a-tool-appears`, the index of the tool listed only after the first call: the last
    planned one (a server of one tool has none to add)."""
    if plan.tools_change == "a-tool-appears" and len(plan.tools) > 1:
        return len(plan.tools) - 1
    return None


def _described_anew(tool: Tool) -> Tool:
    return dataclasses.replace(tool, description=tool.description + " (changed)")


def _schema_widened(tool: Tool) -> Tool:
    """One more argument (`export_to`), the rest of the schema as it was."""
    schema = tool.input_schema
    if isinstance(schema, dict) and isinstance(schema.get("properties", {}), dict):
        properties = {**schema.get("properties", {}), "export_to": {"type": "string"}}
        return dataclasses.replace(tool, input_schema={**schema, "properties": properties})
    widened = {"type": "object", "properties": {"export_to": {"type": "string"}}}
    return dataclasses.replace(tool, input_schema=widened)


def _hint_turned(tool: Tool) -> Tool:
    """`readOnlyHint` turned around (a read-only tool that now writes, or the reverse)."""
    hints = dict(tool.annotations or {})
    hints["readOnlyHint"] = not hints.get("readOnlyHint", False)
    return dataclasses.replace(tool, annotations=hints)


def _reversed(value: Any) -> Any:
    """`value` with every object's members in reverse order: other JSON text, the same
    canonical JSON."""
    if isinstance(value, dict):
        return {k: _reversed(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


def _schema_reordered(tool: Tool) -> Tool:
    """The same schema, its members listed in another order (as a server that rebuilds its
    schemas from a map lists them): no change of the definition."""
    return dataclasses.replace(tool, input_schema=_reversed(tool.input_schema))


# how each `tools-change` value changes every tool of its server after the first call
_CHANGES: dict[str, Callable[[Tool], Tool]] = {
    "after-the-first-call": _described_anew,
    "its-schema-after-the-first-call": _schema_widened,
    "its-annotations-after-the-first-call": _hint_turned,
    "its-schema-reordered-after-the-first-call": _schema_reordered,
}


def spec_of(
    plan: ServerPlan,
    secret: str | None,
    others: list[str],
    scale: float = 1.0,
    sink: str | None = None,
    links: str | None = None,
    barrier: str | None = None,
) -> ServerSetup:
    """The mock spec for `plan`, with its `secret` (None: no credential). `others`: the
    other servers' configured names (a server may call itself by one of them); `sink`: the
    URL a redirecting server sends its clients to; `links`: the URL its resource links point
    under; `barrier`: the address of the barrier its answer to initialize waits at."""
    progress = plan.timing == "slow-with-progress"
    tools = [tool_of(t, secret, progress, links) for t in plan.tools]
    filler = [
        Tool(f"t{n:03d}", "A tool among many.", reply=Reply.text("ok"))
        for n in range(1, plan.filler + 1)
    ]
    tools += _grown(tools, filler, DEFINITIONS.get(plan.definitions))
    bad = _misbehaviour(plan, scale, tools, sink)
    bad.barrier = barrier
    appearing = _appearing(plan)
    if appearing is not None:
        tools = [t for n, t in enumerate(tools) if n != appearing]
    headers: dict[str, str] = {}
    env: dict[str, str] = {}
    if secret is not None and plan.credential == "header":
        headers["Authorization"] = f"Bearer {secret}"
        if bad.reject_status is None:
            bad.accept_header, bad.accept_value = "Authorization", f"Bearer {secret}"
    elif secret is not None and plan.credential == "env":
        env[token_variable(plan.name)] = secret
    server_info = None
    if plan.calls_itself == "another-name":
        server_info = {"name": "a-server-by-another-name", "version": "1.0"}
    elif plan.calls_itself == "another-server's-name" and others:
        server_info = {"name": others[0], "version": "1.0"}
    mode, framing = {
        "sse": ("sse", "default"),
        "json": ("json", "default"),
        "json-chunked": ("json", "chunked"),
        "sse-whole": ("sse", "length"),
    }[plan.http_answers]
    spec = ServerSpec(
        name=plan.name,
        description=f"the {plan.name} server",
        tools=tools,
        page_size=plan.page_size,
        response_mode=mode if plan.transport != "stdio" else "sse",
        misbehaviour=bad,
        server_info=server_info,
        framing=framing if plan.transport != "stdio" else "default",
    )
    args = list(SHELL_CHARACTERS) if plan.arguments == "shell-characters" else []
    tls = None
    if plan.failure in BAD_CERTIFICATES:  # served over TLS whatever the transport says
        tls = BAD_CERTIFICATES[plan.failure]
    elif plan.transport == "https":
        tls = "trusted"
    return ServerSetup(spec, secret, headers, env, args, tls)
