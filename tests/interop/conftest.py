"""Fixtures for the interop tests: the pinned third-party server, stdio and HTTP, observed.

Strategy: without `npm ci --prefix tests/interop` (or without node) the tests skip with
the reason, so the main `tests` env stays green on a machine without npm; the `interop`
tox env sets MCP_INTEROP_REQUIRED=1, which turns that skip into a failure, so the env can
never pass by running nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_support import (
    REQUIRED_VARIABLE,
    SERVER_NAME,
    EverythingHttp,
    JournalProxy,
    Target,
    node_command,
    read_tap,
    unavailable_reason,
)

from mcp_host_conformance.harness.contract.adapter import HttpServer, StdioServer
from mcp_host_conformance.mocks.responses import MockResponses


def require_everything() -> None:
    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get(REQUIRED_VARIABLE) == "1":
        pytest.fail(
            f"{REQUIRED_VARIABLE}=1 but the interop tests cannot run: {reason}", pytrace=False
        )
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _everything_installed() -> None:
    require_everything()


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EverythingHttp]:
    require_everything()
    server = EverythingHttp(tmp_path_factory.mktemp("everything-http"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def stdio_target(tmp_path: Path) -> Target:
    """The server as a stdio command, with the shim's tap recording what reaches it."""
    tap = tmp_path / "tap.jsonl"
    command = node_command("stdio")
    server = StdioServer(SERVER_NAME, command[0], command[1:], {"MCP_INTEROP_TAP": str(tap)})
    return Target("stdio", server, lambda: read_tap(tap).received, lambda: read_tap(tap).sent, tap)


@pytest.fixture
def http_target(everything_http: EverythingHttp) -> Iterator[Target]:
    """The HTTP server behind a journalling proxy of this test's own."""
    proxy = JournalProxy(everything_http.host, everything_http.port)
    try:
        yield Target("http", HttpServer(SERVER_NAME, proxy.url), proxy.received, proxy.sent)
    finally:
        proxy.close()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> Target:
    return request.getfixturevalue(f"{request.param}_target")


@pytest.fixture
def model() -> Iterator[MockResponses]:
    with MockResponses() as mock:
        yield mock
