"""APR: approval.

Strategy: approval is checked where it has effects. The approval callback runs inside the
turn at the moment the client asks, so it can look at the server's journal right then
(nothing of this call may have arrived yet) and decide the answer; after the turn, the
server's journal says what was sent and the model journal says what the model was told.
The confirmation's fields are read from the adapter's record and its text, compared with
what the case configured (server name, URL or command, the server's own tool name).
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.observe import (
    call_outputs,
    exposed_name,
    model_requests,
    output_text,
    shows_status,
)
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.mocks.journal import JournalTimeout
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

KIB = 1024
# Room allowed for the cut marker and framing after the 2 KiB of shown arguments.
MARKER_SLACK = 512
# A cut must be visibly marked. The generated arguments below are drawn from an alphabet
# that cannot spell any of these, so a match can only come from the client's marker.
CUT_MARKER = re.compile(
    r"cut|truncat|omit|elided|shortened|abridged|clipped|more bytes|remaining|\.\.\.|…|\[\+",
    re.IGNORECASE,
)
# The warning: the arguments go to this server, and the client cannot control what it does.
WARNING_SENT = re.compile(
    r"\b(sent|go|goes|passed|transmitted|shared)\b.*\bserver\b", re.IGNORECASE | re.DOTALL
)
WARNING_CONTROL = re.compile(
    r"(cannot|can't|can ?not|does not|doesn't|has no|no)\s+(\w+\s+)?"
    r"(control|way to control|say over)",
    re.IGNORECASE,
)


def docs_spec(*tools: Tool) -> ServerSpec:
    return ServerSpec(
        name="docs",
        tools=list(tools) or [Tool("query", "Searches the docs.", reply=Reply.text("ok"))],
    )


def calls_with(journal, key: str, value) -> list:
    """The tools/call requests whose arguments carry key=value."""
    return journal.entries(
        "tools/call",
        where=lambda e: (
            isinstance(e.params, dict) and (e.params.get("arguments") or {}).get(key) == value
        ),
    )


@pytest.mark.requirements("APR-1")
def test_every_call_waits_for_its_own_approval(host, http_mock, model, timeouts):
    """Every MCP call waits for its own approval; nothing reaches the server before it."""
    docs = http_mock(docs_spec())
    host.add_http("docs", docs)
    running = host.start()
    model.script(
        [
            Step.call(server="docs", tool="query", arguments={"n": 1}),
            Step.call(server="docs", tool="query", arguments={"n": 2}),
            Step.text("ok"),
        ]
    )
    early: list[str] = []

    def approve(confirmation) -> str:
        n = 2 if re.search(r'"n"\s*:\s*2', confirmation.arguments) else 1
        if calls_with(docs.journal, "n", n):
            early.append(f"call n={n} reached the server before its confirmation was answered")
        elif n == 2:
            # Watch a little: a client that sends and asks at the same time is caught here.
            try:
                docs.journal.wait_for(
                    "tools/call",
                    where=lambda e: (e.params or {}).get("arguments") == {"n": 2},
                    timeout=timeouts.grace,
                )
                early.append("call n=2 reached the server while its confirmation was still open")
            except JournalTimeout:
                pass
        return "y"

    turn = running.ask("query twice", approve=approve)

    shown = len(turn.confirmations)
    check(
        shown == 2,
        ids="APR-1",
        expected="two confirmations for two calls",
        actual=f"{shown} confirmation(s)",
    )
    check(
        not early,
        ids="APR-1",
        expected="no call sent before its own approval",
        actual="; ".join(early),
    )
    sent = docs.journal.count("tools/call")
    check(
        sent == 2,
        ids="APR-1",
        expected="both approved calls sent, once each",
        actual=f"{sent} tools/call",
    )


@pytest.mark.requirements("APR-1")
def test_approving_one_call_does_not_approve_the_next(host, http_mock, model):
    """Every MCP call waits for its own approval: a yes for one call does not carry over to
    the next call of the same tool in the same turn."""
    docs = http_mock(docs_spec())
    host.add_http("docs", docs)
    running = host.start()
    model.script(
        [
            Step.call(server="docs", tool="query", arguments={"n": 1}),
            Step.call(server="docs", tool="query", arguments={"n": 2}),
            Step.text("ok"),
        ]
    )

    turn = running.ask("query twice", approve=["y", "n"])

    shown = len(turn.confirmations)
    check(
        shown == 2,
        ids="APR-1",
        expected="a confirmation for each of the two calls",
        actual=f"{shown} confirmation(s)",
    )
    second = len(calls_with(docs.journal, "n", 2))
    check(
        second == 0,
        ids="APR-1",
        expected="the second (denied) call never sent",
        actual=f"sent {second} time(s)",
    )


@pytest.mark.requirements("APR-2")
def test_anything_but_yes_denies(host, http_mock, model):
    """Approval is default-deny: an empty answer, `n`, or anything but yes denies; nothing is
    sent; the model receives status `denied`."""
    docs = http_mock(docs_spec())
    host.add_http("docs", docs)
    running = host.start()
    answers = ["", "n", "N", "no", "maybe", "x"]
    problems: list[str] = []
    for answer in answers:
        model.script(
            [Step.call(server="docs", tool="query", arguments={"answer": answer}), Step.text("ok")]
        )
        before = len(model_requests(model))
        turn = running.ask(f"look it up ({answer!r})", approve=answer)
        if calls_with(docs.journal, "answer", answer):
            menu = turn.confirmations[-1] if turn.confirmations else None
            selects = (
                f" (its menu selects {menu.default!r} on Enter)"
                if answer == "" and menu is not None and menu.default
                else ""
            )
            problems.append(f"answer {answer!r}: the call was sent{selects}")
        outputs = call_outputs(model)[-1][1] if call_outputs(model) else []
        got = output_text(outputs[0]) if outputs else None
        if got is None:
            problems.append(f"answer {answer!r}: no output for the call reached the model")
        elif not shows_status(got, "denied"):
            problems.append(f"answer {answer!r}: the model received {got[:120]!r}")
        statuses = [c.status for c in turn.calls]
        if statuses != ["denied"]:
            problems.append(f"answer {answer!r}: the client reported {statuses}")
        if len(model_requests(model)) - before < 2:
            problems.append(f"answer {answer!r}: the model was not told the outcome")
    check(
        not problems,
        ids="APR-2",
        expected=f"answers {answers} each deny: nothing sent, the model receives `denied`",
        actual="; ".join(problems),
    )


@pytest.mark.requirements("APR-3")
def test_read_only_hint_never_skips_approval(host, http_mock, model):
    """Tool annotations such as `readOnlyHint: true` never skip the approval."""
    hints = {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    docs = http_mock(
        docs_spec(
            Tool("peek", "Reads only; changes nothing.", annotations=hints, reply=Reply.text("ok"))
        )
    )
    host.add_http("docs", docs)
    running = host.start()
    model.script([Step.call(server="docs", tool="peek", arguments={"q": "x"}), Step.text("ok")])

    turn = running.ask("peek", approve="")

    shown = len(turn.confirmations)
    check(
        shown == 1,
        ids="APR-3",
        expected="a confirmation for the read-only tool",
        actual=f"{shown} confirmation(s)",
    )
    sent = docs.journal.count("tools/call")
    check(
        sent == 0,
        ids="APR-3",
        expected="nothing sent after an empty answer",
        actual=f"{sent} tools/call",
    )


@pytest.mark.requirements("APR-4")
def test_confirmation_names_server_destination_tool_and_arguments(
    host, http_mock, stdio_mock, model
):
    """The confirmation shows Server (the configured name), Destination (the URL, or the stdio
    command), Tool (the server's own tool name, not the exposed one), and Arguments as
    pretty-printed JSON, with a warning that the arguments go to this server and the client
    cannot control what it does with them."""
    # A tool name with a dot cannot be part of an exposed name, so the two always differ.
    remote = http_mock(
        ServerSpec(
            name="spec-name", tools=[Tool("find.docs", "Finds docs.", reply=Reply.text("ok"))]
        )
    )
    local = stdio_mock(
        ServerSpec(
            name="spec-name", tools=[Tool("read.notes", "Reads notes.", reply=Reply.text("ok"))]
        )
    )
    host.add_http("docs-remote", remote)
    host.add_stdio("notes-local", local)
    running = host.start()
    remote_args = {"query": "react hooks", "options": {"limit": 3, "tags": ["a", "b"]}}
    local_args = {"path": "notes/today.md", "lines": [1, 2]}
    model.script(
        [
            Step.call(server="docs-remote", tool="find.docs", arguments=remote_args),
            Step.call(server="notes-local", tool="read.notes", arguments=local_args),
            Step.text("ok"),
        ]
    )

    turn = running.ask("look it up", approve="y")

    body = model_requests(model)[0]
    expected = [
        (
            "docs-remote",
            remote.url,
            "find.docs",
            remote_args,
            exposed_name(body, "docs-remote", "find.docs"),
        ),
        (
            "notes-local",
            local.command[0],
            "read.notes",
            local_args,
            exposed_name(body, "notes-local", "read.notes"),
        ),
    ]
    check(
        len(turn.confirmations) == 2,
        ids="APR-4",
        expected="one confirmation per call (2)",
        actual=f"{len(turn.confirmations)} confirmation(s)",
    )
    for confirmation, (server, destination, tool, arguments, exposed) in zip(
        turn.confirmations, expected, strict=False
    ):
        problems = []
        if confirmation.server != server:
            problems.append(f"Server {confirmation.server!r}, configured name {server!r}")
        if destination not in confirmation.destination:
            problems.append(
                f"Destination {confirmation.destination!r} does not show {destination!r}"
            )
        if confirmation.tool != tool:
            problems.append(
                f"Tool {confirmation.tool!r}, the server's tool name is {tool!r} "
                f"(exposed {exposed!r})"
            )
        try:
            shown_args = json.loads(confirmation.arguments)
        except ValueError:
            shown_args = None
        if shown_args != arguments:
            problems.append(
                f"Arguments {confirmation.arguments[:200]!r} are not the JSON of {arguments}"
            )
        elif not re.search(r"\n[ \t]+\S", confirmation.arguments):
            problems.append(f"Arguments {confirmation.arguments[:200]!r} are not pretty-printed")
        if not (
            WARNING_SENT.search(confirmation.warning)
            and WARNING_CONTROL.search(confirmation.warning)
        ):
            problems.append(
                f"warning {confirmation.warning!r} does not say the arguments go to the server and "
                "the client cannot control what it does with them"
            )
        # The exposed name contains the server's name; showing it does not show the Server.
        text = confirmation.text.replace(exposed, "") if exposed else confirmation.text
        for what, value in (
            ("server", server),
            ("destination", destination),
            ("tool", tool),
            ("warning", confirmation.warning),
        ):
            if value and value not in text and json.dumps(value)[1:-1] not in text:
                problems.append(f"the shown text lacks the {what} {value!r}")
        check(
            not problems,
            ids="APR-4",
            expected=(
                f"confirmation of {server}/{tool}: "
                "Server, Destination, Tool, pretty Arguments, warning"
            ),
            actual="; ".join(problems),
        )


_ALPHABET = '0123456789 xyzqXYZQ-_/:#é€中😀"\\\n\t'


@pytest.mark.requirements("APR-5")
def test_long_arguments_are_cut_and_marked_but_sent_whole(host, http_mock, model):
    """Arguments shown are cut off after 2 KiB, visibly marked as cut; the server still
    receives the complete arguments once approved. (Property: random text of 2.5-8 KiB,
    multi-byte characters and JSON escapes included; one client start for all examples.)"""
    docs = http_mock(docs_spec(Tool("store", "Stores a note.", reply=Reply.text("stored"))))
    host.add_http("docs", docs)
    running = host.start()
    seen = {"n": 0}

    # No shrinking: every example costs a turn, and the first failing one says enough.
    @settings(
        max_examples=8,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @given(st.text(alphabet=_ALPHABET, min_size=2600, max_size=8000))
    def example(text: str) -> None:
        seen["n"] += 1
        arguments = {"id": seen["n"], "payload": text}
        model.script([Step.call(server="docs", tool="store", arguments=arguments), Step.text("ok")])
        shown: list[str] = []

        def approve(confirmation) -> str:
            shown.append(confirmation.arguments)
            return "y"

        running.ask("store this", approve=approve)

        check(len(shown) == 1, ids="APR-5", expected="one confirmation", actual=f"{len(shown)}")
        size = len(shown[0].encode("utf-8"))
        check(
            2 * KIB - 4 <= size <= 2 * KIB + MARKER_SLACK,
            ids="APR-5",
            expected=(
                f"the arguments shown cut after 2 KiB (between {2 * KIB - 4} "
                f"and {2 * KIB + MARKER_SLACK} bytes with the marker)"
            ),
            actual=(
                f"{size} bytes shown for arguments of {len(json.dumps(arguments).encode())} bytes"
            ),
        )
        check(
            CUT_MARKER.search(shown[0]) is not None,
            ids="APR-5",
            expected="a visible mark that the arguments were cut",
            actual=f"no cut marker; the shown arguments end with {shown[0][-80:]!r}",
        )
        received = calls_with(docs.journal, "id", seen["n"])
        got = received[0].params.get("arguments") if received else None
        check(
            len(received) == 1 and got == arguments,
            ids="APR-5",
            expected="the server receives the complete arguments once",
            actual=(
                f"{len(received)} call(s); arguments "
                f"{'complete' if got == arguments else 'incomplete or altered'}"
            ),
        )

    example()
