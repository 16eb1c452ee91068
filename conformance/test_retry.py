"""RETRY: uncertain outcomes.

Strategy: a call whose outcome is unknown must never be sent again, by the client or by a
library under it, so each server's journal is watched across a grace period after the turn,
across the next question (a retry deferred to the next turn is still a retry) and across a
restart of the host in a new process with the session reopened (a retry "on recovery" is
one too). Every way a call ends `unknown` that a host or its libraries treat differently is
its own server: a timeout over HTTP and stdio, a reset, a close, an oversized answer, a 5xx
status, a garbled answer, a 404 for a session the server lost (a library that initializes
again and re-sends has sent it twice), a stdio server that exits, and an SSE stream the
server closes before the result (SSE polling: resuming it with GET and Last-Event-ID is not
resending; POSTing the call again is).

The acknowledgement rule is checked from inside the acknowledgement callback: it runs at
the moment the client asks, so it records how many requests the model service had received
by then; the question must not have gone out before the answer. Whether the call ended
`unknown` at all is another rule's (RES-6/7/8/9): a `precondition` under that rule.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from mcp_host_conformance.harness.cases.observe import (
    model_requests,
    reply_calls,
    stays_quiet,
    user_texts,
)
from mcp_host_conformance.harness.verdicts.outcomes import check, precondition
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

# (name, transport, misbehaviour, the rule that makes the call unknown)
CAUSES: list[tuple[str, str, dict[str, Any], str]] = [
    ("timeout", "sse", {"stall": ["tools/call"]}, "RES-6"),
    ("stdio-timeout", "stdio", {"stall": ["tools/call"]}, "RES-6"),
    ("reset", "sse", {"drop_call": "reset"}, "RES-7"),
    ("closed", "json", {"drop_call": "close"}, "RES-7"),
    ("status-502", "json", {"call_http_status": 502}, "RES-7"),
    ("garbled", "sse", {"garbage_at": "tools/call"}, "RES-7"),
    ("stdio-exits", "stdio", {"drop_call": "close"}, "RES-7"),
    ("oversized", "json", {"oversize_at": "tools/call"}, "RES-8"),
    # the server lost the session: 404 "Session not found" (an SDK may re-initialize and
    # send the call again on its own)
    ("session-lost", "json", {"call_session_lost": True}, "RES-7"),
]
# SSE polling: a resuming client gets the result (completed), one that does not says unknown;
# either way the call is POSTed once.
# the SSE stream closed before the result: resumed once, twice, or the resumption refused
POLLED = [("polled", "deliver"), ("polled-twice", "close-again"), ("unresumable", "refuse-resume")]
# What an acknowledgement prompt must convey: the earlier call may already have run.
MAY_HAVE_RUN = re.compile(
    r"\b(may|might|could|possibly|perhaps)\b|unknown|uncertain|unclear|not sure|not known",
    re.IGNORECASE,
)


def tool_of(server: str) -> str:
    """Each server's tool has a name of its own: a host that refuses tools of the same name
    on two servers (EXP-2's concern, not this file's) still sends every call here."""
    return "create_" + re.sub(r"[^A-Za-z0-9]", "_", server)


def uncertain_spec(transport: str, tool: str = "create", **bad: Any) -> ServerSpec:
    return ServerSpec(
        name="docs",
        tools=[Tool(tool, "Creates a ticket.", reply=Reply.text("created"))],
        response_mode="json" if transport == "json" else "sse",
        misbehaviour=Misbehaviour(**bad),
    )


def serve(http_mock, stdio_mock, host, name: str, transport: str, **bad: Any):
    spec = uncertain_spec(transport, tool_of(name), **bad)
    mock = (stdio_mock if transport == "stdio" else http_mock)(spec)
    if transport == "stdio":
        host.add_stdio(name, mock)
    else:
        host.add_http(name, mock)
    return mock


def quick_timeout(timeouts) -> float:
    """The call timeout of the cases here: a quarter of the usual one. Every call in them
    is meant to end `unknown`, and any call that took longer than this would end `unknown`
    all the same, so a slow machine changes no verdict; a timeout costs less."""
    return timeouts.call / 4


def model_posts(model) -> int:
    return len(model_requests(model))


def create(server: str) -> Step:
    return Step.call(
        server=server, tool=tool_of(server), arguments={"title": f"ticket for {server}"}
    )


def ask_unknown(running, model, server: str, rid: str, question: str = "create a ticket"):
    """One turn whose only call (of `server`) must end unknown (a precondition under `rid`)."""
    model.script([create(server), Step.text("first answer")])
    turn = running.ask(question, approve="y", acknowledge=True)
    statuses = [c.status for c in turn.calls]
    precondition(
        statuses == ["unknown"],
        ids=rid,
        expected=f"the call to {server} ends unknown (what follows it is this case's rule)",
        actual=f"the client reported {statuses}",
    )
    return turn


# ---- RETRY-1 -------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("RETRY-1")
def test_uncertain_call_is_never_sent_twice(
    host, restarted_host, http_mock, stdio_mock, model, timeouts
):
    """A call is never sent twice: after a timeout, a dropped connection or an oversized
    response the server has received exactly one `tools/call` for it, from the client and
    from any library it uses: over HTTP (timeout, reset, close, 5xx, garbled, oversized, an
    SSE stream closed before the result, a 404 for a session the server lost) and stdio
    (timeout, the server exits); watched
    across a grace period, the next question, and a restart of the host in a new process
    that reopens the session."""
    mocks = {
        name: serve(http_mock, stdio_mock, host, name, transport, **bad)
        for name, transport, bad, _rid in CAUSES
    }
    for name, variant in POLLED:
        mocks[name] = serve(http_mock, stdio_mock, host, name, "sse", poll_call=variant)
    running = host.start(call_timeout=quick_timeout(timeouts))
    model.script([Step.calls([create(name) for name in mocks]), Step.text("first answer")])
    turn = running.ask("create tickets everywhere", approve="y")

    rules = {name: rid for name, _t, _b, rid in CAUSES} | {name: "RES-7" for name, _ in POLLED}
    sent_in_turn = [name for name, mock in mocks.items() if mock.journal.count("tools/call")]
    precondition(
        bool(sent_in_turn),
        ids=sorted({*rules.values()}),
        expected="the approved calls sent (what follows them is this case's rule)",
        actual=f"none sent; the client reported {[c.status for c in turn.calls]}",
    )

    def counts() -> dict[str, int]:
        return {name: mock.journal.count("tools/call") for name, mock in mocks.items()}

    # One grace period for all: any resend would have arrived at one of them by then.
    stays_quiet(mocks["timeout"].journal, timeouts.grace, "nothing/expected")
    after_turn = counts()
    model.script([Step.text("second answer")])
    running.ask("anything new?", approve="y", acknowledge=True)
    after_next = counts()
    stopped = running.stop()
    again = restarted_host().start(resume=stopped.session_id)
    model.script([Step.text("third answer")])
    before = model_posts(model)
    again.ask("and after the restart?", approve="y", acknowledge=True)
    check(
        model_posts(model) > before,
        ids="RETRY-1",
        expected="the restarted host asks the model (the watch after the restart is not vacuous)",
        actual="no model request after the restart",
    )
    again.stop()
    after_restart = counts()
    # A host may end the turn at the first call that goes wrong, so some calls of the reply
    # are never sent: every call that was sent is checked, then the others are a
    # precondition (a resend anywhere fails whatever else was not observed).
    resent = {
        name: (after_turn[name], after_next[name], after_restart[name])
        for name in mocks
        if after_restart[name]
        and (after_turn[name], after_next[name], after_restart[name]) != (1, 1, 1)
    }
    check(
        not resent,
        ids="RETRY-1",
        expected=(
            f"exactly one tools/call at each server, across {timeouts.grace:g} s, the next "
            "question and a restart (a resumed SSE stream is a GET, not a resend)"
        ),
        actual="; ".join(
            f"{name}: {a} after the turn, {b} after the next question, {c} after the restart"
            for name, (a, b, c) in resent.items()
        ),
    )
    for name in mocks:
        precondition(
            after_restart[name] > 0,
            ids=rules[name],
            expected=f"the approved call to {name} sent (what follows it is this case's rule)",
            actual=f"never sent; the client reported {[c.status for c in turn.calls]}",
        )


@pytest.mark.mcphc_requirements("RETRY-1")
def test_a_call_the_model_makes_again_is_its_own_call(host, http_mock, model, timeouts):
    """A call is never sent twice by the host or its libraries; a call the model itself makes
    again, told the first one failed (an invited retry, as hosts that ask the model to try
    again invite), is the model's second call, not a resend: each of the model's calls
    reaches the server once, never more (the rule monitors count them the same way)."""
    busy = Reply.tool_error("Error: the ticket queue is busy, try again")
    docs = http_mock(
        ServerSpec(name="docs", tools=[Tool("create", "Creates a ticket.", reply=busy)])
    )
    host.add_http("docs", docs)
    running = host.start()
    model.script(
        [
            Step.call(server="docs", tool="create", arguments={"title": "t"}, retry_on_error=True),
            Step.text("first answer"),
        ]
    )
    running.ask("create a ticket", approve="y")
    # A host may end its turn at the failed call: the model then calls again on the next.
    model.script([Step.text("second answer")])
    running.ask("anything else?", approve="y")
    stays_quiet(docs.journal, timeouts.grace, "nothing/expected")

    made = sum(len(calls) for calls in reply_calls(model))
    sent = docs.journal.count("tools/call")
    precondition(
        made == 2,
        ids="RES-5",
        expected="the first call's failure told to the model (it then calls again)",
        actual=f"the model made {made} call(s): the failure did not read as one",
    )
    check(
        sent <= made,
        ids="RETRY-1",
        expected=f"at most one tools/call for each of the model's {made} calls",
        actual=f"the server received {sent} tools/call",
    )


# ---- RETRY-2 -------------------------------------------------------------------------------

# The causes after which the acknowledgement is checked (each one a host may handle apart).
ACK_CAUSES = ["closed", "timeout", "stdio-exits", "oversized", "status-502"]


@pytest.mark.mcphc_requirements("RETRY-2")
def test_next_question_waits_for_acknowledgement(host, http_mock, stdio_mock, model, timeouts):
    """After an `unknown` result, the user's next question is not sent until the user
    acknowledges that the call may already have run: after a lost connection, a timeout, a
    stdio server that exited, an oversized answer and a 5xx status."""
    causes = [c for c in CAUSES if c[0] in ACK_CAUSES]
    for name, transport, bad, _rid in causes:
        serve(http_mock, stdio_mock, host, name, transport, **bad)
    running = host.start(call_timeout=quick_timeout(timeouts))
    problems = []
    for name, _transport, _bad, rid in causes:
        ask_unknown(running, model, name, rid)
        before = model_posts(model)
        asked: list[tuple[str, int]] = []

        def acknowledge(prompt: str, asked: list[tuple[str, int]] = asked) -> bool:
            asked.append((prompt, model_posts(model)))
            return True

        model.script([Step.text("second answer")])
        question = f"the question after {name}"
        running.ask(question, approve="y", acknowledge=acknowledge)
        sent = [
            b for b in model_requests(model)[before:] if any(question in t for t in user_texts(b))
        ]
        if not asked:
            problems.append(f"after {name}: no acknowledgement asked before the next question")
            continue
        prompt, seen = asked[0]
        if seen != before:
            problems.append(
                f"after {name}: {seen - before} model request(s) sent before the acknowledgement"
            )
        if MAY_HAVE_RUN.search(prompt) is None:
            problems.append(
                f"after {name}: the prompt {prompt[:200]!r} does not say it may have run"
            )
        if not sent:
            problems.append(f"after {name}: the question never sent once acknowledged")
    check(
        not problems,
        ids="RETRY-2",
        expected=(
            "after each unknown outcome, an acknowledgement that the call may already have run, "
            "before the next question goes out; the question sent once acknowledged"
        ),
        actual="; ".join(problems),
    )


@pytest.mark.mcphc_needs_cancel
@pytest.mark.mcphc_requirements("RETRY-2")
def test_cancelled_call_needs_acknowledgement(host, http_mock, stdio_mock, model, timeouts):
    """After an `unknown` result, the user's next question is not sent until the user
    acknowledges that the call may already have run: also when the user cancelled the call
    (the server may have acted on it all the same)."""
    docs = serve(http_mock, stdio_mock, host, "docs", "sse", stall=["tools/call"])
    long_timeout = 4 * timeouts.wait  # only the cancel can end the call in time
    running = host.start(call_timeout=long_timeout)
    model.script([create("docs"), Step.text("first answer")])

    def cancel_when_sent() -> None:
        try:
            docs.journal.wait_for("tools/call", timeout=timeouts.wait)
        except AssertionError:
            return
        running.cancel()

    helper = threading.Thread(target=cancel_when_sent, name="RETRY-2 cancel", daemon=True)
    helper.start()
    turn = running.ask("create a ticket", approve="y", bound=long_timeout + 2 * timeouts.wait)
    helper.join(timeouts.wait)
    statuses = [c.status for c in turn.calls]
    precondition(
        statuses == ["unknown"],
        ids="RES-9",
        expected="the cancelled call ends unknown (what follows it is this case's rule)",
        actual=f"the client reported {statuses}",
    )
    before = model_posts(model)
    asked: list[int] = []
    model.script([Step.text("second answer")])
    running.ask(
        "the question after a cancel",
        approve="y",
        acknowledge=lambda _prompt: asked.append(model_posts(model)) is None,
    )
    check(
        asked != [] and asked[0] == before,
        ids="RETRY-2",
        expected="an acknowledgement asked before the next question after a cancelled call",
        actual="none asked" if not asked else f"{asked[0] - before} request(s) sent before it",
    )


# ---- RETRY-3 -------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("RETRY-3")
def test_declined_acknowledgement_keeps_question_and_session(host, http_mock, stdio_mock, model):
    """Declining the acknowledgement keeps the question unsent and the session usable: a
    later acceptance sends it, without a restart (also after declining twice)."""
    serve(http_mock, stdio_mock, host, "docs", "sse", drop_call="close")
    running = host.start()
    ask_unknown(running, model, "docs", "RES-7")
    before = model_posts(model)
    question = "second question 9b7c"
    model.script([Step.text("second answer")])

    declined = [running.ask(question, approve="y", acknowledge=False) for _ in range(2)]
    after_decline = model_posts(model)
    check(
        after_decline == before and not any(t.question_sent for t in declined),
        ids="RETRY-3",
        expected="a declined acknowledgement keeps the question unsent (twice)",
        actual=(
            f"{after_decline - before} model request(s) after declining; "
            f"question_sent={[t.question_sent for t in declined]}"
        ),
    )
    prompts_before = len(host.acknowledgements)

    accepted = running.ask(question, approve="y", acknowledge=True)
    bodies = model_requests(model)[after_decline:]
    check(
        len(host.acknowledgements) > prompts_before,
        ids="RETRY-3",
        expected="the acknowledgement asked again at the next question (no restart)",
        actual="the client did not ask again",
    )
    check(
        len(bodies) == 1 and accepted.question_sent,
        ids="RETRY-3",
        expected="one model request once accepted, in the same session",
        actual=f"{len(bodies)} model request(s); question_sent={accepted.question_sent}",
    )
    copies = sum(question in t for t in user_texts(bodies[-1])) if bodies else 0
    check(
        copies == 1,
        ids="RETRY-3",
        expected="the question sent once",
        actual=f"{copies} cop(ies) in the request",
    )
