"""Discovery: parallel connects, timeouts, isolation, limits, status lines (DISC-*)."""

from __future__ import annotations

from contextlib import ExitStack

from mcp_host_conformance.mocks.barrier import Barrier
from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool
from mcp_host_conformance.mocks.stdio_server import StdioMock
from mcp_host_conformance.reference_client.config import HttpServerConfig, StdioServerConfig
from mcp_host_conformance.reference_client.discovery import (
    connected_line,
    discover,
    unavailable_line,
)
from mcp_host_conformance.reference_client.redaction import Redactor
from tests.reference_client.engine_support import run

SECRET = "hdr-secret-6f2b91"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}


async def found(servers, timeout=30.0):
    result = await discover(
        servers,
        environ=ENV,
        connect_timeout=timeout,
        redactor=Redactor([SECRET]),
        reserved=("read_file",),
    )
    for server in result.servers.values():
        await server.session.close()
    return result


def test_status_line_texts() -> None:
    assert (
        connected_line("docs", 3, "http://x/mcp").line
        == "MCP server docs: 3 tools from http://x/mcp"
    )
    assert unavailable_line("docs", "d", "why").line == "MCP server docs unavailable: why"


def test_parallel_connect() -> None:
    # Each server holds its answer to initialize until all three were contacted (a barrier):
    # a serial connect never gets its first answer, whatever the machine's speed.
    meeting = Barrier(parties=3).start()
    try:
        with ExitStack() as stack:
            servers = []
            for i in range(3):
                spec = ServerSpec(
                    name=f"s{i}",
                    tools=[Tool("t")],
                    misbehaviour=Misbehaviour(barrier=meeting.address),
                )
                servers.append(HttpServerConfig(f"s{i}", stack.enter_context(HttpMock(spec)).url))
            result = run(found(servers, timeout=30.0))
    finally:
        meeting.close()
    assert meeting.released
    assert [s.connected for s in result.statuses] == [True, True, True], [
        s.line for s in result.statuses
    ]


def test_a_stalled_server_times_out_beside_a_slow_one() -> None:
    slow = ServerSpec(tools=[Tool("t")], misbehaviour=Misbehaviour(delays={"initialize": 0.05}))
    stalled = ServerSpec(tools=[Tool("t")], misbehaviour=Misbehaviour(stall=["initialize"]))
    with HttpMock(slow) as ok, HttpMock(stalled) as hung:
        servers = [HttpServerConfig("s0", ok.url), HttpServerConfig("hung", hung.url)]
        result = run(found(servers, timeout=3.0))
    assert [s.connected for s in result.statuses] == [True, False], [
        s.line for s in result.statuses
    ]
    assert "no answer within 3 s" in result.statuses[1].reason
    assert result.statuses[1].line.startswith("MCP server hung unavailable: ")


def test_failures_do_not_stop_the_healthy_server(tmp_path) -> None:
    good = ServerSpec(tools=[Tool("query"), Tool("other")])
    over = ServerSpec(tools=[Tool(f"t{i}") for i in range(129)], response_mode="json")
    bad_schema = ServerSpec(tools=[Tool("x", input_schema=["not", "object"])])
    with HttpMock(good) as healthy, HttpMock(over) as many, HttpMock(bad_schema) as schema:
        garbage = StdioMock(ServerSpec(misbehaviour=Misbehaviour(garbage=True)), tmp_path)
        servers = [
            HttpServerConfig("docs", healthy.url, {"Authorization": SECRET}),
            HttpServerConfig("many", many.url),
            HttpServerConfig("schema", schema.url),
            HttpServerConfig("remote", "http://example.com/mcp"),
            StdioServerConfig("missing", "/nonexistent/server"),
            StdioServerConfig("garbage", garbage.command[0], garbage.command[1:]),
        ]
        result = run(found(servers))
    lines = {s.name: s for s in result.statuses}
    assert lines["docs"].line == f"MCP server docs: 2 tools from {healthy.url}"
    assert "128" in lines["many"].reason
    assert "inputSchema" in lines["schema"].reason
    assert "HTTPS" in lines["remote"].reason
    assert "not found" in lines["missing"].reason
    assert not lines["garbage"].connected
    assert set(result.servers) == {"docs"}
    assert sorted(result.offered) == ["mcp_docs_other", "mcp_docs_query"]
    assert all(SECRET not in s.line for s in result.statuses)
    definition = result.offered["mcp_docs_query"].definition
    assert definition["description"].startswith("[MCP server docs, tool query]")
    served = healthy.spec.tools[0].definition()["inputSchema"]  # as served: marker included
    assert definition["parameters"] == served and definition["strict"] is False


def test_stdio_server_is_discovered(tmp_path) -> None:
    mock = StdioMock(ServerSpec(tools=[Tool("echo")]), tmp_path)
    result = run(found([StdioServerConfig("local", mock.command[0], mock.command[1:])]))
    assert result.statuses[0].connected and result.statuses[0].tools == 1
    assert list(result.offered) == ["mcp_local_echo"]
