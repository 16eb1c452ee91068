"""Connect to every configured server at start and list its tools, once.

Strategy: one task per server, all at once (DISC-2), each bounded by the connect timeout
covering initialize and the whole tools/list walk (DISC-3). Every way a server can fail
(refused URL, missing command, timeout, hostile answer, a broken limit) ends as that
server's `unavailable` status line and a closed transport; nothing a server does can stop
the others (DISC-4). The limits are checked on the complete list, and a server that breaks
any of them registers none of its tools (DISC-10). The result is fixed: nobody lists again
or listens for `list_changed` (DISC-5). A reason can quote what a server sent, so a status
line is built from parts passed through `display.terminal_safe` on one line (HARD-1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_host_conformance.reference_client import config, limits, naming, offering
from mcp_host_conformance.reference_client.display import terminal_safe
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.rpc import RpcSession
from mcp_host_conformance.reference_client.transports import McpError, Transport
from mcp_host_conformance.reference_client.transports.http import HttpTransport
from mcp_host_conformance.reference_client.transports.stdio import StdioTransport


@dataclass
class StatusLine:
    name: str
    connected: bool
    tools: int | None
    destination: str
    reason: str | None
    line: str


def _one_line(text: str) -> str:
    return terminal_safe(text, one_line=True)


def connected_line(name: str, tools: int, destination: str) -> StatusLine:
    line = f"MCP server {_one_line(name)}: {tools} tools from {_one_line(destination)}"
    return StatusLine(name, True, tools, destination, None, line)


def unavailable_line(name: str, destination: str, reason: str) -> StatusLine:
    reason = _one_line(reason)
    return StatusLine(
        name,
        False,
        None,
        destination,
        reason,
        f"MCP server {_one_line(name)} unavailable: {reason}",
    )


@dataclass
class ConnectedServer:
    name: str
    destination: str
    session: RpcSession
    tools: list[dict[str, Any]]


@dataclass
class OfferedTool:
    exposed: str  # the function name the model sees
    server: str  # configured server name
    tool: dict[str, Any]  # the server's tools/list entry, as received
    definition: dict[str, Any]  # the Responses function tool


@dataclass
class Discovery:
    statuses: list[StatusLine] = field(default_factory=list)
    servers: dict[str, ConnectedServer] = field(default_factory=dict)
    offered: dict[str, OfferedTool] = field(default_factory=dict)  # by exposed name


def make_transport(
    server: Any,
    *,
    environ: Mapping[str, str],
    ca_file: Path | None = None,
    cwd: Path | None = None,
    refuse_private: Collection[str] | None = None,
    oauth: Any = None,
) -> Transport:
    if isinstance(server, config.StdioServerConfig):
        return StdioTransport(
            server.command,
            server.args,
            server.env,
            host_environ=environ,
            cwd=str(cwd) if cwd is not None else None,
        )
    flow = None
    if oauth is not None and getattr(server, "oauth", False):  # profile oauth
        from mcp_host_conformance.reference_client.oauth_flow import OAuthFlow

        flow = OAuthFlow(server.name, server.url, server.oauth_client, oauth)
    return HttpTransport(
        server.url, server.headers, ca_file=ca_file, refuse_private=refuse_private, oauth=flow
    )


async def _connect_and_list(session: RpcSession) -> list[dict[str, Any]]:
    await session.transport.connect()
    await session.initialize()
    return await session.list_tools()


async def connect_server(
    server: Any, transport: Transport, *, timeout: float, redactor: Redactor
) -> tuple[StatusLine, ConnectedServer | None]:
    """One server's status line, and its connection when it is usable."""
    destination = config.destination(server)
    session = RpcSession(transport)
    reason: str | None
    try:
        tools = await asyncio.wait_for(_connect_and_list(session), timeout)
        reason = limits.check_tools(tools)
    except TimeoutError:
        reason = f"no answer within {timeout:g} s (connect timeout)"
    except McpError as exc:
        reason = str(exc)
    except Exception as exc:  # a hostile server must never crash the host (DISC-4)
        reason = f"unexpected error while connecting ({type(exc).__name__})"
    if reason is not None:
        await _close_quietly(session)
        return unavailable_line(server.name, destination, redactor.redact(reason)), None
    return connected_line(server.name, len(tools), destination), ConnectedServer(
        server.name, destination, session, tools
    )


async def _close_quietly(session: RpcSession) -> None:
    try:
        await session.close()
    except Exception:  # closing a broken connection may fail; the process is reaped anyway
        pass


def offer(servers: Iterable[ConnectedServer], reserved: Sequence[str]) -> dict[str, OfferedTool]:
    """The function tools for every registered tool, named by `naming.exposed_names` (pure)."""
    servers = list(servers)
    pairs = [(s.name, t["name"]) for s in servers for t in s.tools]
    names = naming.exposed_names(pairs, reserved=reserved)
    offered: dict[str, OfferedTool] = {}
    for s in servers:
        for tool in s.tools:
            exposed = names[(s.name, tool["name"])]
            offered[exposed] = OfferedTool(
                exposed, s.name, tool, offering.function_tool(s.name, tool, exposed)
            )
    return offered


async def discover(
    servers: Sequence[Any],
    *,
    environ: Mapping[str, str],
    connect_timeout: float,
    redactor: Redactor,
    ca_file: Path | None = None,
    cwd: Path | None = None,
    reserved: Sequence[str] = (),
    refuse_private: Collection[str] | None = None,
    oauth: Any = None,
) -> Discovery:
    """Connect all servers in parallel; status lines come back in configuration order.
    `refuse_private`: the allowed addresses when private addresses are refused (PRIV-1);
    `oauth`: an `oauth_flow.OAuthContext` when OAuth is switched on (a server configured
    with OAuth then gets the time a person needs to authorize on top of its timeout)."""

    async def one(server: Any) -> tuple[StatusLine, ConnectedServer | None]:
        try:
            transport = make_transport(
                server,
                environ=environ,
                ca_file=ca_file,
                cwd=cwd,
                refuse_private=refuse_private,
                oauth=oauth,
            )
        except McpError as exc:  # e.g. an unreadable CA file
            return unavailable_line(
                server.name, config.destination(server), redactor.redact(str(exc))
            ), None
        timeout = connect_timeout
        if oauth is not None and getattr(server, "oauth", False):
            timeout += oauth.authorization_timeout
        return await connect_server(server, transport, timeout=timeout, redactor=redactor)

    results = await asyncio.gather(*(one(s) for s in servers))
    found = Discovery(statuses=[line for line, _ in results])
    found.servers = {c.name: c for _, c in results if c is not None}
    found.offered = offer(found.servers.values(), reserved)
    return found
