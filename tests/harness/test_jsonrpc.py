"""The JSON-RPC peer both sides of the driver protocol use: framing, parsing, flow.

The parser is fuzzed (hypothesis): whatever bytes arrive, it returns a message or raises
WireError with a reason, never anything else, and deep nesting, huge sizes and bad
encodings are refused with a clear reason."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.contract.jsonrpc import (
    BUSY,
    MAX_LINE,
    METHOD_NOT_FOUND,
    Peer,
    WireError,
    frame,
    parse_line,
)

# ---- the parser ---------------------------------------------------------------------------------


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_any_bytes_give_a_message_or_a_wire_error(data: bytes) -> None:
    try:
        message = parse_line(data)
    except WireError as exc:
        assert str(exc)
    else:
        assert isinstance(message, dict) and message["jsonrpc"] == "2.0"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(deadline=None)
@given(json_values, st.integers(min_value=0, max_value=4000), st.booleans())
def test_nested_json_is_parsed_or_refused_never_crashes(value, depth, arrays) -> None:
    inner = json.dumps(value)
    body = "[" * depth + inner + "]" * depth if arrays else '{"k":' * depth + inner + "}" * depth
    line = '{"jsonrpc":"2.0","id":1,"result":' + body + "}"
    try:
        assert parse_line(line.encode())["id"] == 1
    except WireError as exc:
        assert "nested too deeply" in str(exc)


@settings(deadline=None)
@given(st.text(min_size=1, max_size=200), st.sampled_from(["utf-16", "utf-32", "latin-1"]))
def test_other_encodings_are_refused_as_not_utf8(text: str, encoding: str) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": text + "é"}
    line = json.dumps(message, ensure_ascii=False).encode(encoding, errors="replace")
    with pytest.raises(WireError, match="not UTF-8|not JSON"):
        parse_line(line)


def test_depth_one_hundred_thousand_is_refused_at_once() -> None:
    depth = 100_000
    line = b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(WireError, match="nested too deeply"):
        parse_line(line)


def test_a_line_over_the_limit_is_refused() -> None:
    with pytest.raises(WireError, match=f"over {MAX_LINE} bytes"):
        parse_line(b" " * (MAX_LINE + 1))


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"[]", "not a JSON-RPC 2.0 message"),
        (b'{"jsonrpc": "1.0", "id": 1, "result": 1}', "not a JSON-RPC 2.0 message"),
        (b'{"jsonrpc": "2.0", "id": 1}', "neither a request nor a response"),
        (b"\xff\xfe", "not UTF-8 (byte 0)"),
    ],
)
def test_what_is_wrong_is_named(line: bytes, reason: str) -> None:
    with pytest.raises(WireError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_line(line)


# ---- two peers over pipes ------------------------------------------------------------------------


class Wire:
    """Two peers connected by two pipes."""

    def __init__(self, *, strict_b: bool = False, accepts_b: tuple[str, ...] | None = None):
        a_in, b_out = os.pipe()
        b_in, a_out = os.pipe()
        self.failures: list[str] = []
        self.b_failed = threading.Event()
        self.a = Peer(
            os.fdopen(a_in, "rb"),
            os.fdopen(a_out, "wb"),
            name="b",
            strict=True,
            on_failure=self.failures.append,
        ).start()
        self.b = Peer(
            os.fdopen(b_in, "rb"),
            os.fdopen(b_out, "wb"),
            name="a",
            strict=strict_b,
            accepts=accepts_b,
            id_prefix="d",
            on_failure=lambda _reason: self.b_failed.set(),
        ).start()

    def close(self) -> None:
        for peer in (self.a, self.b):
            peer.close(flush=0.5)
            peer.fail("test over")


@pytest.fixture
def wire() -> Iterator[Wire]:
    made = Wire()
    yield made
    made.close()


def test_requests_in_both_directions_are_matched_to_their_answers(wire: Wire) -> None:
    pending = wire.a.request("describe", {"x": 1})
    request = wire.b.next_request(timeout=5)
    assert request is not None and (request.method, request.params) == ("describe", {"x": 1})
    back = wire.b.request("approve", {"tool": "t"})
    asked = wire.a.next_request(timeout=5)
    assert asked is not None and asked.id == "d1"
    wire.a.reply(asked.id, "y")
    wire.b.reply(request.id, {"name": "n"})
    assert pending.done.wait(5) and pending.result == {"name": "n"}
    assert back.done.wait(5) and back.result == "y"


def test_an_error_answer_is_a_remote_error(wire: Wire) -> None:
    pending = wire.a.request("nope", {})
    request = wire.b.next_request(timeout=5)
    assert request is not None
    wire.b.reply_error(request.id, METHOD_NOT_FOUND, "no such method")
    assert pending.done.wait(5)
    assert pending.error is not None and pending.error.code == METHOD_NOT_FOUND


def test_a_strict_peer_fails_on_an_answer_to_nothing(wire: Wire) -> None:
    wire.b.reply(99, "stray")
    pending = wire.a.request("describe", {})
    assert pending.done.wait(5)
    assert pending.failure is not None and "never sent (id 99)" in pending.failure
    assert wire.failures and "never sent" in wire.failures[0]


def test_a_lenient_peer_answers_garbage_and_goes_on() -> None:
    a_in, b_out = os.pipe()
    b_in, a_out = os.pipe()
    peer = Peer(os.fdopen(b_in, "rb"), os.fdopen(b_out, "wb"), name="harness", strict=False)
    peer.start()
    to_peer = os.fdopen(a_out, "wb")
    from_peer = os.fdopen(a_in, "rb")
    try:
        to_peer.write(b"this is not json\n")
        to_peer.write(frame({"jsonrpc": "2.0", "method": "note"}))  # a notification: ignored
        to_peer.write(frame({"jsonrpc": "2.0", "id": 3, "method": "m", "params": [1]}))
        to_peer.write(frame({"jsonrpc": "2.0", "id": 4, "method": "ok"}))
        to_peer.flush()
        first = json.loads(from_peer.readline())
        assert first["error"]["code"] == -32700 and first["id"] is None
        second = json.loads(from_peer.readline())
        assert second["id"] == 3 and "params: expected an object" in second["error"]["message"]
        request = peer.next_request(timeout=5)
        assert request is not None and (request.id, request.params) == (4, {})
    finally:
        to_peer.close()
        peer.close(flush=0.5)


def test_unaccepted_methods_are_answered_by_the_reader() -> None:
    made = Wire(accepts_b=("approve",))
    try:
        pending = made.a.request("chat", {})
        assert pending.done.wait(5)
        assert pending.error is not None and pending.error.code == METHOD_NOT_FOUND
    finally:
        made.close()


def test_a_flood_fails_a_strict_peer_and_is_refused_by_a_lenient_one() -> None:
    strict = Wire(strict_b=True)
    lenient = Wire(strict_b=False)
    try:
        # Nobody takes b's requests: the 65th is a flood.
        for peer_wire in (strict, lenient):
            for _ in range(64):
                peer_wire.a.request("m", {})
        last_strict = strict.a.request("m", {})
        last_lenient = lenient.a.request("m", {})
        assert last_lenient.done.wait(5)
        assert last_lenient.error is not None and last_lenient.error.code == BUSY
        assert strict.b_failed.wait(5)  # the strict side fails on its reader thread
        assert strict.b.failure is not None and "without waiting" in strict.b.failure
        assert not last_strict.done.is_set() or last_strict.failure is not None
    finally:
        strict.close()
        lenient.close()


def test_the_end_of_input_fails_every_pending_request(wire: Wire) -> None:
    pending = wire.a.request("describe", {})
    wire.b.close(flush=0.5)
    wire.b._outgoing.close()  # the other side's output ends
    assert pending.done.wait(5)
    assert pending.failure is not None and "closed the connection" in pending.failure
