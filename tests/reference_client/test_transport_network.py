"""The host's network backend (transports/network.py): what httpcore's pool relies on."""

from __future__ import annotations

import asyncio
import socket

import httpcore
import httpx
import pytest

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.spec import ServerSpec, Tool
from mcp_host_conformance.reference_client.transports.http import http_client
from mcp_host_conformance.reference_client.transports.network import AsyncioBackend
from tests.reference_client.engine_support import run

OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


class _Server:
    """A loopback server on the test's own loop: answers each request with OK, then does
    `after(writer)`; counts connections."""

    def __init__(self, after=None) -> None:
        self.after = after
        self.connections = 0
        self.read = asyncio.Event()  # the client has read the answer whole
        self.answered = asyncio.Event()  # ... and `after` is done
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> _Server:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(OK)
                await writer.drain()
                await self.read.wait()
                if self.after is not None:
                    await self.after(writer)
                self.answered.set()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _two_requests(server: _Server) -> list[int]:
    statuses = []
    async with http_client() as client:
        for _ in range(2):
            server.read.clear()
            server.answered.clear()
            response = await client.get(server.url)
            statuses.append(response.status_code)
            server.read.set()
            await server.answered.wait()
    return statuses


def test_a_kept_alive_connection_is_reused() -> None:
    async def scenario() -> tuple[list[int], int]:
        async with _Server() as server:
            return await _two_requests(server), server.connections

    assert run(scenario()) == ([200, 200], 1)


@pytest.mark.parametrize("how", ["closed", "reset", "unasked data"])
def test_a_connection_the_server_ended_is_not_reused(how: str) -> None:
    """A pooled connection the server closed, reset or wrote to unasked is dropped: the next
    request gets a new connection instead of failing (which a call would report unknown)."""

    async def end(writer: asyncio.StreamWriter) -> None:
        if how == "unasked data":
            writer.write(OK)
            await writer.drain()
        elif how == "reset":
            writer.transport.abort()
        else:
            writer.close()
            await writer.wait_closed()

    async def scenario() -> tuple[list[int], int]:
        async with _Server(end) as server:
            return await _two_requests(server), server.connections

    assert run(scenario()) == ([200, 200], 2)


def test_errors_are_httpcore_s() -> None:
    async def refused() -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # nobody listens once it is closed
        await AsyncioBackend().connect_tcp("127.0.0.1", port)

    with pytest.raises(httpcore.ConnectError):
        run(refused())

    async def silent() -> None:
        async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()

        server = await asyncio.start_server(mute, "127.0.0.1", 0)
        try:
            port = server.sockets[0].getsockname()[1]
            stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
            try:
                with pytest.raises(httpcore.ReadTimeout):
                    await stream.read(10, timeout=0.05)  # nothing ever comes
                assert stream.get_extra_info("is_readable") is False
            finally:
                await stream.aclose()
            assert stream.get_extra_info("is_readable") is True
            with pytest.raises(httpcore.WriteError):
                await stream.write(b"late")
        finally:
            server.close()

    run(silent())


def test_certificates_are_verified_against_the_host_name() -> None:
    spec = ServerSpec(name="docs", tools=[Tool("query")])

    async def get(url: str, ca_file) -> int:
        async with http_client(ca_file) as client:
            return (await client.get(url)).status_code

    with HttpMock(spec, tls="wrong-host") as mock:
        with pytest.raises(httpx.ConnectError, match="(?i)certificate|hostname"):
            run(get(mock.url, mock.ca_file))
    with HttpMock(spec, tls="trusted") as mock:
        assert run(get(mock.url.replace("/mcp", "/__journal"), mock.ca_file)) == 200
