"""Fixtures for the mocks' own tests: start HTTP mocks, talk raw JSON-RPC, drive the SDK.

Strategy: `raw` speaks Streamable HTTP by hand through httpx so tests can see status
codes and headers; `sdk` runs the official `mcp` client (software nobody here wrote)
against a mock, which is the check that the mocks really are MCP servers.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.spec import ServerSpec

ACCEPT = "application/json, text/event-stream"
# httpx loads the system CA bundle for every client it makes (~40 ms); share one context.
PLAIN_SSL = ssl.create_default_context()


def parse_messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages in a response, whether JSON or SSE."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        body = response.json()
        return body if isinstance(body, list) else [body]
    if kind.startswith("text/event-stream"):
        out = []
        for event in response.text.split("\n\n"):
            data = [line[6:] for line in event.split("\n") if line.startswith("data: ")]
            if data:
                out.append(json.loads("\n".join(data)))
        return out
    return []


class Raw:
    """A hand-driven Streamable HTTP client of one mock."""

    def __init__(self, mock: HttpMock, **client_options: Any) -> None:
        self.url = mock.url
        client_options.setdefault("verify", PLAIN_SSL)
        self.client = httpx.Client(timeout=30, **client_options)
        self.session_id: str | None = None
        self._ids = iter(range(1, 10**6))

    def post(
        self, body: Any, *, raw: bytes | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        all_headers = {"accept": ACCEPT, "content-type": "application/json"}
        if self.session_id:
            all_headers["mcp-session-id"] = self.session_id
        all_headers.update(headers or {})
        content = raw if raw is not None else json.dumps(body).encode()
        return self.client.post(self.url, content=content, headers=all_headers)

    def initialize(self, version: str = "2025-06-18") -> dict[str, Any]:
        response = self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return parse_messages(response)[0]

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message)
        messages = parse_messages(response)
        assert len(messages) == 1, (response.status_code, response.text[:300])
        return messages[0]

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def start_mock() -> Iterator[Callable[..., HttpMock]]:
    started: list[HttpMock] = []

    def start(spec: ServerSpec, tls: str | None = None) -> HttpMock:
        mock = HttpMock(spec, tls=tls).start()
        started.append(mock)
        return mock

    yield start
    for mock in started:
        mock.close()


@pytest.fixture
def raw() -> Iterator[Callable[..., Raw]]:
    clients: list[Raw] = []

    def make(mock: HttpMock, **options: Any) -> Raw:
        client = Raw(mock, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


async def _with_sdk(
    url: str, body: Callable[[Any], Awaitable[Any]], verify: Any, timeout: float
) -> Any:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(verify=verify, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=timeout) as session:
                return await body(session)


@pytest.fixture
def sdk() -> Callable[..., Any]:
    """sdk(url, async_fn, verify=True) runs async_fn(ClientSession) against the mock."""

    def run(
        url: str, body: Callable[[Any], Awaitable[Any]], verify: Any = True, timeout: float = 30.0
    ) -> Any:
        return asyncio.run(asyncio.wait_for(_with_sdk(url, body, verify, timeout), timeout * 2))

    return run
