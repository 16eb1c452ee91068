"""TURN-1's monitors judge a turn from the journals alone, and never a turn the harness
itself cut short: a step that ended in an error is marked so in the timeline, and what did
not happen in it is not the host's doing."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcp_host_conformance.harness.cases.timeline import Moment, Timeline
from mcp_host_conformance.harness.monitors.calls import sixteen_let_through
from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.spec import ServerSpec, Tool, tool_marker


def _observed(tmp_path: Path, turn: Moment, cut_by: list[Moment] | None = None) -> Observed:
    """One turn in which the model asked for two calls of an offered tool and the person
    said yes to both; the server received one."""
    server = SimpleNamespace(
        spec=ServerSpec(tools=[Tool("ping")]), marker_token="tok-docs", journal=Journal()
    )
    server.journal.record(
        Entry(
            kind="rpc",
            method="tools/call",
            time=turn.began + 0.03,
            params={"name": "ping", "arguments": {}},
            extra={"message_kind": "request"},
        )
    )
    offered = {
        "type": "function",
        "name": "mcp_docs_ping",
        "description": f"Answers pong. ({tool_marker('tok-docs', 'ping')})",
    }
    model = SimpleNamespace(journal=Journal())
    calls = [{"call_id": f"c{n}", "name": "mcp_docs_ping", "arguments": "{}"} for n in (1, 2)]
    model.journal.record(
        Entry(
            kind="http",
            http_method="POST",
            path="/v1/responses",
            time=turn.began + 0.01,
            extra={"body": {"tools": [offered], "input": []}, "reply_calls": calls},
        )
    )
    answers = [Moment("approval", turn.began + 0.02, turn.began + 0.02, 0, "y")] * 2
    host = SimpleNamespace(
        bound={"docs": server},
        moments=[turn, *answers, *(cut_by or [])],
        seen=[],
        config_paths=[],
        session_files=[],
        servers={},
    )
    return Observed(
        [host],  # type: ignore[list-item]
        [server],
        model,
        None,
        tmp_path,
        tmp_path,
        frozenset(),
    )


def _turn(whole: bool = True) -> Moment:
    now = time.time()
    return Moment("ask", now, now + 1, 0, "look it up", whole=whole)


def test_approved_calls_that_never_reach_their_server_are_seen(tmp_path: Path) -> None:
    (finding,) = sixteen_let_through.check(_observed(tmp_path, _turn()))
    assert finding.rule == "TURN-1" and "and 1 tools/call" in finding.actual


def test_a_tool_never_called_in_the_session_is_not_judged(tmp_path: Path) -> None:
    """Something of the session may keep a tool from its server (a token, a review): only a
    tool that reached its server in the session shows the limit stopping it."""
    observed = _observed(tmp_path, _turn())
    observed.served[0].mock.journal = Journal()
    assert list(sixteen_let_through.check(observed)) == []


def test_a_turn_the_harness_cut_short_is_not_judged(tmp_path: Path) -> None:
    assert list(sixteen_let_through.check(_observed(tmp_path, _turn(whole=False)))) == []


def test_a_cancelled_turn_is_not_judged(tmp_path: Path) -> None:
    turn = _turn()
    cancel = Moment("cancel", turn.began + 0.5, turn.began + 0.6, 0)
    assert list(sixteen_let_through.check(_observed(tmp_path, turn, [cancel]))) == []


def test_a_step_that_raised_is_marked_not_whole() -> None:
    timeline = Timeline()
    with timeline.step("ask", 0, "fine"):
        pass
    with pytest.raises(TimeoutError), timeline.step("ask", 0, "hung"):
        raise TimeoutError("the harness's bound")
    assert [(m.text, m.whole) for m in timeline] == [("fine", True), ("hung", False)]
