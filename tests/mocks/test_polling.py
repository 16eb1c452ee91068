"""The pure bookkeeping of a polled SSE stream: segments, event ids, replay."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks.polling import PolledStream, segments, stream_key

RESULT = {"jsonrpc": "2.0", "id": 1, "result": {}}
OTHER = {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}


def stream(variant: str, first: list | None = None) -> PolledStream:
    return PolledStream("s4", 100, segments(variant, first or [], [RESULT]))


def test_deliver_primes_closes_then_delivers_and_ends():
    polled = stream("deliver")
    opened = polled.open()
    assert opened.ending == "close" and opened.last_event_id == "s4-0"
    assert opened.events == [b"id: s4-0\nretry: 100\ndata: \n\n"]
    resumed = polled.resume("s4-0")
    assert resumed is not None and resumed.ending == "end" and polled.finished
    assert resumed.events[0].startswith(b"id: s4-1\nevent: message\ndata: {")


def test_close_again_needs_two_resumptions():
    polled = stream("close-again")
    polled.open()
    again = polled.resume("s4-0")
    assert again is not None and again.ending == "close" and b"retry: 100" in again.events[0]
    final = polled.resume("s4-1")
    assert final is not None and final.ending == "end" and b'"id":1' in final.events[0]


def test_stall_stays_stalled():
    polled = stream("stall")
    polled.open()
    for _ in range(2):
        stalled = polled.resume("s4-0")
        assert stalled is not None and stalled.ending == "stall" and stalled.events == []
    assert not polled.finished


def test_other_replies_go_before_the_close_with_a_last_priming_event():
    polled = stream("deliver", first=[OTHER])
    opened = polled.open()
    assert len(opened.events) == 3 and b'"id":2' in opened.events[1]
    assert opened.events[2].startswith(b"id: s4-2\nretry: 100\n")
    assert opened.last_event_id == "s4-2"


def test_replay_from_an_older_id_then_the_next_segment():
    polled = stream("close-again")
    polled.open()
    polled.resume("s4-0")
    replayed = polled.resume("s4-0")
    assert replayed is not None and [e.split(b"\n")[0] for e in replayed.events] == [
        b"id: s4-1",
        b"id: s4-2",
    ]


@pytest.mark.parametrize("wrong", ["s4-1", "s5-0", "s4-", "s4--1", "s4-1e3", "", "s4-99999999999"])
def test_an_id_never_sent_is_refused(wrong):
    polled = stream("deliver")
    polled.open()
    assert polled.resume(wrong) is None


def test_unknown_variant_is_an_error():
    with pytest.raises(ValueError):
        segments("sometimes", [], [RESULT])


@settings(deadline=None)
@given(
    st.sampled_from(["deliver", "stall", "error", "close-again"]), st.lists(st.text(), max_size=8)
)
def test_fuzz_any_last_event_ids_never_raise_and_ids_stay_unique(variant, ids):
    polled = stream(variant)
    seen = [polled.open().last_event_id]
    for last in ids + [str(seen[-1])]:
        got = polled.resume(last)
        if got is not None:
            seen.append(got.last_event_id)
    assert all(stream_key(str(i)) == "s4" for i in seen)
    sent_ids = [e.split(b"\n")[0] for e in polled.sent]
    assert len(sent_ids) == len(set(sent_ids))
