"""TURN: limits inside one turn.

Strategy: a model that never stops asking (`Step.call(..., repeat=True)`) is the only way
to see the per-turn limit, and the server journals are the count that matters: whatever
the client tells the model, no more than 16 calls may arrive in the turn, summed over all
servers. A client without a limit would loop until the harness gives up, so the turn runs
under a short bound and the approval callback stops approving long after 16 (so that such
a client fails on the count, with a clear message, rather than on the bound alone).
TURN-2 is informational: the case records figures and never fails.
"""

from __future__ import annotations

import json

import pytest

from mcp_host_conformance.harness.hostrun import HarnessTimeout
from mcp_host_conformance.harness.observe import call_outputs, model_requests, output_text
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

LIMIT = 16
STOP_APPROVING_AFTER = 3 * LIMIT


def quick_spec(name: str) -> ServerSpec:
    return ServerSpec(name=name, tools=[Tool("ping", "Answers pong.", reply=Reply.text("pong"))])


def endless_turn(running, timeouts) -> tuple[str, int]:
    """Ask once with a model that keeps calling; (how the turn ended, confirmations shown)."""
    shown = {"n": 0}

    def approve(_confirmation) -> str:
        shown["n"] += 1
        return "y" if shown["n"] <= STOP_APPROVING_AFTER else "n"

    try:
        running.ask("keep going", approve=approve, bound=2 * timeouts.wait)
        ended = "the turn ended"
    except HarnessTimeout:
        ended = f"the turn did not end within {2 * timeouts.wait:g} s"
    return ended, shown["n"]


@pytest.mark.requirements("TURN-1")
def test_no_more_than_16_calls_in_a_turn(host, http_mock, model, timeouts):
    """Every MCP call counts toward the limit of 16 tool calls per turn: when the model asks
    for more, no server receives more than 16 calls in that turn."""
    docs = http_mock(quick_spec("docs"))
    host.add_http("docs", docs)
    running = host.start()
    model.script([Step.call(server="docs", tool="ping", arguments={}, repeat=True)])

    ended, shown = endless_turn(running, timeouts)

    calls = docs.journal.count("tools/call")
    check(
        calls >= 1,
        ids="TURN-1",
        expected="the approved calls sent (precondition)",
        actual=f"{calls} tools/call",
    )
    check(
        calls <= LIMIT,
        ids="TURN-1",
        expected=f"at most {LIMIT} tools/call in one turn",
        actual=f"{calls} tools/call, {shown} confirmations; {ended}",
    )


@pytest.mark.requirements("TURN-1")
def test_limit_counts_calls_to_every_server(host, http_mock, model, timeouts):
    """Every MCP call counts toward the limit of 16 tool calls per turn: calls to two servers
    share one limit (at most 16 in all, not 16 each)."""
    first, second = http_mock(quick_spec("first")), http_mock(quick_spec("second"))
    host.add_http("first", first)
    host.add_http("second", second)
    running = host.start()
    both = [
        Step.call(server="first", tool="ping", arguments={}),
        Step.call(server="second", tool="ping", arguments={}),
    ]
    model.script([Step.calls(both, repeat=True)])

    ended, shown = endless_turn(running, timeouts)

    counts = (first.journal.count("tools/call"), second.journal.count("tools/call"))
    check(
        min(counts) >= 1,
        ids="TURN-1",
        expected="calls to both servers sent (precondition)",
        actual=f"{counts[0]} and {counts[1]} tools/call",
    )
    check(
        sum(counts) <= LIMIT,
        ids="TURN-1",
        expected=f"at most {LIMIT} tools/call in one turn, both servers together",
        actual=(
            f"{counts[0]} + {counts[1]} = {sum(counts)} tools/call, {shown} confirmations; {ended}"
        ),
    )


@pytest.mark.requirements("TURN-2")
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
