"""Broken clients for DISC: connection and discovery."""

from __future__ import annotations

import asyncio
import json
from contextvars import ContextVar

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    constant,
    pure,
    replaced,
    replaced_after,
    replaced_when,
    same_until,
)

_CONNECT_SERVER = "mcp_host_conformance.reference_client.discovery.connect_server"
_RPC = "mcp_host_conformance.reference_client.rpc"
_DISCOVER = "mcp_host_conformance.reference_client.discovery.discover"


def _connect_timed_out(outcome, server, transport, **options) -> bool:
    """A connect that ended in its timeout (or raised): nothing else can show a changed
    limit on the connect, which a connect finished within it never reaches."""
    kind, answer = outcome
    if kind == "raise":
        return True
    line, connected = answer
    return connected is None and "(connect timeout)" in (line.reason or "")


def _past_pages(outcome, session) -> bool:
    """The reference's list_tools read its last page with a cursor left: only there does a
    higher page limit read on."""
    kind, error = outcome
    return kind == "raise" and "pages of tools/list" in str(error)


def _connect_timed_out_or_slower(outcome, server, transport, *, timeout, **options) -> bool:
    # a limit over the built-in 10 s (OAuth's time to authorize on top) is cut short too
    return timeout > 10.0 or _connect_timed_out(outcome, server, transport, **options)


@replaced("mcp_host_conformance.reference_client.discovery.connected_line")
@pure
def _other_status_line(original):
    def connected_line(name, tools, destination):
        status = original(name, tools, destination)
        status.line = f"Connected to {name} ({tools} tools)"
        return status

    return connected_line


def several_servers(original, servers, **options) -> bool:
    """A `discover` that differs only in what it does with more than one server."""
    return len(servers) > 1


# The one lock the connects of a `discover` of several servers take in turn; unset (the
# reference's way) everywhere else, so a lone connect is the reference's.
_in_series: ContextVar[asyncio.Lock | None] = ContextVar("zoo_in_series", default=None)


def _a_lock_per_discovery(lock: ContextVar[asyncio.Lock | None], differs):
    """The `discover` seam that sets `lock` to a lock of its own for the discoveries
    `differs` picks (the connects' tasks copy this context)."""

    @replaced_when(_DISCOVER, differs)
    def make(original):
        async def discover(servers, **options):
            token = lock.set(asyncio.Lock())
            try:
                return await original(servers, **options)
            finally:
                lock.reset(token)

        return discover

    return make


def _connects_taking(lock: ContextVar[asyncio.Lock | None], differs):
    """The `connect_server` seam whose connects `differs` picks take `lock` in turn."""

    @replaced_when(_CONNECT_SERVER, differs)
    def make(original):
        async def connect_server(server, transport, **options):
            async with lock.get():  # set: `differs` said so
                return await original(server, transport, **options)

        return connect_server

    return make


def _in_a_series(original, server, transport, **options) -> bool:
    """Set only by `_series_of_servers` (never in the reference run): a guard may read what
    its own client's replacements set, since the reference run never sets it."""
    return _in_series.get() is not None


_series_of_servers = _a_lock_per_discovery(_in_series, several_servers)
_one_at_a_time = _connects_taking(_in_series, _in_a_series)


@same_until(_CONNECT_SERVER, _connect_timed_out_or_slower)
@replaced(_CONNECT_SERVER)
def _default_connect_timeout(original):
    async def connect_server(server, transport, *, timeout, redactor):
        del timeout  # the configured value is ignored: always the built-in default
        return await original(server, transport, timeout=10.0, redactor=redactor)

    return connect_server


def _connected_after_a_failure(found) -> set[str]:
    """The servers registered after the first one that failed, in configuration order."""
    failed = [i for i, status in enumerate(found.statuses) if not status.connected]
    if not failed:
        return set()
    return {status.name for status in found.statuses[failed[0] + 1 :]} & set(found.servers)


def _a_later_server_connected(outcome, servers, **options) -> bool:
    kind, found = outcome
    return kind == "return" and bool(_connected_after_a_failure(found))


@replaced_after(_DISCOVER, _a_later_server_connected)
def _stop_at_first_failure(original):
    from mcp_host_conformance.reference_client import builtins, discovery

    async def discover(outcome, servers, **options):
        _, found = outcome
        for name in _connected_after_a_failure(found):
            await found.servers.pop(name).session.close()
        found.offered = discovery.offer(
            found.servers.values(), options.get("reserved", builtins.NAMES)
        )
        return found

    return discover


@replaced("mcp_host_conformance.reference_client.turn.Conversation.ask")
def _relist_each_turn(original):
    from mcp_host_conformance.reference_client import builtins, discovery
    from mcp_host_conformance.reference_client.transports import McpError

    async def ask(self, question):
        for server in self.discovery.servers.values():
            try:
                server.tools = await server.session.list_tools()
            except McpError:
                pass
        self.discovery.offered = discovery.offer(self.discovery.servers.values(), builtins.NAMES)
        self.tools = self.redactor.redact_obj(
            [*builtins.DEFINITIONS, *(t.definition for t in self.discovery.offered.values())]
        )
        return await original(self, question)

    return ask


@replaced("mcp_host_conformance.reference_client.limits.check_tools")
@pure
def _first_128(original):
    def check_tools(tools):
        if isinstance(tools, list) and len(tools) > 128:
            del tools[128:]
        return original(tools)

    return check_tools


_limit_reason: ContextVar[list[str] | None] = ContextVar("zoo_limit_reason", default=None)


@replaced("mcp_host_conformance.reference_client.limits.check_tools")
@pure
def _remember_reason(original):
    def check_tools(tools):
        reason = original(tools)
        box = _limit_reason.get()
        if reason is not None and box is not None:
            box.append(reason)
            return None
        return reason

    return check_tools


def _limit_broken(outcome, tools) -> bool:
    """`check_tools` found a broken limit: the only way `_unavailable_but_registered` acts."""
    return outcome != ("return", None)


@same_until("mcp_host_conformance.reference_client.limits.check_tools", _limit_broken)
@replaced(_CONNECT_SERVER)
def _unavailable_but_registered(original):
    from mcp_host_conformance.reference_client import discovery

    async def connect_server(server, transport, *, timeout, redactor):
        box: list[str] = []
        token = _limit_reason.set(box)
        try:
            line, connected = await original(server, transport, timeout=timeout, redactor=redactor)
        finally:
            _limit_reason.reset(token)
        if box and connected is not None:
            # Tools without an object schema cannot be offered at all; the rest are.
            connected.tools = [t for t in connected.tools if isinstance(t.get("inputSchema"), dict)]
            line = discovery.unavailable_line(
                server.name, connected.destination, redactor.redact(box[0])
            )
        return line, connected

    return connect_server


@replaced("mcp_host_conformance.reference_client.turn.Conversation.ask")
def _reconnect_each_question(original):
    async def ask(self, question):
        # "Make sure the session is fresh": initialize again before every question.
        for server in self.discovery.servers.values():
            try:
                await server.session.initialize()
            except Exception:  # noqa: BLE001 - a failed refresh keeps the old session
                pass
        return await original(self, question)

    return ask


def over_stdio(original, server, transport, **options) -> bool:
    """A `connect_server` that changes only what it does for a stdio server."""
    from mcp_host_conformance.reference_client.config import StdioServerConfig
    from mcp_host_conformance.reference_client.transports.stdio import StdioTransport

    return isinstance(transport, StdioTransport) or isinstance(server, StdioServerConfig)


def several_stdio_servers(original, servers, **options) -> bool:
    """A `discover` of more than one stdio server: only there can their starts queue."""
    from mcp_host_conformance.reference_client.config import StdioServerConfig

    return sum(isinstance(server, StdioServerConfig) for server in servers) > 1


# The lock the stdio connects of such a `discover` take in turn (unset everywhere else).
_stdio_in_series: ContextVar[asyncio.Lock | None] = ContextVar("zoo_stdio_series", default=None)


def _stdio_in_a_series(original, server, transport, **options) -> bool:
    """A stdio connect of a `discover` `_series_of_stdio_servers` took (its own state)."""
    from mcp_host_conformance.reference_client.transports.stdio import StdioTransport

    return _stdio_in_series.get() is not None and isinstance(transport, StdioTransport)


# local processes are started one after the other
_series_of_stdio_servers = _a_lock_per_discovery(_stdio_in_series, several_stdio_servers)
_stdio_one_at_a_time = _connects_taking(_stdio_in_series, _stdio_in_a_series)


@same_until(_CONNECT_SERVER, _connect_timed_out)
@replaced(_CONNECT_SERVER)
def _timeout_per_request(original):
    async def connect_server(server, transport, *, timeout, redactor):
        request = transport.request

        async def bounded_request(message):
            return await asyncio.wait_for(request(message), timeout)

        transport.request = bounded_request  # each discovery request gets the whole limit
        try:
            return await original(server, transport, timeout=1000 * timeout, redactor=redactor)
        finally:
            del transport.request  # the calls later are the reference's

    return connect_server


def _a_server_failed(outcome, servers, **options):
    kind, found = outcome
    return kind == "return" and any("(HTTP 5" in (s.reason or "") for s in found.statuses)


@replaced_after("mcp_host_conformance.reference_client.discovery.discover", _a_server_failed)
def _drop_all_on_server_error(original):
    from mcp_host_conformance.reference_client import builtins, discovery

    async def discover(outcome, servers, **options):
        # The HTTP library's status error escaped the per-server guard: discovery as a
        # whole failed, and chat went on without any MCP server.
        _, found = outcome
        for name in list(found.servers):
            await found.servers.pop(name).session.close()
        found.statuses = [
            discovery.unavailable_line(s.name, s.destination, "discovery failed")
            for s in found.statuses
        ]
        found.offered = discovery.offer([], options.get("reserved", builtins.NAMES))
        return found

    return discover


@replaced("mcp_host_conformance.reference_client.rpc.check_tools_page")
@pure
def _tools_limit_per_page(original):
    from mcp_host_conformance.reference_client.transports import ProtocolError

    def check_tools_page(result):
        tools, cursor = original(result)
        if len(tools) > 128:
            raise ProtocolError(f"a tools/list page holds {len(tools)} tools; the limit is 128")
        return tools, cursor

    return check_tools_page


def _over_one_budget(measure, limit: int):
    """The registered servers together are past `limit`: below it, one budget for all of
    them changes nothing (one server alone past it is unavailable already)."""

    def differs(outcome, servers, **options) -> bool:
        kind, found = outcome
        if kind == "raise":
            return False  # raised again, as by the reference
        return sum(measure(server.tools) for server in found.servers.values()) > limit

    return differs


def _one_budget_for_all_servers(measure, limit: int, what: str):
    """`discover`, with one budget of `limit` (tools, bytes) for all servers together: a
    server that takes the total past it is reported unavailable."""

    @replaced_after(_DISCOVER, _over_one_budget(measure, limit))
    def make(original):
        return discover

    async def discover(outcome, servers, **options):
        from mcp_host_conformance.reference_client import builtins, discovery

        _, found = outcome
        total = 0
        for i, status in enumerate(found.statuses):
            server = found.servers.get(status.name) if status.connected else None
            if server is None:
                continue
            total += measure(server.tools)
            if total > limit:
                await found.servers.pop(status.name).session.close()
                found.statuses[i] = discovery.unavailable_line(
                    status.name, status.destination, f"over the limit of {what}"
                )
        found.offered = discovery.offer(
            found.servers.values(), options.get("reserved", builtins.NAMES)
        )
        return found

    return make


_tools_limit_across_servers = _one_budget_for_all_servers(len, 128, "128 tools")


def _definitions_bytes(tools) -> int:
    from mcp_host_conformance.reference_client import limits

    keys = ("name", "description", "inputSchema")
    return sum(limits.json_size({k: t[k] for k in keys if k in t}) for t in tools)


_definitions_limit_across_servers = _one_budget_for_all_servers(
    _definitions_bytes, 64 * 1024, "64 KiB"
)


def _compact(value, ensure_ascii):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=False)


@replaced("mcp_host_conformance.reference_client.limits.json_size")
@pure
def _size_in_characters(original):
    del original
    return lambda value: len(_compact(value, ensure_ascii=False))  # characters, not bytes


@replaced("mcp_host_conformance.reference_client.limits.json_size")
@pure
def _size_escaped(original):
    del original
    return lambda value: len(_compact(value, ensure_ascii=True).encode())  # json.dumps' default


@replaced("mcp_host_conformance.reference_client.limits.json_size")
@pure
def _size_without_names(original):
    def json_size(value):
        if isinstance(value, dict) and "name" in value and "inputSchema" in value:
            value = {k: v for k, v in value.items() if k != "name"}  # only the "content"
        return original(value)

    return json_size


@replaced("mcp_host_conformance.reference_client.limits.check_tools")
@pure
def _null_schema_is_empty(original):
    def check_tools(tools):
        for tool in tools if isinstance(tools, list) else []:
            if isinstance(tool, dict) and "inputSchema" in tool and tool["inputSchema"] is None:
                tool["inputSchema"] = {"type": "object"}  # `schema or {"type": "object"}`
        return original(tools)

    return check_tools


@same_until("mcp_host_conformance.reference_client.limits.check_tools", _limit_broken)
@replaced(_CONNECT_SERVER)
def _no_limits_for_stdio(original):
    from mcp_host_conformance.reference_client.transports.stdio import StdioTransport

    async def connect_server(server, transport, **options):
        token = _skip_limits.set(isinstance(transport, StdioTransport))
        try:
            return await original(server, transport, **options)
        finally:
            _skip_limits.reset(token)

    return connect_server


_skip_limits: ContextVar[bool] = ContextVar("zoo_skip_limits", default=False)


@replaced("mcp_host_conformance.reference_client.limits.check_tools")
@pure
def _limits_unless_skipped(original):
    def check_tools(tools):
        return None if _skip_limits.get() else original(tools)

    return check_tools


CLIENTS = [
    BrokenClient(
        "nonstandard-status-line",
        "Reports a connected server as `Connected to NAME (N tools)`.",
        {"DISC-1"},
        (_other_status_line,),
    ),
    BrokenClient(
        "connects-in-series",
        "Connects to the configured servers one after the other.",
        {"DISC-2", "DISC-3"},  # DISC-3: the three servers' timeouts add up
        (_series_of_servers, _one_at_a_time),
        target="DISC-2",
    ),
    BrokenClient(
        "ignores-connect-timeout",
        "Ignores the configured connect timeout and always waits its built-in 10 s.",
        {"DISC-3"},
        (_default_connect_timeout,),
    ),
    BrokenClient(
        "stops-at-first-failure",
        "Registers no tools of the servers configured after the first unavailable one.",
        {"DISC-4", "DISC-10"},  # DISC-10: the healthy server after the over-limit ones is dropped
        (_stop_at_first_failure,),
        target="DISC-4",
    ),
    BrokenClient(
        "relists-tools-each-turn",
        "Lists every server's tools again before each question and offers what it finds.",
        {"DISC-1", "DISC-5"},  # DISC-1: tools are listed once per start, not per question
        (_relist_each_turn,),
        target="DISC-5",
    ),
    BrokenClient(
        "reads-17-pages",
        "Follows tools/list cursors for up to 17 pages.",
        {"DISC-6", "DISC-10"},  # DISC-10: the 17-page server's tools reach the model
        (
            same_until(f"{_RPC}.RpcSession.list_tools", _past_pages)(
                constant(f"{_RPC}.MAX_PAGES", 17)
            ),
        ),
        target="DISC-6",
    ),
    BrokenClient(
        "registers-first-128-tools",
        "Registers the first 128 tools of a server that lists more.",
        {"DISC-7", "DISC-10"},  # DISC-10: 128 of the 129 tools reach the model
        (_first_128,),
        target="DISC-7",
    ),
    BrokenClient(
        "accepts-large-schemas",
        "Accepts input schemas up to 32 KiB.",
        {"DISC-8", "DISC-10"},  # DISC-10: the 17 KiB schema reaches the model
        (constant("mcp_host_conformance.reference_client.limits.MAX_SCHEMA_BYTES", 32 * 1024),),
        target="DISC-8",
    ),
    BrokenClient(
        "no-definitions-limit",
        "Does not limit the total size of a server's tool definitions.",
        {"DISC-9", "DISC-10"},  # DISC-10: the 65 KiB of definitions reach the model
        (constant("mcp_host_conformance.reference_client.limits.MAX_DEFINITIONS_BYTES", 1 << 40),),
        target="DISC-9",
    ),
    BrokenClient(
        "offers-unavailable-tools",
        "Reports a server over a discovery limit unavailable, but still offers its tools.",
        {"DISC-10"},
        (_remember_reason, _unavailable_but_registered),
    ),
    BrokenClient(
        "reconnects-each-question",
        "Sends initialize to every server again before each question.",
        {"DISC-1"},
        (_reconnect_each_question,),
    ),
    BrokenClient(
        "connects-stdio-in-series",
        "Connects HTTP servers in parallel but starts stdio servers one after the other.",
        {"DISC-2"},
        (_series_of_stdio_servers, _stdio_one_at_a_time),
    ),
    BrokenClient(
        "timeout-per-request",
        "Applies the connect timeout to each discovery request, not to the whole connection.",
        {"DISC-3"},
        (_timeout_per_request,),
    ),
    BrokenClient(
        "drops-all-servers-on-5xx",
        "A server answering an HTTP 5xx at connect makes the whole discovery fail.",
        {"DISC-4"},
        (_drop_all_on_server_error,),
    ),
    BrokenClient(
        "counts-tools-per-page",
        "Limits each tools/list page to 128 tools, not the server's whole list.",
        {"DISC-7"},
        (
            constant("mcp_host_conformance.reference_client.limits.MAX_TOOLS", 1 << 30),
            _tools_limit_per_page,
        ),
    ),
    BrokenClient(
        "limits-tools-across-servers",
        "Counts the 128-tool limit over all servers together.",
        {"DISC-7"},
        (_tools_limit_across_servers,),
    ),
    BrokenClient(
        "limits-definitions-across-servers",
        "Counts the 64 KiB definitions limit over all servers together.",
        {"DISC-9"},
        (_definitions_limit_across_servers,),
    ),
    BrokenClient(
        "measures-json-in-characters",
        "Measures schema and definition sizes in characters, not UTF-8 bytes.",
        {"DISC-8", "DISC-9"},
        (_size_in_characters,),
        target="DISC-8",
    ),
    BrokenClient(
        "measures-escaped-json",
        "Measures sizes on ASCII-escaped JSON (json.dumps' default: 6 bytes a non-ASCII char).",
        {"DISC-8", "DISC-9"},
        (_size_escaped,),
        target="DISC-8",
    ),
    BrokenClient(
        "defaults-null-schema",
        "Treats an inputSchema of null as an empty object schema.",
        {"DISC-8"},
        (_null_schema_is_empty,),
    ),
    BrokenClient(
        "definitions-without-names",
        "Leaves tool names out of the 64 KiB definitions total.",
        {"DISC-9"},
        (_size_without_names,),
    ),
    BrokenClient(
        "no-limits-for-stdio",
        "Checks the discovery limits for HTTP servers only, never for stdio servers.",
        {"DISC-10"},
        (_no_limits_for_stdio, _limits_unless_skipped),
    ),
]
