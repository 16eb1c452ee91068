"""HostEngine: start shows one status line per server, close stops and reaps stdio servers."""

from __future__ import annotations

from pathlib import Path

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.mocks.spec import ServerSpec, Tool
from mcp_host_conformance.mocks.stdio_server import StdioMock, process_state
from mcp_host_conformance.reference_client.config import HttpServerConfig, StdioServerConfig
from mcp_host_conformance.reference_client.engine import HostEngine
from tests.reference_client.engine_support import ScriptedUI, run


def test_start_shows_status_lines_and_close_reaps(tmp_path: Path) -> None:
    ui = ScriptedUI()
    stdio = StdioMock(ServerSpec(tools=[Tool("echo"), Tool("two")]), tmp_path)
    with HttpMock(ServerSpec(tools=[Tool("q")])) as mock, MockResponses() as model:
        host = HostEngine(
            [
                HttpServerConfig("web", mock.url, {"X-Key": "k-secret-1234"}),
                StdioServerConfig(
                    "local", stdio.command[0], stdio.command[1:], {"T": "env-secret-99"}
                ),
                HttpServerConfig("off", "http://127.0.0.1:9/mcp"),
            ],
            model_url=model.url,
            model_key=model.api_key,
            environ={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            cwd=tmp_path,
            ui=ui,
            connect_timeout=10.0,
        )

        async def go():
            try:
                return await host.start()
            finally:
                host.cancel()  # nothing in flight: a no-op
                await host.close()

        statuses = run(go())
        assert model.journal.is_empty()  # nothing asked, nothing sent to the model
    assert [s.connected for s in statuses] == [True, True, False]
    assert ui.shown[:2] == [
        f"MCP server web: 1 tools from {mock.url}",
        f"MCP server local: 2 tools from {' '.join(stdio.command)}",
    ]
    assert ui.shown[2].startswith("MCP server off unavailable: cannot connect")
    assert all(process_state(pid) == "gone" for pid in stdio.pids())
    assert "k-secret-1234" not in ui.text and "env-secret-99" not in ui.text
