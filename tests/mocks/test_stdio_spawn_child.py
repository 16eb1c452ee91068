"""The stdio mock's `spawn_child` misbehaviour: a sleeping child left in the server's group.

Strategy: STDIO-5 needs a server whose process group holds more than its leader, so that a
client signalling only the pid leaves something behind. These tests spawn the mock the way
a conforming client does (own session), then show both halves: killing the pid alone leaves
the child running; killing the group ends it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time

import pytest

from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec
from mcp_host_conformance.mocks.stdio_server import StdioMock, pids_in_group, process_state

ENV = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}


def _until(condition, bound: float = 5.0) -> bool:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            return False
        select.select([], [], [], 0.01)
    return True


@pytest.fixture
def spawned(tmp_path):
    mock = StdioMock(ServerSpec(misbehaviour=Misbehaviour(spawn_child=True)), tmp_path)
    proc = subprocess.Popen(
        mock.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=ENV,
        start_new_session=True,
    )
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\n")
    proc.stdin.flush()
    assert proc.stdout.readline()  # answered: the child was spawned before serving
    (event,) = mock.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "child-spawned"
    )
    child = event.extra["pid"]
    yield mock, proc, child
    for pid in (proc.pid, child):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=5)
    for f in (proc.stdin, proc.stdout):
        f.close()


def test_child_is_in_the_servers_group(spawned):
    mock, proc, child = spawned
    (event,) = mock.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "child-spawned"
    )
    assert event.extra["pgid"] == proc.pid
    assert child in pids_in_group(proc.pid) and proc.pid in pids_in_group(proc.pid)


def test_killing_only_the_pid_leaves_the_child_running(spawned):
    _mock, proc, child = spawned
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=5)
    assert process_state(child) == "running"


def test_killing_the_group_ends_the_child(spawned):
    _mock, proc, child = spawned
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=5)
    # Orphaned to an init that may not reap: a zombie is as far as it can get here.
    assert _until(lambda: process_state(child) != "running")


def test_stdin_eof_still_ends_the_server_but_not_the_child(spawned):
    _mock, proc, child = spawned
    proc.stdin.close()
    assert proc.wait(timeout=5) == 0
    assert process_state(child) == "running"
    proc.stdin = open(os.devnull, "wb")  # the fixture closes it again
