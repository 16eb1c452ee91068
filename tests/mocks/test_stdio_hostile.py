"""The stdio mock against hostile lines: in-process (fuzzed) and as a real process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks import stdio_server
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool
from mcp_host_conformance.mocks.stdio_server import MAX_LINE_BYTES, StdioMock, StdioServer
from tests.mocks.test_stdio_server import MINIMAL_ENV, Proc

SPEC = ServerSpec(tools=[Tool("t", reply=Reply.echo_arguments())])


def lines_out(spec: ServerSpec, *lines: bytes) -> list[bytes]:
    out = io.BytesIO()
    server = StdioServer(spec, None, out=out)
    for line in lines:
        server.handle_line(line)
    return out.getvalue().splitlines()


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"[" * 100_000, "nested"),
        (b'{"a":' * 100_000, "nested"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}', "UTF-8"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\\udc00"}', "surrogate"),
        (b"[NaN]", "malformed"),
    ],
)
def test_a_hostile_line_is_a_parse_error_naming_why(line, reason):
    (reply,) = lines_out(SPEC, line + b"\n")
    error = json.loads(reply)["error"]
    assert error["code"] == -32700 and reason in error["message"]


def test_echoed_arguments_that_are_odd_but_valid_still_encode():
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "t", "arguments": {"x": "\u2028\x00 \U0001f600", "n": 10**300}},
    }
    (reply,) = lines_out(SPEC, json.dumps(call).encode() + b"\n")
    assert (
        json.loads(json.loads(reply)["result"]["content"][0]["text"]) == call["params"]["arguments"]
    )


@settings(deadline=None)
@given(st.binary(max_size=2000))
def test_fuzz_any_line_gets_at_most_one_json_rpc_reply(line):
    out = lines_out(SPEC, line.replace(b"\n", b" ") + b"\n")
    assert len(out) <= 1
    for reply in out:
        message = json.loads(reply)
        assert message["jsonrpc"] == "2.0"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.just("2.0") | json_values,
            "id": json_values,
            "method": st.sampled_from(["initialize", "tools/list", "tools/call", "ping"])
            | json_values,
            "params": json_values,
        },
    )
)
def test_fuzz_any_message_object_is_answered_or_ignored_cleanly(message):
    for reply in lines_out(SPEC, json.dumps(message).encode() + b"\n"):
        assert json.loads(reply)["jsonrpc"] == "2.0"


# ---- as a real process ----------------------------------------------------------------------


@pytest.fixture
def proc(tmp_path):
    mock = StdioMock(ServerSpec(tools=[Tool("t")]), tmp_path / "mocks")
    process = Proc(mock.command, cwd=tmp_path)
    yield mock, process
    process.close()


def test_an_overlong_line_is_skipped_unread_and_the_mock_carries_on(proc):
    mock, process = proc
    process.send(b"x" * (MAX_LINE_BYTES + 10) + b"\n")
    error = process.recv(timeout=30)["error"]
    assert error["code"] == -32700 and "over" in error["message"]
    assert process.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    refused = mock.journal.entries(kind="rpc")[0]
    assert refused.extra["message_kind"] == "unreadable" and refused.body_size > MAX_LINE_BYTES


def test_deep_nesting_does_not_crash_the_process(proc):
    mock, process = proc
    process.send(b"[" * 100_000 + b"\n")
    assert "nested" in process.recv()["error"]["message"]
    assert process.request(2, "ping")["result"] == {}
    assert process.p.poll() is None
    assert mock.journal.entries(kind="rpc")[0].extra["message_kind"] == "unreadable"


def test_stdio_drop_close_ends_the_process_after_reading_the_call(tmp_path):
    mock = StdioMock(
        ServerSpec(tools=[Tool("t")], misbehaviour=Misbehaviour(drop_call="close")), tmp_path
    )
    process = subprocess.Popen(
        mock.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=MINIMAL_ENV,
        cwd=tmp_path,
    )
    try:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
        out, _ = process.communicate(json.dumps(call).encode() + b"\n", timeout=30)
        assert out == b"" and process.returncode == 0
        assert mock.journal.count("tools/call") == 1
        assert mock.journal.entries(kind="event")[-1].extra == {
            "event": "exit",
            "reason": "call-dropped-close",
        }
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert os.path.exists(mock.journal_path)


def test_the_stdio_mock_never_imports_the_sdk_or_a_web_stack(tmp_path):
    """`import mcp` costs ~0.4 s a start, `typing` ~5 ms, `inspect` ~15 ms; the stdio mock's
    real start (StdioMock.command: `python -S` and the entry script) loads none of them."""
    mock = StdioMock(ServerSpec(name="lean", tools=[Tool("t", "d")]), tmp_path)
    done = subprocess.run(
        [mock.command[0], "-X", "importtime", *mock.command[1:]],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=MINIMAL_ENV,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "mcp_host_conformance.mocks.stdio_server" in imported, done.stderr[-2000:]
    heavy = ("mcp", "pydantic", "httpx", "httpx2", "starlette", "anyio", "typing", "inspect")
    assert not imported & set(heavy), sorted(imported & set(heavy))
    assert len(mock.process_entries()) == 1


def test_a_deferred_module_is_the_real_one_at_first_use():
    """The stand-in the entry script binds `inspect` to imports it when first used."""
    entry = os.path.dirname(stdio_server.SCRIPT)
    code = (
        f"import sys; sys.path.insert(0, {entry!r}); import stdio_entry;"
        "stdio_entry.defer('inspect'); import inspect; stand_in = inspect;"
        "print(inspect.signature(len), sys.modules['inspect'] is not stand_in,"
        " stand_in.isfunction is sys.modules['inspect'].isfunction)"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert out.stdout.split() == ["(obj,", "/)", "True", "True"], out.stdout + out.stderr
