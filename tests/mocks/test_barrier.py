"""The barrier holds `initialize` at HTTP and stdio mocks until every party has arrived."""

from __future__ import annotations

import socket
import threading

import pytest

from mcp_host_conformance.mocks.barrier import Barrier, arrive_blocking, parse_address
from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, SpecError, spec_from_dict
from tests.mocks.conftest import Raw
from tests.mocks.test_stdio_server import Proc

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}},
}


@pytest.fixture
def barrier():
    started: list[Barrier] = []

    def make(parties: int) -> Barrier:
        b = Barrier(parties).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.close()


def held(name: str, at: Barrier) -> ServerSpec:
    return ServerSpec(name=name, misbehaviour=Misbehaviour(barrier=at.address))


def test_a_party_alone_is_held_and_all_go_once_the_last_arrives(barrier):
    meeting = barrier(2)
    done = threading.Event()
    first = threading.Thread(target=lambda: (arrive_blocking(meeting.address, "a"), done.set()))
    first.start()
    meeting.journal.wait_for(kind="event", timeout=5)
    assert not done.wait(0.2)  # the one party is still held
    arrive_blocking(meeting.address, "b")
    assert done.wait(5)
    first.join(5)
    assert meeting.released and meeting.arrived() == ["a", "b"]
    events = [e.extra["event"] for e in meeting.journal.entries(kind="event")]
    assert events.count("barrier-released") == 1


def test_the_same_party_twice_counts_once_and_late_arrivals_pass(barrier):
    meeting = barrier(2)
    done = threading.Event()
    for _ in range(2):
        threading.Thread(target=lambda: arrive_blocking(meeting.address, "a"), daemon=True).start()
    meeting.journal.wait_for(kind="event", count=2, timeout=5)
    assert not meeting.released
    threading.Thread(
        target=lambda: (arrive_blocking(meeting.address, "b"), done.set()), daemon=True
    ).start()
    assert done.wait(5)
    arrive_blocking(meeting.address, "c")  # after the release: at once


def test_http_and_stdio_mocks_meet_at_one_barrier(barrier, start_mock, tmp_path):
    from mcp_host_conformance.mocks.stdio_server import StdioMock

    meeting = barrier(2)
    http = start_mock(held("remote", meeting))
    stdio = StdioMock(held("local", meeting), tmp_path / "mocks")
    answered: dict[str, object] = {}

    def initialize_http() -> None:
        answered["http"] = Raw(http).post(INITIALIZE).status_code

    thread = threading.Thread(target=initialize_http, daemon=True)
    thread.start()
    meeting.journal.wait_for(kind="event", timeout=30)
    assert "http" not in answered
    proc = Proc(stdio.command, cwd=tmp_path)
    try:
        proc.send(INITIALIZE)
        assert proc.recv(timeout=30)["id"] == 1
        thread.join(30)
        assert answered["http"] == 200
    finally:
        proc.close()
    assert meeting.arrived() == ["local", "remote"]


def test_an_unreachable_barrier_holds_nothing(start_mock):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mock = start_mock(ServerSpec(misbehaviour=Misbehaviour(barrier=f"127.0.0.1:{port}")))
    assert Raw(mock).post(INITIALIZE).status_code == 200


def test_a_party_that_leaves_early_does_not_block_the_barrier(barrier):
    meeting = barrier(1)
    with socket.create_connection(parse_address(meeting.address)) as conn:
        conn.sendall(b"x" * 5000)  # no newline within the bound: dropped
    arrive_blocking(meeting.address, "only")
    assert meeting.arrived() == ["only"]


def test_close_releases_whoever_waits(barrier):
    meeting = barrier(3)
    done = threading.Event()
    threading.Thread(
        target=lambda: (arrive_blocking(meeting.address, "a"), done.set()), daemon=True
    ).start()
    meeting.journal.wait_for(kind="event", timeout=5)
    meeting.close()
    assert done.wait(5)


@pytest.mark.parametrize("address", ["nowhere", "127.0.0.1:", ":80", "h:99999", 5])
def test_a_bad_barrier_address_is_a_spec_error(address):
    with pytest.raises(SpecError, match="misbehaviour.barrier"):
        spec_from_dict({"misbehaviour": {"barrier": address}})
