"""Just enough HTTP/1.1 for the mocks, over asyncio streams.

Strategy: the HTTP mock must act at the socket level (reset a connection after reading a
request, stall with the connection open, send a body bigger than any sane limit), which
an ASGI app cannot do; so it parses requests itself. Only what MCP clients send is
handled: a request line, headers, a body by Content-Length or chunked; keep-alive unless
the client says close. Responses are written whole (`write_response`) or as a chunked
stream (`ChunkedBody`) for SSE.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

MAX_HEADER_BYTES = 256 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024

REASONS = {
    200: "OK",
    202: "Accepted",
    204: "No Content",
    301: "Moved Permanently",
    302: "Found",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


class BadRequest(Exception):
    """What the client sent is not HTTP we can read; answer 400 (or `status`) and close."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request on a connection, or None when the client closed it cleanly."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadRequest("connection closed inside the request head") from None
    except asyncio.LimitOverrunError:
        raise BadRequest("request head too large", 431) from None
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
        raise BadRequest("undecodable request head") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise BadRequest(f"bad header line: {line[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    request = Request(parts[0].upper(), parts[1], parts[2], headers)
    request.body = await _read_body(reader, headers)
    return request


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = []
            total = 0
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass  # trailers, ignored
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY_BYTES:
                    raise BadRequest("body too large", 413)
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
        length_text = headers.get("content-length", "0")
        length = int(length_text)
        if length < 0:
            raise ValueError(length_text)
        if length > MAX_BODY_BYTES:
            raise BadRequest("body too large", 413)
        return await reader.readexactly(length) if length else b""
    except ValueError:
        raise BadRequest("bad Content-Length or chunk size") from None
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise BadRequest("connection closed inside the request body") from None


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def write_response(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes = b"",
    headers: list[tuple[str, str]] | None = None,
    *,
    keep_alive: bool = True,
) -> None:
    all_headers = list(headers or [])
    all_headers.append(("content-length", str(len(body))))
    if not keep_alive:
        all_headers.append(("connection", "close"))
    writer.write(_head(status, all_headers) + body)


class ChunkedBody:
    """A response whose body goes out piece by piece (an SSE stream)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    def start(
        self, status: int, headers: list[tuple[str, str]], *, keep_alive: bool = True
    ) -> None:
        all_headers = [*headers, ("transfer-encoding", "chunked")]
        if not keep_alive:
            all_headers.append(("connection", "close"))
        self.writer.write(_head(status, all_headers))

    async def send(self, data: bytes) -> None:
        if data:
            self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await self.writer.drain()

    async def end(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()


def sse_event(data: str, event: str = "message") -> bytes:
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"event: {event}\n{lines}\n".encode()
