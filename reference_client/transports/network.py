"""httpcore's network backend on plain asyncio streams, for every HTTP client of this host.

Why: httpx's default backend reaches asyncio through anyio, which wraps every read and write
in cancel scopes and timeout contexts and every connect in its happy-eyeballs machinery. For
a host whose requests are small and many (initialize, tools/list, each call, each model
request) that layer was about a fifth of the host's CPU in a suite run; this one does the
same job on asyncio's own streams (measured: ~0.26 ms of CPU less a request, 1.09 -> 0.83
ms with httpx's client around it).

Same contract as httpcore's backends: errors come out as httpcore's (ConnectError,
ReadError, WriteError and their timeouts, so httpx maps them as before, and a call whose
connection broke after sending is still told apart from one that never connected), a TLS
handshake is verified by the context it is given against the origin's host name, and a
pooled connection the server has closed (end of stream, reset, or data nobody asked for)
reports itself readable, so the pool drops it instead of sending a request into it.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

__all__ = ["AsyncioBackend", "AsyncioStream"]


def _readable(sock: Any) -> bool:
    """Whether a read would not block: data, an end of stream or an error waits (a socket
    gone counts as readable, as in httpcore)."""
    fd = sock.fileno() if sock is not None else -1
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            if timeout is None:
                return await self._reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            if self._writer.transport.is_closing():
                raise ConnectionResetError("the connection is closed")
            self._writer.write(buffer)
            if timeout is None:
                await self._writer.drain()
            else:
                async with asyncio.timeout(timeout):
                    await self._writer.drain()
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.WriteError(exc) from exc

    async def aclose(self) -> None:
        transport = self._writer.transport
        if transport.is_closing():
            return
        try:
            if transport.can_write_eof():
                transport.write_eof()
        except OSError:
            pass
        transport.close()
        try:
            # one turn of the loop for the close to reach the socket, then nothing waits on
            # the peer (a TLS close_notify it never answers would hold the socket open)
            await asyncio.sleep(0)
        finally:
            transport.abort()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            self._writer.transport.abort()
            raise httpcore.ConnectTimeout(exc) from exc
        except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
            self._writer.transport.abort()
            raise httpcore.ConnectError(exc) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        writer = self._writer
        if info in ("ssl_object", "socket"):
            return writer.get_extra_info(info)
        if info == "client_addr":
            return writer.get_extra_info("sockname")
        if info == "server_addr":
            return writer.get_extra_info("peername")
        if info == "is_readable":
            # asyncio reads the socket as data comes, so what came may be in the buffer
            reader = self._reader
            if reader.at_eof() or reader.exception() is not None or writer.transport.is_closing():
                return True
            if len(getattr(reader, "_buffer", b"")):
                return True
            return _readable(writer.get_extra_info("socket"))
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(exc) from exc
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(exc) from exc
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by this host")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
