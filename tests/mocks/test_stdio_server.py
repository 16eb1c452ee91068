"""The stdio mock as a real process: protocol, journal, misbehaviours, start time."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time

import pytest

from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool
from mcp_host_conformance.mocks.stdio_server import (
    StdioMock,
    pid_alive,
    pids_in_group,
    process_state,
)

MINIMAL_ENV = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}


class Proc:
    """A spawned mock with line-oriented, bounded reads of its stdout."""

    def __init__(
        self, command: list[str], cwd, stderr=subprocess.DEVNULL, new_session: bool = True
    ) -> None:
        self.started = time.perf_counter()
        self.p = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=MINIMAL_ENV,
            cwd=cwd,
            start_new_session=new_session,
        )
        self.buffer = b""

    def send(self, message) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def line(self, timeout: float = 30.0) -> bytes | None:
        deadline = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def recv(self, timeout: float = 30.0):
        line = self.line(timeout)
        assert line is not None, "no line from the mock within the bound"
        return json.loads(line)

    def request(self, id_, method, params=None):
        msg = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.recv()

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(timeout=5)
        for f in (self.p.stdin, self.p.stdout, self.p.stderr):
            if f:
                try:
                    f.close()
                except BrokenPipeError:
                    pass


@pytest.fixture
def spawn(tmp_path):
    procs: list[Proc] = []

    def start(spec: ServerSpec, *extra: str, **kw) -> tuple[StdioMock, Proc]:
        mock = StdioMock(spec, tmp_path / "mocks")
        proc = Proc(mock.command + list(extra), cwd=tmp_path, **kw)
        procs.append(proc)
        return mock, proc

    yield start
    for proc in procs:
        proc.close()


TOOLS = [Tool(f"t{i}", description=f"tool {i}") for i in range(5)]


def test_initialize_with_a_minimal_environment(spawn):  # the 150 ms target: the benchmark's
    mock, proc = spawn(ServerSpec(name="fast", tools=TOOLS))
    reply = proc.request(
        1,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    )
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    assert reply["result"]["capabilities"]["tools"] == {"listChanged": True}
    assert reply["result"]["serverInfo"]["name"] == "fast"


def test_journal_records_argv_verbatim_env_pid_pgid_cwd(spawn, tmp_path):
    mock, proc = spawn(ServerSpec(), "a;b", "$HOME", "--unknown", "two words")
    assert proc.request(1, "ping")["result"] == {}
    (entry,) = mock.process_entries()
    # sys.argv as Python gives it: the script path first, then every argument verbatim
    assert entry.argv == mock.argv + ["a;b", "$HOME", "--unknown", "two words"]
    assert entry.extra["extra_args"] == ["a;b", "$HOME", "--unknown", "two words"]
    assert entry.env == MINIMAL_ENV
    assert entry.pid == proc.p.pid and entry.pgid == proc.p.pid  # started in its own group
    assert entry.extra["cwd"] == str(tmp_path)
    assert mock.pids() == [proc.p.pid]


def test_pgid_is_the_parents_without_a_new_session(spawn):
    mock, proc = spawn(ServerSpec(), new_session=False)
    proc.request(1, "ping")
    assert mock.process_entries()[0].pgid == os.getpgid(0)


def test_tools_list_paginates_and_call_echoes(spawn):
    mock, proc = spawn(ServerSpec(tools=TOOLS, page_size=2))
    names, cursor, pages = [], None, 0
    while True:
        result = proc.request(pages + 10, "tools/list", {"cursor": cursor} if cursor else {})[
            "result"
        ]
        names += [t["name"] for t in result["tools"]]
        pages += 1
        cursor = result.get("nextCursor")
        if not cursor:
            break
    assert names == [t.name for t in TOOLS] and pages == 3
    call = proc.request(2, "tools/call", {"name": "t1", "arguments": {"x": [1, 2]}})
    assert call["result"]["content"] == [{"type": "text", "text": '{"x":[1,2]}'}]
    methods = [e.method for e in mock.journal.entries(kind="rpc")]
    assert methods == ["tools/list"] * 3 + ["tools/call"]
    assert mock.journal.entries("tools/call")[0].params == {
        "name": "t1",
        "arguments": {"x": [1, 2]},
    }


def test_bad_input_gets_the_prescribed_errors_and_is_journalled(spawn):
    mock, proc = spawn(ServerSpec(tools=[Tool("ok", reply=Reply.text("fine"))]))
    proc.send(b"{not json\n")
    assert proc.recv()["error"]["code"] == -32700
    proc.send(b"[1, 2]\n")
    assert proc.recv()["error"]["code"] == -32600
    proc.send({"id": 3, "method": "ping"})  # no jsonrpc member
    assert proc.recv() == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32600, "message": 'Invalid Request: "jsonrpc" must be "2.0"'},
    }
    assert proc.request(4, "resources/read")["error"]["code"] == -32601
    assert proc.request(5, "tools/call", {"name": "missing"})["error"]["code"] == -32602
    assert proc.request(6, "tools/list", {"cursor": "bogus"})["error"]["code"] == -32602
    proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert proc.request(7, "tools/call", {"name": "ok"})["result"]["content"][0]["text"] == "fine"
    entries = mock.journal.entries(kind="rpc")
    assert entries[0].extra["raw"] == "{not json" and len(entries) == 8
    assert proc.p.poll() is None


def test_stderr_flood_works_when_the_client_discards_it(spawn):
    flood = 2 * 1024 * 1024
    mock, proc = spawn(ServerSpec(tools=TOOLS, misbehaviour=Misbehaviour(stderr_flood=flood)))
    assert proc.request(1, "tools/call", {"name": "t0"})["result"]
    events = mock.journal.wait_for(
        kind="event", where=lambda e: e.extra["event"] == "stderr-flooded", count=2
    )
    assert [e.extra["when"] for e in events] == ["start", "tools/call"]
    assert all(e.extra["bytes"] == flood for e in events)


def test_stderr_flood_blocks_a_client_that_never_reads_it(spawn):
    mock, proc = spawn(
        ServerSpec(misbehaviour=Misbehaviour(stderr_flood=4 * 1024 * 1024)), stderr=subprocess.PIPE
    )
    proc.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert proc.line(timeout=0.3) is None  # the pipe is full: the mock is stuck on purpose


def test_exit_at_once(spawn):
    mock, proc = spawn(ServerSpec(misbehaviour=Misbehaviour(exit_at_once=3)))
    assert proc.p.wait(timeout=5) == 3
    assert mock.journal.entries(kind="event")[0].extra == {
        "event": "exit",
        "reason": "exit_at_once",
        "code": 3,
    }


def test_garbage(spawn):
    mock, proc = spawn(ServerSpec(misbehaviour=Misbehaviour(garbage=True)))
    proc.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    line = proc.line()
    assert line is not None
    with pytest.raises(ValueError):
        json.loads(line)
    assert mock.journal.entries("initialize")


def test_oversize_line_at_tools_list(spawn):
    mock, proc = spawn(ServerSpec(tools=TOOLS, misbehaviour=Misbehaviour(oversize_at="tools/list")))
    proc.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    line = proc.line()
    assert len(line) > 1024 * 1024
    assert json.loads(line)["id"] == 1


def test_stall_and_delay(spawn):
    mock, proc = spawn(
        ServerSpec(misbehaviour=Misbehaviour(stall=["initialize"], delays={"ping": 0.1}))
    )
    proc.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    start = time.monotonic()
    assert proc.request(2, "ping")["id"] == 2  # the stalled initialize is never answered
    assert time.monotonic() - start >= 0.09
    assert mock.journal.entries(kind="event")[0].extra["event"] == "stalled"


def test_change_tools_after_call(spawn):
    spec = ServerSpec(
        tools=TOOLS[:1],
        misbehaviour=Misbehaviour(change_tools_after_call=True, changed_tools=[Tool("new")]),
    )
    mock, proc = spawn(spec)
    assert proc.request(1, "tools/call", {"name": "t0"})["result"]
    assert proc.recv() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert [t["name"] for t in proc.request(2, "tools/list")["result"]["tools"]] == ["new"]


def test_sigterm_is_journalled_and_zombie_counts_as_alive(spawn):
    mock, proc = spawn(ServerSpec())
    proc.request(1, "ping")
    pid = proc.p.pid
    assert pid_alive(pid) and process_state(pid) == "running" and pid in pids_in_group(pid)
    proc.p.send_signal(signal.SIGTERM)
    mock.journal.wait_for(kind="event", where=lambda e: e.extra.get("reason") == "signal")
    # Not reaped yet: a zombie, which STDIO-5 counts as left behind.
    deadline = time.monotonic() + 5
    while process_state(pid) != "zombie" and time.monotonic() < deadline:
        select.select([], [], [], 0.01)
    assert process_state(pid) == "zombie" and pid_alive(pid)
    proc.p.wait(timeout=5)
    assert not pid_alive(pid) and mock.live_pids() == []


def test_stdin_closed_ends_the_process(spawn):
    mock, proc = spawn(ServerSpec())
    proc.p.stdin.close()
    assert proc.p.wait(timeout=5) == 0
    assert mock.journal.entries(kind="event")[-1].extra == {
        "event": "exit",
        "reason": "stdin-closed",
    }


# ---- what the STDIO-5/6 and NET-4 cases need ---------------------------------------------------


def test_exit_at_a_method_answers_what_came_before(spawn):
    mock, proc = spawn(ServerSpec(tools=TOOLS, misbehaviour=Misbehaviour(exit_at="tools/list")))
    assert proc.request(1, "initialize", {"protocolVersion": "2025-06-18"})["result"]
    proc.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert proc.line() is None  # no answer: the process ended
    assert proc.p.wait(timeout=5) == 0
    assert mock.journal.entries(kind="event")[-1].extra == {
        "event": "exit",
        "reason": "exit_at",
        "method": "tools/list",
    }


def test_ignore_sigterm_leaves_only_sigkill(spawn):
    mock, proc = spawn(ServerSpec(misbehaviour=Misbehaviour(ignore_sigterm=True)))
    proc.request(1, "ping")
    proc.p.send_signal(signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.p.wait(timeout=0.3)  # a bound on what must not happen: it is still there
    proc.p.kill()
    assert proc.p.wait(timeout=5) == -signal.SIGKILL


def test_linger_keeps_running_after_stdin_closes(spawn):
    mock, proc = spawn(ServerSpec(misbehaviour=Misbehaviour(linger=True)))
    proc.p.stdin.close()
    mock.journal.wait_for(kind="event", where=lambda e: e.extra.get("event") == "lingering")
    assert proc.p.poll() is None
    proc.p.terminate()  # SIGTERM still ends it
    assert proc.p.wait(timeout=5) == 128 + signal.SIGTERM


def test_daemonize_serves_from_a_fork_in_the_same_group(spawn):
    mock, proc = spawn(ServerSpec(misbehaviour=Misbehaviour(daemonize=True)))
    assert proc.p.wait(timeout=5) == 0  # the process we started exits at once
    (event,) = mock.journal.wait_for(
        kind="event", where=lambda e: e.extra.get("event") == "daemonized"
    )
    daemon = event.extra["pid"]
    try:
        assert event.extra["pgid"] == proc.p.pid != daemon  # the leader's group, its own pid
        assert proc.request(1, "ping")["result"] == {}  # the fork answers on the same pipes
    finally:
        os.killpg(proc.p.pid, signal.SIGKILL)


def test_multibyte_text_is_sent_as_utf8(spawn):
    wide = "\u20ac" * 10
    tools = [Tool("t", description=wide)]
    mock, proc = spawn(ServerSpec(tools=tools))
    proc.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    line = proc.line()
    assert line is not None and wide.encode() in line  # three bytes each, not \u escapes


def test_stderr_flood_comes_before_an_exit_at_once(spawn):
    mock, proc = spawn(
        ServerSpec(misbehaviour=Misbehaviour(stderr_flood=4096, exit_at_once=3)),
        stderr=subprocess.PIPE,
    )
    assert proc.p.wait(timeout=5) == 3
    assert proc.p.stderr.read() == b"E" * 4096


def test_garbage_at_one_method_answers_the_others(spawn):
    mock, proc = spawn(
        ServerSpec(
            tools=[Tool("t", reply=Reply.text("fine"))],
            misbehaviour=Misbehaviour(garbage_at="tools/call"),
        )
    )
    assert proc.request(1, "initialize", {})["result"]["serverInfo"]
    proc.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t"}})
    with pytest.raises(ValueError):
        json.loads(proc.line())
    assert mock.journal.entries(kind="event", where=lambda e: e.extra.get("event") == "garbage")


def test_lines_are_raw_utf8_and_meta_is_sent(spawn):
    text = "Zürich €5 中文 😀"
    mock, proc = spawn(
        ServerSpec(
            tools=[
                Tool("t", reply=Reply(content=[{"type": "text", "text": text}], meta={"k": text}))
            ]
        )
    )
    proc.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}})
    line = proc.line()
    assert text.encode() in line  # not \\u escapes: a client decoding with another charset is seen
    result = json.loads(line)["result"]
    assert result["content"][0]["text"] == text and result["_meta"] == {"k": text}
