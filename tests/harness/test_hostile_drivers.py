"""A driver is hostile input: whatever it does, the harness stays bounded and says why.

One test per way a driver can misbehave (flood, die, never reply, chatter, garbage, deep
nesting, a huge line, a failed handshake), each against `DriverAdapter` with a scripted
driver (`hostile_driver.py`) and small bounds. What is asserted is the property (the call
fails with the reason, within its bound plus a generous margin for a loaded machine, with a
bounded number of threads, nothing left running), never a machine's speed.
"""

from __future__ import annotations

import os
import resource
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_host_conformance.harness.contract.adapter import AdapterError
from mcp_host_conformance.harness.run.driver import DriverAdapter, HandshakeError
from mcp_host_conformance.mocks.stdio_server import pid_alive

HOSTILE = Path(__file__).with_name("hostile_driver.py")
MARGIN = 20.0  # seconds of slack on a loaded machine; a bound that was not kept takes minutes


def command(behaviour: str, *args: str) -> str:
    return shlex.join([sys.executable, str(HOSTILE), behaviour, *args])


@pytest.fixture
def adapters() -> Iterator[list[DriverAdapter]]:
    made: list[DriverAdapter] = []
    yield made
    for adapter in made:
        adapter.close()


def driver(
    adapters: list[DriverAdapter], behaviour: str, *args: str, **bounds: float
) -> DriverAdapter:
    adapter = DriverAdapter(command(behaviour, *args), **bounds)
    adapters.append(adapter)
    return adapter


def fails_within(adapter: DriverAdapter, bound: float, message: str) -> str:
    began = time.monotonic()
    with pytest.raises(AdapterError) as caught:
        adapter.describe()
    took = time.monotonic() - began
    assert message in str(caught.value), str(caught.value)
    assert took < bound + MARGIN, f"took {took:.1f} s, bound {bound} s"
    return str(caught.value)


def test_a_flood_of_requests_is_refused_without_a_thread_per_message(adapters):
    adapter = driver(adapters, "flood", timeout=30, handshake_timeout=30)
    before = threading.active_count()
    most = [before]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.01):
            most.append(threading.active_count())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        reason = fails_within(adapter, 30, "the driver")
    finally:
        stop.set()
        watcher.join()
    assert "requests without waiting" in reason or "does not read" in reason, reason
    # reader, writer, callback worker, stderr copy, the watcher: never one per message
    assert max(most) <= before + 6, max(most)


def test_answers_to_a_flood_of_unknown_requests_do_not_reset_the_bound(adapters):
    adapter = driver(adapters, "flood-unknown", timeout=2, handshake_timeout=30)
    fails_within(adapter, 2, "did not answer describe within 2 s")


def test_chatter_never_extends_a_call(adapters):
    adapter = driver(adapters, "chatter", timeout=1.5, handshake_timeout=30)
    fails_within(adapter, 1.5, "did not answer describe within 1.5 s")


def test_a_driver_that_never_replies_fails_its_handshake(adapters):
    adapter = driver(adapters, "silent", timeout=30, handshake_timeout=1)
    began = time.monotonic()
    with pytest.raises(HandshakeError, match="did not answer initialize within 1 s"):
        adapter.describe()
    assert time.monotonic() - began < 1 + MARGIN


def test_deep_nesting_is_a_protocol_error_not_a_stall(adapters):
    adapter = driver(adapters, "deep", timeout=60, handshake_timeout=30)
    fails_within(adapter, 5, "the driver broke the protocol: JSON nested too deeply")


def test_a_huge_line_is_refused_with_bounded_memory(adapters):
    adapter = driver(adapters, "huge", timeout=60, handshake_timeout=30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fails_within(adapter, 20, "the driver sent a message over 33554432 bytes")
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 256 * 1024, f"peak memory grew by {grown_kib} KiB"


def test_a_driver_that_dies_takes_its_process_group_with_it(adapters, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    adapter = driver(adapters, "dies", str(pid_file), timeout=30, handshake_timeout=30)
    fails_within(adapter, 5, "the driver exited (status 7)")
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + MARGIN
    while pid_alive(grandchild) and time.monotonic() < deadline:
        threading.Event().wait(0.05)  # the kill is synchronous; this only absorbs /proc lag
    alive = pid_alive(grandchild)
    if alive:
        os.kill(grandchild, 9)
    assert not alive, "the driver's child was left running after the driver died"


def test_a_handshake_failure_is_fast_and_says_so(adapters):
    adapter = driver(adapters, "exits")
    began = time.monotonic()
    with pytest.raises(HandshakeError, match=r"failed its handshake: the driver exited \(status 5"):
        adapter.describe()
    assert time.monotonic() - began < MARGIN


def test_the_run_wide_silence_budget_ends_the_waiting(adapters):
    adapter = driver(adapters, "hangs", timeout=30, handshake_timeout=30, silence_budget=1.0)
    assert adapter.describe().name == "h"
    adapter.timeout = 0.5  # after describe, which must get its answer however busy the machine
    for _ in range(2):  # two calls the driver never answers use up the budget
        with pytest.raises(AdapterError, match="did not answer"):
            adapter.list_servers(Path("/nonexistent"))
    began = time.monotonic()
    with pytest.raises(AdapterError, match="the run's budget"):
        adapter.list_servers(Path("/nonexistent"))
    assert time.monotonic() - began < 1.0, "a call after the budget must not wait again"


def test_an_unanswered_call_spends_its_whole_bound_however_late_its_wait_begins():
    """The clock of a call starts when it is sent; under load its wait may begin with the
    bound already used up. The call still spends the whole bound of the run's budget, not
    the (near zero) wall time its wait took: else two unanswered calls could fall short of a
    two-call budget and a third would be waited for again."""
    from mcp_host_conformance.harness.contract.jsonrpc import Pending
    from mcp_host_conformance.harness.run import driver as driver_module

    class Silent:  # the driver process: it never answers, the harness fails the call
        def reason(self, text):
            return text

        def __init__(self):
            self.peer = self

        def fail(self, reason):
            pending.failure = reason
            pending.done.set()

    adapter = DriverAdapter("hangs", timeout=0.5, silence_budget=1.0)
    for _ in range(2):
        pending = Pending("tools/list")
        expired = driver_module._Clock(0)  # the whole bound ran out before the wait began
        with pytest.raises(AdapterError, match="did not answer"):
            adapter._wait(Silent(), pending, expired)
    assert adapter.silence_spent == 1.0
    assert adapter._exhausted is not None, "two unanswered calls spent a two-call budget"


def test_driver_bounds_scale_with_the_timeout_scale():
    adapter = DriverAdapter("driver --flag", timeout_scale=3)
    assert adapter.timeout == 180.0 and adapter.handshake_timeout == 90.0
