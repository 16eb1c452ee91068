"""DriverAdapter <-> serve(FakeAdapter) in a subprocess, and drivers that misbehave."""

from __future__ import annotations

import dataclasses
import shlex
import sys
import threading
import time
from pathlib import Path

import pytest

from mcp_host_conformance.harness.contract.adapter import (
    QUESTION_ANSWER,
    Adapter,
    AdapterError,
    CallResult,
    Description,
    HttpServer,
    Shown,
    StartOptions,
    StdioServer,
    Turn,
)
from mcp_host_conformance.harness.contract.driver_wire import (
    PROTOCOL,
    WireError,
    decode,
    decode_server,
    encode,
    encode_server,
)
from mcp_host_conformance.harness.run.driver import DriverAdapter

FAKE = Path(__file__).with_name("fake_driver.py")
BARE = Path(__file__).with_name("bare_driver.py")
REPO = Path(__file__).resolve().parents[2]


def python(code_or_path: str) -> str:
    return f"{shlex.quote(sys.executable)} {code_or_path}"


@pytest.fixture
def driver():
    adapter = DriverAdapter(python(shlex.quote(str(FAKE))), timeout=20)
    yield adapter
    adapter.close()


def options(tmp_path: Path) -> StartOptions:
    return StartOptions(
        home=tmp_path,
        cwd=tmp_path / "project",
        model_url="http://127.0.0.1:9/v1",
        model_key="k",
        connect_timeout=10.0,
        call_timeout=30.0,
        env={"X": "1"},
    )


def test_every_operation_round_trips(driver, tmp_path):
    assert isinstance(driver, Adapter)
    description = driver.describe()
    assert (description.name, description.version) == ("fake", "1.2")
    assert description.profiles == frozenset({"pinning"}) and description.can_cancel

    shown = driver.add_server(
        tmp_path, HttpServer("a", "http://127.0.0.1:1/mcp", {"Authorization": "t"})
    )
    assert shown.text == "added HttpServer a" and shown.paths == (tmp_path / "fake.json",)
    assert (
        driver.add_server(tmp_path, StdioServer("b", "srv", ["x"], {"K": "v"})).text
        == "added StdioServer b"
    )
    assert driver.list_servers(tmp_path).text == "a http://127.0.0.1:1/mcp\nb srv"
    assert driver.remove_server(tmp_path, "b").text == "removed b"

    session = driver.start(options(tmp_path))
    assert [s.name for s in session.statuses] == ["a"] and session.statuses[0].tools == 1
    assert "model at http://127.0.0.1:9/v1" in session.text and "['X']" in session.text

    seen = []
    turn = session.ask(
        "hello", lambda c: seen.append(c) or "y", lambda prompt: seen.append(prompt) or True
    )
    assert seen[0].tool == "echo" and seen[0].arguments == '{\n  "x": 1\n}'
    assert seen[1] == "the call may have run"
    assert (
        turn.question_sent
        and turn.calls[0].status == "completed"
        and turn.calls[0].output == "hello"
    )
    assert turn.confirmations[0].server == "a" and turn.answer == "answer='y' ack=True"

    turn = session.ask("again", lambda c: "", lambda prompt: False)
    assert turn.calls[0].status == "denied" and not turn.question_sent

    stopped = session.stop()
    assert stopped.session_id == "sess-1" and stopped.session_files == (tmp_path / "s.json",)


def test_the_newer_description_fields_travel_over_the_protocol(driver):
    """A driver host declares its status vocabulary and that it has OAuth (CRED-6 then not
    applicable) as an in-process adapter does."""
    description = driver.describe()
    assert description.status_vocabulary == {"failed": r"^Error: "}
    assert description.has_oauth is True
    assert decode(Description, {"name": "h", "version": "1"}).has_oauth is False
    with pytest.raises(WireError, match=r"Description.status_vocabulary.failed: expected str"):
        decode(Description, {"name": "h", "version": "1", "status_vocabulary": {"failed": 1}})


def test_a_host_s_own_question_reaches_the_harness_s_callback(driver, tmp_path):
    session = driver.start(options(tmp_path))
    asked = []
    turn = session.ask(
        "ask me",
        lambda c: "y",
        lambda prompt: True,
        on_question=lambda text: asked.append(text) or "use ./src",
    )
    assert asked == ["Which directory should I use?"]
    assert turn.answer == "the person said 'use ./src'"
    # without a callback the harness's person gives the default answer
    turn = session.ask("ask me", lambda c: "y", lambda prompt: True)
    assert turn.answer == f"the person said {QUESTION_ANSWER!r}"
    session.stop()


def test_timeouts_left_to_the_host_travel_as_null(driver, tmp_path):
    opts = dataclasses.replace(options(tmp_path), connect_timeout=None, call_timeout=None)
    assert encode(opts)["connect_timeout"] is None
    assert decode(StartOptions, encode(opts)) == opts
    session = driver.start(opts)
    assert "timeouts None None" in session.text
    session.stop()


def test_project_config_travels_and_a_driver_without_it_has_none(driver, tmp_path):
    servers = [HttpServer("project-remote", "http://127.0.0.1:1/mcp"), StdioServer("l", "srv")]
    assert driver.project_config(servers) == {
        ".fake/project.json": '{"project-remote": "http://127.0.0.1:1/mcp", "l": "srv"}'
    }
    bare = DriverAdapter(python(shlex.quote(str(BARE))), timeout=20)
    try:
        assert bare.project_config(servers) == {}
        assert bare.describe().name == "bare"  # the driver is still there
    finally:
        bare.close()


def test_cancel_while_ask_is_in_flight(driver, tmp_path):
    session = driver.start(options(tmp_path))
    waiting = threading.Event()
    result = {}

    def ask():
        result["turn"] = session.ask("wait", lambda c: "n", lambda prompt: waiting.set() or True)

    thread = threading.Thread(target=ask)
    thread.start()
    assert waiting.wait(10), "the driver never reached the call"
    session.cancel()
    thread.join(10)
    assert result["turn"].calls[0].status == "unknown"
    session.stop()


def test_a_host_error_is_an_adapter_error_and_the_driver_survives(driver, tmp_path):
    session = driver.start(options(tmp_path))
    with pytest.raises(
        AdapterError, match="the driver's ask failed: RuntimeError: the host fell over"
    ):
        session.ask("crash", lambda c: "y", lambda p: True)
    assert driver.describe().name == "fake"


def test_a_callback_that_raises_surfaces_from_ask(driver, tmp_path):
    session = driver.start(options(tmp_path))

    def approve(confirmation):
        raise AssertionError("the case's own check")

    with pytest.raises(AssertionError, match="the case's own check"):
        session.ask("hello", approve, lambda p: True)


def test_a_hanging_call_fails_within_the_bound_and_the_next_call_respawns(driver, tmp_path):
    session = driver.start(options(tmp_path))
    driver.timeout = 0.5
    started = time.monotonic()
    with pytest.raises(AdapterError, match=r"did not answer ask within 0.5 s"):
        session.ask("hang", lambda c: "y", lambda p: True)
    assert time.monotonic() - started < 5
    driver.timeout = 20
    assert driver.describe().name == "fake"


# ---- broken drivers -----------------------------------------------------------------------------

DIES = "import sys; sys.stdin.readline(); sys.exit(3)"
GARBAGE = (
    "import sys; sys.stdin.readline(); print('hello, I am not JSON', flush=True); sys.stdin.read()"
)
HANGS = "import sys; sys.stdin.read()"
OLD = (
    "import sys, json; m = json.loads(sys.stdin.readline()); "
    "print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], "
    "'result': {'protocol': 'mcp-host-conformance-driver/0'}}), flush=True); sys.stdin.read()"
)


@pytest.mark.parametrize(
    "code, message",
    [
        (DIES, r"the driver exited \(status 3\)"),
        (GARBAGE, r"the driver broke the protocol: not JSON .*'hello, I am not JSON'"),
        (HANGS, r"the driver did not answer initialize within 0.5 s"),
        (OLD, r"speaks protocol 'mcp-host-conformance-driver/0'"),
    ],
    ids=["dies", "garbage", "hangs", "old-protocol"],
)
def test_broken_drivers_give_adapter_errors_within_the_bound(code, message):
    # Only the hanging driver waits out the short bound; the others get the room a loaded
    # machine needs to start Python, so their own error is the one seen.
    bound = 0.5 if code == HANGS else 30.0
    adapter = DriverAdapter(
        python(f"-c {shlex.quote(code)}"), timeout=bound, handshake_timeout=bound
    )
    started = time.monotonic()
    try:
        with pytest.raises(AdapterError, match=message):
            adapter.describe()
    finally:
        adapter.close()
    assert time.monotonic() - started < bound + 10


def test_a_missing_command_is_an_adapter_error():
    with pytest.raises(AdapterError, match="cannot start the driver command"):
        DriverAdapter("/nonexistent/driver --flag").describe()


def test_an_empty_or_unparsable_command_is_refused():
    with pytest.raises(AdapterError, match="empty"):
        DriverAdapter("  ")
    with pytest.raises(AdapterError, match="cannot parse"):
        DriverAdapter("driver 'unclosed")


# ---- the wire format ----------------------------------------------------------------------------


def test_wire_encoding_round_trips_servers_and_options(tmp_path):
    server = StdioServer("b", "srv", ["a;b", "$HOME"], {"K": "v"})
    assert decode_server(encode_server(server)) == server
    opts = options(tmp_path)
    assert decode(StartOptions, encode(opts)) == opts
    assert encode(opts)["home"] == str(tmp_path)


def test_wire_decoding_names_the_bad_field():
    with pytest.raises(WireError, match=r"Description.version: expected str, got int"):
        decode(Description, {"name": "x", "version": 3})
    with pytest.raises(WireError, match="server.type"):
        decode_server({"type": "smoke", "name": "x"})


def test_a_call_status_outside_the_closed_set_is_refused():
    with pytest.raises(WireError, match=r"Turn.calls\[0\].status: expected one of 'completed'"):
        decode(
            Turn, {"question_sent": True, "calls": [{"tool": "t", "status": "ok", "output": ""}]}
        )
    with pytest.raises(ValueError, match="not one of completed, failed, denied"):
        CallResult("t", "ok", "")  # type: ignore[arg-type]  # what an untyped adapter might do


def test_records_are_frozen_and_lists_become_tuples(tmp_path):
    shown = Shown("x", [tmp_path])
    assert shown.paths == (tmp_path,) and shown == Shown("x", (tmp_path,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        shown.text = "y"  # type: ignore[misc]
    server = StdioServer("s", "cmd", ["a"], {"K": "v"})
    assert server.args == ("a",) and decode_server(encode_server(server)) == server
    assert "model_key" not in repr(options(tmp_path)), "a secret must not be in a repr"


def test_protocol_is_versioned():
    assert PROTOCOL == "mcp-host-conformance-driver/1"
    assert REPO.joinpath("docs", "driver-protocol.md").exists()


def test_interactive_add_travels_and_is_optional():
    template = ("/usr/bin/host", "mcp", "add", "{name}", "{url}", "--header", "{header}")
    described = Description("h", "1", interactive_add=template)
    assert encode(described)["interactive_add"] == list(template)
    assert decode(Description, encode(described)) == described
    # A driver written before the field existed: absent means the host has no such command.
    assert decode(Description, {"name": "h", "version": "1"}).interactive_add is None
    assert (
        decode(Description, {"name": "h", "version": "1", "interactive_add": None}).interactive_add
        is None
    )
    with pytest.raises(WireError, match=r"Description.interactive_add\[1\]: expected str"):
        decode(Description, {"name": "h", "version": "1", "interactive_add": ["x", 2]})
