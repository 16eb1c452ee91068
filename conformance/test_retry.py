"""RETRY: uncertain outcomes.

Strategy: a call whose outcome is unknown must never be sent again, by the client or by a
library under it, so the server's journal is watched across a grace period after the turn
and across the next question (a retry deferred to the next turn is still a retry). The
acknowledgement rule is checked from inside the acknowledgement callback: it runs at the
moment the client asks, so it records how many requests the model service had received by
then; the question must not have gone out before the answer.
"""

from __future__ import annotations

import re

import pytest

from mcp_host_conformance.harness.observe import model_requests, user_texts
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.mocks.journal import JournalTimeout
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

CAUSES = {
    "timeout": Misbehaviour(stall=["tools/call"]),
    "reset": Misbehaviour(drop_call="reset"),
    "close": Misbehaviour(drop_call="close"),
    "oversize": Misbehaviour(oversize_at="tools/call"),
}
# What an acknowledgement prompt must convey: the earlier call may already have run.
MAY_HAVE_RUN = re.compile(
    r"\b(may|might|could|possibly|perhaps)\b|unknown|uncertain|unclear|not sure|not known",
    re.IGNORECASE,
)


def uncertain_spec(bad: Misbehaviour) -> ServerSpec:
    return ServerSpec(
        name="docs",
        tools=[Tool("create", "Creates a ticket.", reply=Reply.text("created"))],
        misbehaviour=bad,
    )


def model_posts(model) -> int:
    return len(model_requests(model))


def start_with_unknown(host, mock, model, stdio=False, require=True):
    """Configure `mock`, start, and run one turn whose only call should end `unknown`
    (required unless `require` is false); (running, turn)."""
    if stdio:
        host.add_stdio("docs", mock)
    else:
        host.add_http("docs", mock)
    running = host.start()
    model.script(
        [
            Step.call(server="docs", tool="create", arguments={"title": "t-1"}),
            Step.text("first answer"),
        ]
    )
    turn = running.ask("create a ticket", approve="y")
    statuses = [c.status for c in turn.calls]
    assert not require or statuses == ["unknown"], (
        f"precondition: the call should end unknown, the client reported {statuses}"
    )
    return running, turn


@pytest.mark.requirements("RETRY-1")
@pytest.mark.parametrize("cause", ["timeout", "reset", "close", "oversize", "stdio-timeout"])
def test_uncertain_call_is_never_sent_twice(host, http_mock, stdio_mock, model, timeouts, cause):
    """A call is never sent twice: after a timeout, a dropped connection or an oversized
    response the server has received exactly one `tools/call` for it, from the client and
    from any library it uses."""
    stdio = cause.startswith("stdio-")
    spec = uncertain_spec(CAUSES[cause.removeprefix("stdio-")])
    mock = stdio_mock(spec) if stdio else http_mock(spec)
    running, _turn = start_with_unknown(host, mock, model, stdio=stdio, require=False)

    try:
        mock.journal.wait_for("tools/call", count=2, timeout=timeouts.grace)
    except JournalTimeout:
        pass
    after_turn = mock.journal.count("tools/call")
    model.script([Step.text("second answer")])
    running.ask("anything new?", approve="y", acknowledge=True)
    after_next = mock.journal.count("tools/call")
    check(
        after_turn == 1 and after_next == 1,
        ids="RETRY-1",
        expected=(
            f"exactly one tools/call after a {cause}, "
            f"across {timeouts.grace:g} s and the next question"
        ),
        actual=f"{after_turn} after the turn, {after_next} after the next question",
    )


@pytest.mark.requirements("RETRY-2")
def test_next_question_waits_for_acknowledgement(host, http_mock, model):
    """After an `unknown` result, the user's next question is not sent until the user
    acknowledges that the call may already have run."""
    docs = http_mock(uncertain_spec(Misbehaviour(drop_call="close")))
    running, _turn = start_with_unknown(host, docs, model)
    before = model_posts(model)
    asked: list[tuple[str, int]] = []

    def acknowledge(prompt: str) -> bool:
        asked.append((prompt, model_posts(model)))
        return True

    model.script([Step.text("second answer")])
    question = "second question 5e1d"
    running.ask(question, approve="y", acknowledge=acknowledge)

    check(
        asked != [],
        ids="RETRY-2",
        expected="an acknowledgement asked before the next question",
        actual="none asked",
    )
    prompt, seen = asked[0]
    check(
        seen == before,
        ids="RETRY-2",
        expected="no model request before the acknowledgement",
        actual=f"{seen - before} model request(s) sent before the acknowledgement was answered",
    )
    check(
        MAY_HAVE_RUN.search(prompt) is not None,
        ids="RETRY-2",
        expected="the acknowledgement says the earlier call may already have run",
        actual=f"the prompt was {prompt[:200]!r}",
    )
    sent = [b for b in model_requests(model)[before:] if any(question in t for t in user_texts(b))]
    check(
        sent != [],
        ids="RETRY-2",
        expected="the question sent once acknowledged",
        actual="it was never sent",
    )


@pytest.mark.requirements("RETRY-3")
def test_declined_acknowledgement_keeps_question_and_session(host, http_mock, model):
    """Declining the acknowledgement keeps the question unsent and the session usable: a
    later acceptance sends it, without a restart."""
    docs = http_mock(uncertain_spec(Misbehaviour(drop_call="close")))
    running, _turn = start_with_unknown(host, docs, model)
    before = model_posts(model)
    question = "second question 9b7c"
    model.script([Step.text("second answer")])

    declined = running.ask(question, approve="y", acknowledge=False)
    after_decline = model_posts(model)
    check(
        after_decline == before and not declined.question_sent,
        ids="RETRY-3",
        expected="a declined acknowledgement keeps the question unsent",
        actual=(
            f"{after_decline - before} model request(s) after declining; "
            f"question_sent={declined.question_sent}"
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
