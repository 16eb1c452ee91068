"""TURN: limits inside one turn.

Strategy: the per-turn limit is seen only when the model asks for more than 16 calls, so
the mock model asks for three calls in every reply (one to each of two HTTP servers and a
stdio server), and the servers' journals are the count that matters: exactly 16 calls,
summed over the servers, reach them in the turn (the 16th runs, the 17th does not), and
the next question starts a fresh count (16 again). The case reaches its decisive moment
only when the turn has ended, and it never waits on the clock for that: the model keeps
asking for calls for `INSISTENCE` replies, then gives up with a text answer. A host that
ends the turn itself once the limit is reached ends it before that; a host that needs the
model to stop asking never ended the turn on its own, and is reported so, never passed. A
host with no limit at all sends every call the model asks for, and its count says so.
TURN-2 is informational: the case records figures and never fails.
"""

from __future__ import annotations

import json

import pytest

from mcp_host_conformance.harness.cases.observe import (
    call_outputs,
    model_requests,
    output_text,
    reply_calls,
)
from mcp_host_conformance.harness.verdicts.outcomes import check
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

LIMIT = 16
INSISTENCE = 64  # replies asking for calls, 3 each, before the model gives up


def quick_spec(name: str) -> ServerSpec:
    return ServerSpec(name=name, tools=[Tool("ping", "Answers pong.", reply=Reply.text("pong"))])


def insistent_model(servers: list[str]) -> list[Step]:
    """A model asking for one call to each server in every reply, INSISTENCE times, then
    answering in text (so that any host's turn ends, and how it ended is known)."""
    calls = [Step.call(server=name, tool="ping", arguments={}) for name in servers]
    return [Step.calls(calls)] * INSISTENCE + [Step.text("I give up calling.", repeat=True)]


def calls_received(mocks: dict) -> dict[str, int]:
    return {name: mock.journal.count("tools/call") for name, mock in mocks.items()}


def one_turn(running, model, mocks: dict, question: str) -> tuple[dict[str, int], int, int]:
    """Ask once with the insistent model: (tools/call each server received in the turn,
    calls the model asked for, model requests the host sent)."""
    before = calls_received(mocks)
    requests_before = len(model_requests(model))
    model.script(insistent_model(list(mocks)))
    running.ask(question, approve="y")
    after = calls_received(mocks)
    asked = sum(len(calls) for calls in reply_calls(model)[requests_before:])
    requests = len(model_requests(model)) - requests_before
    return {name: after[name] - before[name] for name in mocks}, asked, requests


@pytest.mark.mcphc_requirements("TURN-1")
def test_exactly_16_calls_per_turn_over_all_servers(host, http_mock, stdio_mock, model):
    """Every MCP call counts toward the limit of 16 tool calls per turn: when the model asks
    for more, no server receives more than 16 calls in that turn. Checked as: the turn ends
    with exactly 16 calls received, summed over two HTTP servers and a stdio server (three
    asked for in each reply), and the next turn starts a fresh count."""
    mocks = {"first": http_mock(quick_spec("first")), "second": http_mock(quick_spec("second"))}
    mocks["local"] = stdio_mock(quick_spec("local"))
    host.add_http("first", mocks["first"])
    host.add_http("second", mocks["second"])
    host.add_stdio("local", mocks["local"])
    running = host.start()

    for number in (1, 2):
        received, asked, requests = one_turn(running, model, mocks, f"keep going ({number})")
        total = sum(received.values())
        which = "the first turn" if number == 1 else "the next turn (a fresh count)"
        check(
            asked > LIMIT,
            ids="TURN-1",
            expected=f"the model asked for more than {LIMIT} calls in {which}",
            actual=f"it asked for {asked} in {requests} model request(s)",
        )
        check(
            total == LIMIT and all(received.values()),
            ids="TURN-1",
            expected=(
                f"exactly {LIMIT} tools/call in {which}, summed over the three servers "
                f"(the model asked for {asked})"
            ),
            actual=f"{total} tools/call: {received}",
        )
        check(
            requests <= INSISTENCE,
            ids="TURN-1",
            expected=(
                f"{which} ended by the host once the limit was reached, while the model "
                "still asked for calls"
            ),
            actual=(
                f"the host sent {requests} model requests and ended the turn only after "
                f"the model stopped asking ({INSISTENCE} replies of calls)"
            ),
        )


@pytest.mark.mcphc_requirements("TURN-2")
def test_result_counts_toward_context_budget(host, http_mock, model, record_property):
    """A result counts toward the context budget like any other tool output. (Reported:
    the size of a 48 KiB result as the model receives it, and of the request carrying it.)"""
    result = "RESULT " + "context-budget " * 3300
    docs = http_mock(
        ServerSpec(name="docs", tools=[Tool("fetch", "Fetches a page.", reply=Reply.text(result))])
    )
    host.add_http("docs", docs)
    running = host.start()
    model.script([Step.call(server="docs", tool="fetch", arguments={"page": 1}), Step.text("ok")])
    running.ask("fetch it", approve="y")

    pairs = call_outputs(model)
    received = output_text(pairs[-1][1][0]) if pairs and pairs[-1][1] else ""
    bodies = model_requests(model)
    record_property("TURN-2 result bytes", len(result.encode()))
    record_property("TURN-2 output bytes received by the model", len(received.encode()))
    record_property(
        "TURN-2 next request bytes", len(json.dumps(bodies[-1]).encode()) if len(bodies) > 1 else 0
    )
    record_property("TURN-2 model requests in the turn", len(bodies))
