"""Just enough HTTP/1.1 for the mocks, over asyncio streams, and strict about it.

Strategy: the mocks must act at the socket level (reset a connection after reading a
request, stall with it open, send a body bigger than any sane limit), which an ASGI app
cannot do; so they parse requests themselves, and a parser of what a program under test
sends is hostile-input code. It accepts only plainly valid requests: a request line of
token, origin-form target and HTTP/1.0 or 1.1; UTF-8 header lines of token names and
values free of control characters (no folding); a body by one decimal Content-Length or
by `chunked` with strict hex sizes and the CRLF after each chunk checked. Anything else is
a `BadRequest` carrying its status (400; 408 too slow; 413 body too big; 431 head too
big; 501 unknown transfer coding; 505 other HTTP versions), so a lying length or a
request hidden in a body is refused, never served. Every size and wait has a bound
(`HttpLimits`): the head by the stream's buffer limit, the body before it is read, and a
request must arrive whole within `request_timeout` of its first byte (slowloris).

Responses are written whole (`write_response`) or as a chunked stream (`ChunkedBody`)
for SSE (`sse_event`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from dataclasses import dataclass, field

REASONS = {
    100: "Continue",
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
    408: "Request Timeout",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
    505: "HTTP Version Not Supported",
}


@dataclass(frozen=True)
class HttpLimits:
    """The bounds of one mock HTTP server. The defaults hold any real client."""

    max_head_bytes: int = 64 * 1024  # request line and headers together
    max_headers: int = 100
    max_body_bytes: int = 16 * 1024 * 1024
    # from a request's first byte to its last; and from a connection's accept to its first
    # request's first byte (a client that connects has its request ready)
    request_timeout: float = 30.0
    idle_timeout: float = 300.0  # a kept-alive connection waiting for its next request
    max_connections: int = 4096  # more are answered 503 and closed
    # connections waiting for a request (new, or kept alive) at once: one more closes the one
    # that waited longest, so silent connections cannot take every slot from real clients
    max_idle_connections: int = 1024
    backlog: int = 1024  # the listen queue (the kernel caps it at net.core.somaxconn)


class BadRequest(Exception):
    """What the client sent is not HTTP we take; answer `status` and close."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Deadline:
    """When a request must have arrived whole (`HttpLimits.request_timeout` after its first
    byte)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = asyncio.get_running_loop().time() + seconds

    def left(self) -> float:
        return max(self.at - asyncio.get_running_loop().time(), 0.0)


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    content_length: int | None = None
    chunked: bool = False
    deadline: Deadline | None = field(default=None, repr=False, compare=False)

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    @property
    def expects_continue(self) -> bool:
        return self.headers.get("expect", "").lower() == "100-continue"


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_TARGET = re.compile(r"(/[\x21-\x7e]*|\*|https?://[\x21-\x7e]+)")
_VERSION = re.compile(r"HTTP/(\d)\.(\d)")
_CTL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(r"[0-9]{1,19}")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(;[\x20-\x7e\t]*)?")


# ---- reading -----------------------------------------------------------------------------


async def _within(deadline: Deadline, awaitable: Awaitable[bytes]) -> bytes:
    try:
        return await asyncio.wait_for(awaitable, deadline.left())
    except TimeoutError:
        raise BadRequest(
            f"the request did not arrive whole within {deadline.seconds:g} s (request timeout)",
            408,
        ) from None


async def read_request(reader: asyncio.StreamReader, limits: HttpLimits) -> Request | None:
    """The next request (head and body) on a connection, or None when the client closed it
    (or left it idle past `idle_timeout`) between requests. Raises BadRequest."""
    request = await read_head(reader, limits)
    if request is not None:
        request.body = await read_body(reader, request, limits)
    return request


async def first_byte(reader: asyncio.StreamReader, wait: float) -> bytes | None:
    """A request's first byte, or None when none came within `wait` seconds (or the
    connection ended)."""
    try:
        first = await asyncio.wait_for(reader.read(1), wait)
    except TimeoutError:
        return None
    return first or None


async def read_head(
    reader: asyncio.StreamReader, limits: HttpLimits, first: bytes | None = None
) -> Request | None:
    """The request line and headers; the body is left to `read_body` (after any 100).
    `first`: the request's first byte, already read (`first_byte`); else it is waited for up
    to `limits.idle_timeout`."""
    if first is None:
        first = await first_byte(reader, limits.idle_timeout)
        if first is None:
            return None
    deadline = Deadline(limits.request_timeout)
    try:
        head = first + await _within(deadline, reader.readuntil(b"\r\n\r\n"))
    except asyncio.IncompleteReadError:
        raise BadRequest("the connection closed inside the request head") from None
    except asyncio.LimitOverrunError:
        raise BadRequest(f"request head over {limits.max_head_bytes} bytes", 431) from None
    request = parse_head(head, limits)
    request.deadline = deadline
    return request


def parse_head(head: bytes, limits: HttpLimits) -> Request:
    """A request head (through its blank line) checked and parsed. Raises BadRequest."""
    if len(head) > limits.max_head_bytes:
        raise BadRequest(f"request head over {limits.max_head_bytes} bytes", 431)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request head is not UTF-8") from None
    lines = text[:-4].split("\r\n") if text.endswith("\r\n\r\n") else text.split("\r\n")
    while lines and lines[0] == "":  # RFC 9112: an empty line before the request line
        lines.pop(0)
    if not lines:
        raise BadRequest("an empty request")
    request = _request_line(lines[0])
    if len(lines) - 1 > limits.max_headers:
        raise BadRequest(f"more than {limits.max_headers} header fields", 431)
    lengths: list[str] = []
    for line in lines[1:]:
        if line[:1] in (" ", "\t"):
            raise BadRequest("a folded header line (obsolete line folding)")
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.fullmatch(name):
            raise BadRequest(f"bad header line: {_shown(line)}")
        value = value.strip(" \t")
        if _CTL.search(value):
            raise BadRequest(f"a control character in header {name}")
        key = name.lower()
        if key == "content-length":
            lengths.append(value)
        headers = request.headers
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    _framing(request, lengths, limits)
    return request


def _request_line(line: str) -> Request:
    parts = line.split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]):
        raise BadRequest(f"bad request line: {_shown(line)}")
    method, target, version = parts
    if not _TARGET.fullmatch(target):
        raise BadRequest(f"bad request target: {_shown(target)}")
    matched = _VERSION.fullmatch(version)
    if not matched:
        raise BadRequest(f"bad HTTP version: {_shown(version)}")
    if matched.group(1) != "1" or matched.group(2) not in ("0", "1"):
        raise BadRequest(f"HTTP version {version} is not supported", 505)
    return Request(method.upper(), target, version)


def _framing(request: Request, lengths: list[str], limits: HttpLimits) -> None:
    encoding = request.headers.get("transfer-encoding")
    if encoding is not None:
        if lengths:
            raise BadRequest("both Transfer-Encoding and Content-Length")
        if request.version == "HTTP/1.0":
            raise BadRequest("Transfer-Encoding in an HTTP/1.0 request")
        if encoding.lower() != "chunked":
            raise BadRequest(f"transfer coding {_shown(encoding)} is not supported", 501)
        request.chunked = True
        return
    values = {v.strip(" \t") for joined in lengths for v in joined.split(",")}
    if not values:
        return
    if len(values) > 1:
        raise BadRequest("several different Content-Length values")
    value = values.pop()
    if not _DIGITS.fullmatch(value):
        raise BadRequest(f"bad Content-Length: {_shown(value)}")
    length = int(value)
    if length > limits.max_body_bytes:
        raise BadRequest(f"a body of {length} bytes is over {limits.max_body_bytes}", 413)
    request.content_length = length


async def read_body(reader: asyncio.StreamReader, request: Request, limits: HttpLimits) -> bytes:
    deadline = request.deadline or Deadline(limits.request_timeout)
    try:
        if request.chunked:
            return await _chunked(reader, deadline, limits)
        if request.content_length:
            return await _within(deadline, reader.readexactly(request.content_length))
        return b""
    except asyncio.IncompleteReadError:
        raise BadRequest("the connection closed inside the request body") from None
    except asyncio.LimitOverrunError:
        raise BadRequest("a chunk size or trailer line too long") from None


async def _chunked(reader: asyncio.StreamReader, deadline: Deadline, limits: HttpLimits) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        line = (await _within(deadline, reader.readuntil(b"\r\n")))[:-2]
        matched = _CHUNK_SIZE.fullmatch(line)
        if not matched:
            raise BadRequest(f"bad chunk size line: {_shown(line.decode('latin-1'))}")
        size = int(matched.group(1), 16)
        if size == 0:
            break
        total += size
        if total > limits.max_body_bytes:
            raise BadRequest(f"a chunked body over {limits.max_body_bytes} bytes", 413)
        chunks.append(await _within(deadline, reader.readexactly(size)))
        if await _within(deadline, reader.readexactly(2)) != b"\r\n":
            raise BadRequest("a chunk not followed by CRLF")
    for _ in range(limits.max_headers + 1):  # trailers: read, checked loosely, dropped
        trailer = await _within(deadline, reader.readuntil(b"\r\n"))
        if trailer == b"\r\n":
            return b"".join(chunks)
        if b":" not in trailer:
            raise BadRequest("a bad trailer line")
    raise BadRequest(f"more than {limits.max_headers} trailer fields", 431)


def _shown(text: str) -> str:
    """Part of a bad line, safe to put in a message (and so on a terminal)."""
    return ascii(text[:60])


# ---- writing -----------------------------------------------------------------------------


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def write_continue(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")


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


def sse_event(
    data: str, event: str | None = "message", *, id: str | None = None, retry: int | None = None
) -> bytes:
    """One SSE event. A priming event is `sse_event("", None, id=..., retry=...)`."""
    lines = []
    if id is not None:
        lines.append(f"id: {id}\n")
    if retry is not None:
        lines.append(f"retry: {retry}\n")
    if event is not None:
        lines.append(f"event: {event}\n")
    lines += [f"data: {line}\n" for line in data.split("\n")]
    return ("".join(lines) + "\n").encode()
