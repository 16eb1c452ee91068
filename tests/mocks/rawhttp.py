"""Raw HTTP/1.1 over asyncio sockets, for tests that must send what no HTTP library would.

Strategy: one request per connection (`connection: close`, or a malformed request the
server must close on), read to EOF with a bound, then split off the status code. Many of
them at once are plain `asyncio.gather`, so 200 or 1,000 concurrent connections need no
threads. Every wait is bounded; nothing here measures time.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.journal import Journal
from mcp_host_conformance.mocks.responses import MockResponses

MAX_READ = 4 * 1024 * 1024


@dataclass
class Target:
    """One of the mocks' HTTP servers, seen from a raw client."""

    name: str
    port: int
    journal: Journal
    path: str  # where requests go
    headers: dict[str, str]  # what a valid request carries (auth, content type)
    body: bytes  # a valid request body
    ssl: ssl.SSLContext | None = None

    def request(self, *, body: bytes | None = None, extra: str = "", close: bool = True) -> bytes:
        """A valid request as bytes (optionally with another body or extra header lines)."""
        content = self.body if body is None else body
        lines = [f"POST {self.path} HTTP/1.1", "host: 127.0.0.1"]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        lines.append(f"content-length: {len(content)}")
        if close:
            lines.append("connection: close")
        head = "\r\n".join(lines) + "\r\n" + extra
        return head.encode() + b"\r\n" + content

    def requests_journalled(self) -> int:
        return self.journal.count(kind="http")


def mcp_target(mock: HttpMock) -> Target:
    assert mock.port is not None
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
    ).encode()
    client_ssl = None
    if mock.tls:
        from mcp_host_conformance.mocks.tls import client_context

        client_ssl = client_context()
    return Target(
        name="tls" if mock.tls else "http",
        port=mock.port,
        journal=mock.journal,
        path="/mcp",
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
        body=body,
        ssl=client_ssl,
    )


def responses_target(model: MockResponses) -> Target:
    return Target(
        name="responses",
        port=model.port,
        journal=model.journal,
        path="/v1/responses",
        headers={"content-type": "application/json", "authorization": f"Bearer {model.api_key}"},
        body=json.dumps({"model": "m", "input": "hello"}).encode(),
    )


async def exchange(
    target: Target, data: bytes, *, timeout: float = 30.0, trickle: bool = False
) -> bytes:
    """Send `data` on a new connection, then read until the server closes (bounded)."""

    async def run() -> bytes:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1",
            target.port,
            ssl=target.ssl,
            server_hostname="127.0.0.1" if target.ssl else None,
        )
        try:
            if trickle:
                for i in range(len(data)):
                    writer.write(data[i : i + 1])
                    await writer.drain()
            else:
                writer.write(data)
                await writer.drain()
            out = b""
            while len(out) < MAX_READ:
                try:
                    chunk = await reader.read(65536)
                except (ConnectionError, ssl.SSLError):
                    break
                if not chunk:
                    break
                out += chunk
            return out
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, ssl.SSLError, OSError):
                pass

    return await asyncio.wait_for(run(), timeout)


def status_of(response: bytes) -> int | None:
    """The status code of the first response in `response`, None if there is none."""
    line = response.split(b"\r\n", 1)[0].split(b" ")
    if len(line) >= 2 and line[0].startswith(b"HTTP/1.") and line[1].isdigit():
        return int(line[1])
    return None


def body_of(response: bytes) -> bytes:
    return response.partition(b"\r\n\r\n")[2]


async def many(target: Target, count: int, timeout: float) -> list[Any]:
    """`count` valid requests on `count` simultaneous connections: each status or error."""
    data = target.request()
    return await asyncio.gather(
        *(exchange(target, data, timeout=timeout) for _ in range(count)), return_exceptions=True
    )
