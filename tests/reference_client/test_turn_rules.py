"""`TurnRules`: TURN-1 and RETRY-2/3 without any I/O; and a pending acknowledgement that
survives the session file and a restart (the reference host's suite-power bug)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mcp_host_conformance.harness.contract.adapter import HttpServer, StartOptions
from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool
from mcp_host_conformance.reference_client import results
from mcp_host_conformance.reference_client.adapter import ReferenceAdapter
from mcp_host_conformance.reference_client.sessions import INTERRUPTED
from mcp_host_conformance.reference_client.turn_rules import (
    MAX_CALLS_PER_TURN,
    TurnRules,
    pending_in_history,
)


def test_sixteen_calls_run_then_refused_then_the_model_is_asked_to_finish() -> None:
    rules = TurnRules()
    rules.start_turn()
    decisions = [rules.request_call() for _ in range(MAX_CALLS_PER_TURN + 2)]
    assert decisions == ["run"] * MAX_CALLS_PER_TURN + ["refuse", "refuse"]
    assert rules.after_outputs() == "finish"
    assert rules.request_call() == "refuse"  # still calling while asked to finish
    assert rules.after_outputs() == "stop"
    rules.start_turn()
    assert rules.request_call() == "run" and rules.after_outputs() == "continue"


def test_unknown_needs_an_acknowledgement_that_a_decline_keeps_pending() -> None:
    rules = TurnRules()
    assert rules.before_question() == "send"
    for status in ("completed", "failed", "denied", "output_limit"):
        rules.record_outcome(status)  # type: ignore[arg-type]
        assert rules.before_question() == "send"
    rules.record_outcome("unknown")
    assert rules.before_question() == "acknowledge"
    assert rules.acknowledge(False) is False and rules.before_question() == "acknowledge"
    assert rules.acknowledge(True) is True and rules.before_question() == "send"


def unknown_output(call_id: str) -> dict:
    output = results.model_output(results.unknown("the connection was lost"))
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def test_pending_in_history() -> None:
    question = {"type": "message", "role": "user", "content": "q"}
    call = {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}
    done = {"type": "function_call_output", "call_id": "c", "output": "Status: completed\nok"}
    assert not pending_in_history([])
    assert not pending_in_history([question, call, done])
    assert pending_in_history([question, call, unknown_output("c")])
    assert pending_in_history(
        [
            question,
            call,
            {
                "type": "function_call_output",
                "call_id": "c",
                "output": results.model_output(INTERRUPTED),
            },
        ]
    )
    # A question sent after it is the proof it was acknowledged.
    assert not pending_in_history([question, call, unknown_output("c"), question])
    tricky = {
        "type": "function_call_output",
        "call_id": "c",
        "output": "Status: completed\nStatus: unknown",
    }
    assert not pending_in_history([question, call, tricky])


def test_a_pending_acknowledgement_survives_a_restart(tmp_path: Path) -> None:
    adapter = ReferenceAdapter()
    flaky = ServerSpec(
        name="flaky", tools=[Tool("create")], misbehaviour=Misbehaviour(drop_call="close")
    )
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    with HttpMock(flaky) as mock, MockResponses() as model:
        options = StartOptions(
            home=home,
            cwd=cwd,
            model_url=model.url,
            model_key=model.api_key,
            connect_timeout=5.0,
            call_timeout=5.0,
        )
        adapter.add_server(home, HttpServer("flaky", mock.url))
        model.script([Step.call(server="flaky", tool="create", arguments={}), Step.text("hm")])
        session = adapter.start(options)
        try:
            turn = session.ask("create it", lambda c: "y", lambda p: True)
        finally:
            stopped = session.stop()  # quit without acknowledging
        assert [c.status for c in turn.calls] == ["unknown"]
        requests = len(model.requests())

        resumed = adapter.start(dataclasses.replace(options, resume=stopped.session_id))
        try:
            assert "acknowledge" in resumed.text  # said at once, when reopening
            prompts: list[str] = []
            declined = resumed.ask(
                "did it work?", lambda c: "y", lambda p: prompts.append(p) or False
            )
            assert not declined.question_sent and len(prompts) == 1
            assert len(model.requests()) == requests  # RETRY-2: nothing went out
            model.script([Step.text("it may have")])
            accepted = resumed.ask("did it work?", lambda c: "y", lambda p: True)
            assert accepted.question_sent and accepted.answer == "it may have"
            later = resumed.ask("thanks", lambda c: "y", lambda p: False)
            assert later.question_sent and not later.acknowledgements
        finally:
            second = resumed.stop()

        # acknowledged before the restart: nothing pending
        third = adapter.start(dataclasses.replace(options, resume=second.session_id))
        try:
            assert third.ask("bye", lambda c: "y", lambda p: False).question_sent
        finally:
            third.stop()
        assert mock.journal.count("tools/call") == 1
