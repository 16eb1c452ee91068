"""The mocks' HTTP/1.1 request parser on its own: valid requests, and anything at all.

The parser reads from an asyncio StreamReader; these tests feed one directly (no socket),
so hypothesis can try thousands of inputs cheaply. The property: any bytes give a request,
None (the client closed between requests) or a BadRequest with a 4xx/5xx status; never
another exception, and never a body larger than the limit.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks._http import BadRequest, HttpLimits, Request, read_request

LIMITS = HttpLimits(max_head_bytes=4096, max_headers=20, max_body_bytes=4096, request_timeout=5)


def parse(data: bytes, limits: HttpLimits = LIMITS) -> Request | None | BadRequest:
    async def run() -> Request | None | BadRequest:
        reader = asyncio.StreamReader(limit=limits.max_head_bytes)
        reader.feed_data(data)
        reader.feed_eof()
        try:
            return await read_request(reader, limits)
        except BadRequest as exc:
            return exc

    return asyncio.run(run())


def test_a_post_with_a_body():
    got = parse(
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-A: 1\r\nx-a: 2\r\n\r\nhello"
    )
    assert isinstance(got, Request)
    assert (got.method, got.path, got.body) == ("POST", "/mcp", b"hello")
    assert got.headers["x-a"] == "1, 2" and got.keep_alive


def test_a_chunked_body_with_extensions_and_trailers():
    data = (
        b"POST /v1/responses?x=1 HTTP/1.1\r\ntransfer-encoding: Chunked\r\n\r\n"
        b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\ntrailer: t\r\n\r\n"
    )
    got = parse(data)
    assert isinstance(got, Request) and got.body == b"abcde" and got.path == "/v1/responses"


def test_http_1_0_closes_unless_asked():
    got = parse(b"GET / HTTP/1.0\r\n\r\n")
    assert isinstance(got, Request) and not got.keep_alive


def test_an_empty_connection_is_none_and_a_cut_one_is_bad():
    assert parse(b"") is None
    cut = parse(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nabc")
    assert isinstance(cut, BadRequest) and cut.status == 400


def test_the_same_content_length_twice_is_fine():
    got = parse(b"POST / HTTP/1.1\r\ncontent-length: 3\r\ncontent-length: 3\r\n\r\nabc")
    assert isinstance(got, Request) and got.body == b"abc"


@pytest.mark.parametrize(
    "data, status",
    [
        (b"POST / HTTP/1.1\r\ncontent-length: 4097\r\n\r\n", 413),
        (b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n1001\r\n", 413),
        (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n", 431),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"h%d: v\r\n" % i for i in range(21)) + b"\r\n", 431),
        (b"GET / HTTP/2.0\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n", 501),
        (b"GET / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"GET  / HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nx\x7f: y\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nx: y\rz\r\n\r\n", 400),
    ],
)
def test_each_limit_and_rule_has_its_status(data, status):
    got = parse(data)
    assert isinstance(got, BadRequest) and got.status == status, got


def test_a_request_that_never_finishes_is_a_408():
    async def run() -> BadRequest | None:
        reader = asyncio.StreamReader()
        reader.feed_data(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nabc")  # and no more
        try:
            await read_request(reader, HttpLimits(request_timeout=0.05))
        except BadRequest as exc:
            return exc
        return None

    got = asyncio.run(run())
    assert got is not None and got.status == 408


def test_an_idle_connection_is_closed_quietly():
    async def run() -> Request | None:
        return await read_request(asyncio.StreamReader(), HttpLimits(idle_timeout=0.05))

    assert asyncio.run(run()) is None


def _check(got: Request | None | BadRequest) -> None:
    if isinstance(got, BadRequest):
        assert 400 <= got.status < 600 and str(got)
        assert str(got).isprintable()  # shown on terminals: never raw bytes
    elif got is not None:
        assert len(got.body) <= LIMITS.max_body_bytes


@settings(deadline=None)
@given(st.binary(max_size=3000))
def test_fuzz_any_bytes(data):
    _check(parse(data))


LINES = st.sampled_from(
    [
        b"POST /mcp HTTP/1.1",
        b"GET / HTTP/1.0",
        b"content-length: 3",
        b"content-length: -1",
        b"content-length: 99999999999",
        b"transfer-encoding: chunked",
        b"connection: close",
        b"x-a: \xff",
        b" folded",
        b"bad header",
        b"",
        b"3",
        b"abc",
        b"0",
        b"ffffffff",
        b"zz",
    ]
)


@settings(deadline=None)
@given(st.lists(LINES | st.binary(max_size=20), max_size=12), st.booleans())
def test_fuzz_requests_made_of_plausible_lines(lines, crlf):
    data = (b"\r\n" if crlf else b"\n").join(lines) + b"\r\n\r\n"
    _check(parse(data))
