"""The mocks' HTTP servers (MCP plain and TLS, Responses) against hostile and crowded clients.

Each property is checked on all three servers: many simultaneous connections are all
answered and journalled; malformed HTTP gets a 4xx and no traceback; a request smuggled in
a body is never served; slow clients (slowloris) neither block others nor stop `close()`;
deeply nested JSON is a clear error. Waits are bounded and generous; nothing is timed.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

from mcp_host_conformance.mocks._http import HttpLimits
from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.named import healthy_spec
from mcp_host_conformance.mocks.responses import MockResponses
from tests.mocks.rawhttp import (
    Target,
    body_of,
    exchange,
    many,
    mcp_target,
    responses_target,
    status_of,
)

KINDS = ["http", "tls", "responses"]
GENEROUS = 60.0  # seconds: a bound on a loaded machine, never a speed claim


def _start(kind: str, limits: HttpLimits | None = None) -> tuple[Target, object]:
    if kind == "responses":
        model = MockResponses(limits=limits).start()
        return responses_target(model), model
    mock = HttpMock(healthy_spec(), tls="trusted" if kind == "tls" else None, limits=limits)
    mock.start()
    return mcp_target(mock), mock


@pytest.fixture(params=KINDS)
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Target, object]]:
    target, server = _start(request.param)
    yield target, server
    server.close()  # type: ignore[attr-defined]


def _run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def _closes_within(server: object, bound: float) -> bool:
    done = threading.Event()

    def close() -> None:
        server.close()  # type: ignore[attr-defined]
        done.set()

    threading.Thread(target=close, daemon=True).start()
    return done.wait(bound)


# ---- crowds -----------------------------------------------------------------------------


def test_200_simultaneous_connections_are_all_answered_and_journalled(served):
    target, _ = served
    results = _run(many(target, 200, timeout=GENEROUS))
    statuses = [r if isinstance(r, Exception) else status_of(r) for r in results]  # type: ignore[union-attr]
    failed = [s for s in statuses if s != 200]
    assert not failed, f"{len(failed)} of 200 not answered 200: {failed[:5]}"
    assert target.requests_journalled() == 200


# ---- malformed HTTP ------------------------------------------------------------------------

MALFORMED: dict[str, tuple[bytes, set[int]]] = {
    "content-length not a number": (b"content-length: abc\r\n\r\n", {400}),
    "negative content-length": (b"content-length: -5\r\n\r\n", {400}),
    "content-length with a sign": (b"content-length: +5\r\n\r\nhello", {400}),
    "content-length with underscores": (b"content-length: 1_0\r\n\r\n0123456789", {400}),
    "huge content-length": (b"content-length: 1000000000000\r\n\r\n", {413}),
    "two different content-lengths": (
        b"content-length: 2\r\ncontent-length: 3\r\n\r\nabc",
        {400},
    ),
    "bad chunk size": (b"transfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", {400}),
    "negative chunk size": (b"transfer-encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", {400}),
    "huge chunk size": (b"transfer-encoding: chunked\r\n\r\nffffffffffff\r\nhello", {413}),
    "chunk without its CRLF": (
        b"transfer-encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        {400},
    ),
    "unknown transfer-encoding": (b"transfer-encoding: gzip\r\n\r\n", {400, 501}),
    "header without a colon": (b"this is not a header\r\n\r\n", {400}),
    "header name with a space": (b"bad name: x\r\n\r\n", {400}),
    "folded header": (b"x-a: one\r\n  two\r\n\r\n", {400}),
    "non-UTF-8 header value": (b"x-a: \xff\xfe\xfd\r\n\r\n", {400}),
    "control character in a header": (b"x-a: a\x00b\r\n\r\n", {400}),
    "oversized header": (b"x-a: " + b"a" * 300_000 + b"\r\n\r\n", {431}),
    "too many headers": (b"".join(b"x-h%d: v\r\n" % i for i in range(500)) + b"\r\n", {431}),
}

BAD_LINES: dict[str, tuple[bytes, set[int]]] = {
    "garbage request line": (b"GARBAGE\r\n\r\n", {400}),
    "unknown HTTP version": (b"POST / HTTP/9.9\r\n\r\n", {400, 505}),
    "NUL in the request line": (b"PO\x00ST / HTTP/1.1\r\n\r\n", {400}),
    "non-UTF-8 target": (b"POST /\xff\xfe HTTP/1.1\r\n\r\n", {400}),
    "request line too long": (b"GET /" + b"a" * 300_000 + b" HTTP/1.1\r\n\r\n", {400, 414, 431}),
}


def _malformed_request(target: Target, head_tail: bytes) -> bytes:
    return f"POST {target.path} HTTP/1.1\r\nhost: 127.0.0.1\r\n".encode() + head_tail


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_headers_get_4xx_no_traceback_and_the_mock_carries_on(served, capfd, case):
    target, _ = served
    data, expected = MALFORMED[case]
    response = _run(exchange(target, _malformed_request(target, data), timeout=GENEROUS))
    assert status_of(response) in expected, response[:200]  # type: ignore[arg-type]
    good = _run(exchange(target, target.request(), timeout=GENEROUS))
    assert status_of(good) == 200  # type: ignore[arg-type]
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_malformed_request_lines_get_4xx_and_no_traceback(served, capfd, case):
    target, _ = served
    data, expected = BAD_LINES[case]
    response = _run(exchange(target, data, timeout=GENEROUS))
    assert status_of(response) in expected, response[:200]  # type: ignore[arg-type]
    assert "Traceback" not in capfd.readouterr().err


def test_a_request_smuggled_in_a_body_is_never_served(served):
    target, _ = served
    smuggled = f"GET {target.path}/smuggled HTTP/1.1\r\nhost: x\r\n\r\n".encode()
    body = b"0\r\n\r\n" + smuggled
    data = _malformed_request(
        target,
        b"transfer-encoding: chunked\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body),
    )
    response = _run(exchange(target, data, timeout=GENEROUS))
    assert status_of(response) == 400
    assert response.count(b"HTTP/1.1 ") == 1  # type: ignore[union-attr]
    assert not target.journal.entries(where=lambda e: "smuggled" in (e.path or ""))


def test_deeply_nested_json_is_a_clear_error_and_the_mock_carries_on(served, capfd):
    target, _ = served
    for body in (b"[" * 100_000, b'{"a":' * 100_000, b"[" * 5000 + b"]" * 5000):
        response = _run(exchange(target, target.request(body=body), timeout=GENEROUS))
        assert status_of(response) == 400, response[:300]  # type: ignore[arg-type]
        assert b"nest" in body_of(response).lower()  # type: ignore[arg-type]
    assert status_of(_run(exchange(target, target.request(), timeout=GENEROUS))) == 200  # type: ignore[arg-type]
    assert target.requests_journalled() == 4
    assert "Traceback" not in capfd.readouterr().err


# ---- slow clients ---------------------------------------------------------------------------


async def _slow_clients(target: Target, count: int) -> list[asyncio.StreamWriter]:
    """Connections that never finish: half stop inside the head, half inside the body."""
    writers = []
    for i in range(count):
        _, writer = await asyncio.open_connection(
            "127.0.0.1",
            target.port,
            ssl=target.ssl,
            server_hostname="127.0.0.1" if target.ssl else None,
        )
        request = target.request()
        head_end = request.index(b"\r\n\r\n") + 4
        writer.write(request[: head_end // 2] if i % 2 else request[: head_end + 3])
        await writer.drain()
        writers.append(writer)
    return writers


async def _crowd_beside_slow_clients(target: Target, slow: int, good: int) -> list[object]:
    writers = await _slow_clients(target, slow)
    try:
        return await many(target, good, timeout=GENEROUS)
    finally:
        for writer in writers:
            writer.transport.abort()


def test_slow_clients_block_nobody(served):
    target, _ = served
    results = _run(_crowd_beside_slow_clients(target, slow=40, good=40))
    assert [status_of(r) for r in results] == [200] * 40  # type: ignore[arg-type]
    assert target.requests_journalled() == 40


@pytest.mark.parametrize("kind", KINDS)
def test_a_request_never_finished_gets_408_and_a_journal_event(kind):
    target, server = _start(kind, HttpLimits(request_timeout=0.2))
    try:
        request = target.request()
        cut = request[: request.index(b"\r\n\r\n") + 4]  # the head, and none of the body
        response = _run(exchange(target, cut, timeout=GENEROUS))
        assert status_of(response) == 408  # type: ignore[arg-type]
        events = target.journal.wait_for(
            kind="event", where=lambda e: e.extra.get("event") == "bad-http", timeout=GENEROUS
        )
        assert "timeout" in events[0].extra["reason"] or "time" in events[0].extra["reason"]
    finally:
        server.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KINDS)
def test_close_is_bounded_with_clients_connected(kind):
    target, server = _start(kind)
    sockets = []
    try:
        for cut in (0, 10, None):  # idle, inside the head, whole head and no body
            sock = socket.create_connection(("127.0.0.1", target.port), timeout=5)
            if target.ssl is not None:
                sock = target.ssl.wrap_socket(sock, server_hostname="127.0.0.1")
            request = target.request(close=False)
            if cut is None:
                sock.sendall(request[: request.index(b"\r\n\r\n") + 4])
            elif cut:
                sock.sendall(request[:cut])
            sockets.append(sock)
        served_one = _run(exchange(target, target.request(), timeout=GENEROUS))
        assert status_of(served_one) == 200  # type: ignore[arg-type]
        assert _closes_within(server, GENEROUS), "close() did not return with clients connected"
        for sock in sockets:  # each is closed (EOF or reset, maybe after a last answer)
            sock.settimeout(GENEROUS)
            try:
                while sock.recv(65536):
                    pass
            except TimeoutError:
                pytest.fail("a connection stayed open after close()")
            except OSError:
                pass
    finally:
        for sock in sockets:
            sock.close()
        server.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KINDS)
def test_connections_over_the_limit_get_503_and_a_journal_event(kind):
    target, server = _start(kind, HttpLimits(max_connections=2))
    held: list[socket.socket] = []
    read: list[bytes] = []  # what each held connection has received
    try:
        for _ in range(2):
            sock = socket.create_connection(("127.0.0.1", target.port), timeout=GENEROUS)
            if target.ssl is not None:
                sock = target.ssl.wrap_socket(sock, server_hostname="127.0.0.1")
            # a client that has spoken keeps its slot (one that never sent a byte would give
            # it up to the next: test_silent_connections_cannot_lock_a_client_out)
            sock.sendall(target.request(close=False))
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(65536)
            held.append(sock)
            read.append(answer)
        response = _run(exchange(target, target.request(), timeout=GENEROUS))
        assert status_of(response) == 503  # type: ignore[arg-type]
        target.journal.wait_for(
            kind="event",
            where=lambda e: e.extra.get("event") == "connection-refused",
            timeout=GENEROUS,
        )
        held[0].sendall(target.request())  # the connections within the limit still work
        answer = read[0]
        while chunk := held[0].recv(65536):
            answer += chunk
        # the second answer on it (the first one's body may have been unread until now)
        assert answer.count(b"HTTP/1.1 ") == 2, answer[:300]
        assert status_of(answer[answer.rindex(b"HTTP/1.1 ") :]) == 200
    finally:
        for sock in held:
            sock.close()
        server.close()  # type: ignore[attr-defined]


def _silent(target: Target) -> socket.socket:
    """A connection that never sends a byte (for TLS: not even its handshake)."""
    return socket.create_connection(("127.0.0.1", target.port), timeout=GENEROUS)


@pytest.mark.parametrize("kind", KINDS)
def test_silent_connections_cannot_lock_a_client_out(kind):
    """As many connections as the mock takes, none sending a byte, then a real request: it is
    answered, at once. The bounds on time are made too long to play any part: only the cap
    on connections waiting for a request frees the slots (the one waiting longest goes)."""
    # a small mock (64 slots, 16 waiting at most) holds the same race as the default's 4,096
    # and 1,024 without opening thousands of sockets on a loaded machine
    limits = HttpLimits(
        request_timeout=3600.0, idle_timeout=3600.0, max_connections=64, max_idle_connections=16
    )
    target, server = _start(kind, limits)
    held = []
    try:
        held = [_silent(target) for _ in range(limits.max_connections)]
        response = _run(exchange(target, target.request(), timeout=GENEROUS))
        assert status_of(response) == 200  # type: ignore[arg-type]
        assert target.requests_journalled() == 1
    finally:
        for sock in held:
            sock.close()
        server.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KINDS)
def test_a_connection_that_sends_nothing_is_closed_after_the_slow_client_bound(kind):
    """The bound on a slow client starts at accept, not at its first byte: a connection that
    sends nothing is closed after `request_timeout`, however long kept-alive ones may idle."""
    target, server = _start(kind, HttpLimits(request_timeout=0.3, idle_timeout=3600.0))
    sock = _silent(target)
    try:
        sock.settimeout(GENEROUS)
        try:
            assert sock.recv(65536) == b""
        except TimeoutError:
            pytest.fail("a connection that sent nothing was kept open")
        except OSError:
            pass  # closed by a reset: closed all the same
    finally:
        sock.close()
        server.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["http", "responses"])
def test_a_kept_alive_connection_still_gets_the_idle_timeout(kind):
    """A client that has spoken keeps its connection between requests past the slow-client
    bound (the idle timeout is its own)."""
    target, server = _start(kind, HttpLimits(request_timeout=0.3, idle_timeout=3600.0))
    sock = _silent(target)
    try:
        sock.sendall(target.request(close=False))
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        assert status_of(answer) == 200
        # watched for what must not happen, well past the slow-client bound (a grace period)
        threading.Event().wait(1.5)
        sock.sendall(target.request(close=True))
        while chunk := sock.recv(65536):
            answer += chunk
        assert answer.count(b"HTTP/1.1 200 ") == 2, answer[:300]
    finally:
        sock.close()
        server.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KINDS)
def test_expect_100_continue_gets_a_100_then_the_answer(kind):
    target, server = _start(kind)
    try:
        response = _run(exchange(target, target.request(extra="expect: 100-continue\r\n")))
        assert response.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 ")  # type: ignore[union-attr]
        assert target.requests_journalled() == 1
    finally:
        server.close()  # type: ignore[attr-defined]
