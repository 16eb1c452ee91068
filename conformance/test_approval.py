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
import random
import re

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.cases.confirmations import (
    ARGUMENTS_LIMIT,
    MARKER_SLACK,
    WARNING_CONTROL,
    WARNING_SENT,
    shown_json,
    shown_size,
)
from mcp_host_conformance.harness.cases.observe import (
    exposed_name,
    model_requests,
    output_text,
    paired_outputs,
    reply_calls,
    stated_status,
    stays_quiet,
)
from mcp_host_conformance.harness.verdicts.outcomes import check
from mcp_host_conformance.mocks.journal import JournalTimeout
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

KIB = 1024
# A cut must be visibly marked. The generated arguments below are drawn from an alphabet
# that cannot spell any of these, so a match can only come from the client's marker.
CUT_MARKER = re.compile(
    r"cut|truncat|omit|elided|shortened|abridged|clipped|more bytes|remaining|\.\.\.|…|\[\+",
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


@pytest.mark.mcphc_requirements("APR-1")
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
    answered = [0]

    # Calls are counted, not told apart by what the prompt shows (a host may show no
    # arguments): when the k-th confirmation is open, at most k-1 calls may have arrived.
    def approve(confirmation) -> str:
        received = docs.journal.count("tools/call")
        if received > answered[0]:
            early.append(
                f"{received} call(s) reached the server while confirmation {answered[0] + 1} "
                "was open"
            )
        elif answered[0] == 1:
            # Watch a little: a client that sends and asks at the same time is caught here.
            try:
                docs.journal.wait_for("tools/call", count=2, timeout=timeouts.grace)
                early.append("the second call reached the server while its confirmation was open")
            except JournalTimeout:
                pass
        answered[0] += 1
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


@pytest.mark.mcphc_requirements("APR-1")
def test_identical_calls_each_wait_for_their_own_approval(host, http_mock, stdio_mock, model):
    """Every MCP call waits for its own approval: a yes for one call carries over neither to
    an identical call (same server, tool and arguments) later in the turn, nor to the same
    call in the next turn; calls that come in one reply are confirmed one by one, over HTTP
    and stdio alike."""
    docs = http_mock(docs_spec())
    notes = stdio_mock(
        ServerSpec(name="notes", tools=[Tool("read", "Reads notes.", reply=Reply.text("ok"))])
    )
    host.add_http("docs", docs)
    host.add_stdio("notes", notes)
    running = host.start()
    same_query = Step.call(server="docs", tool="query", arguments={"q": "same"})
    same_read = Step.call(server="notes", tool="read", arguments={"p": "same"})
    model.script([Step.calls([same_query, same_read]), same_query, Step.text("ok")])

    first = running.ask("query and read", approve=["y", "y", "n"])
    # The same calls in the next turns, one a question: a host may end its turn at a refusal.
    again = 0
    for call in (same_query, same_read):
        model.script([call, Step.text("ok")])
        again += len(running.ask("the same again", approve="").confirmations)

    shown = (len(first.confirmations), again)
    check(
        shown == (3, 2),
        ids="APR-1",
        expected=(
            "3 confirmations in the first turn (two calls of one reply, then the identical "
            "query again) and 1 for each of the same calls again in the next turns"
        ),
        actual=f"{shown[0]} and {shown[1]} confirmation(s)",
    )
    sent = (docs.journal.count("tools/call"), notes.journal.count("tools/call"))
    check(
        sent == (1, 1),
        ids="APR-1",
        expected="only the two approved calls sent (the identical query denied, the next turn's "
        "calls answered with Enter)",
        actual=f"docs received {sent[0]} tools/call, notes (stdio) {sent[1]}",
    )


# Answers that are not yes. "Anything but yes denies" (the catalog): an empty answer, no,
# and also what a host that matches loosely (a prefix `y`, the word `yes` anywhere, any
# affirmative) would take for a yes.
NOT_YES = [
    "",
    "   ",
    "n",
    "N",
    "no",
    "x",
    "maybe",
    "yes please",
    "yess",
    "yeah",
    "ye",
    "y/n",
    "ok",
    "sure",
    "true",
    "1",
]


@pytest.mark.mcphc_requirements("APR-2")
def test_anything_but_yes_denies(host, http_mock, model, timeouts):
    """Approval is default-deny: an empty answer, `n`, or anything but yes denies; nothing is
    sent (not then, not later: also across the next question and a grace period); the model
    receives status `denied`. **Per the RES decision** the APR rules never fail for the status
    word alone: the model must not be told the denied call ran (completed, failed, unknown,
    a cut output); a host that ends the turn on a refusal may tell it in the next question's
    request."""
    docs = http_mock(docs_spec())
    host.add_http("docs", docs)
    running = host.start()
    problems: list[str] = []
    denied_outputs: dict[str, str | None] = {}
    for answer in NOT_YES:
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
        del before
        made = reply_calls(model)
        call_id = made[-1][0]["call_id"] if made and made[-1] else None
        denied_outputs[answer] = call_id

        statuses = [c.status for c in turn.calls]
        if statuses != ["denied"]:
            problems.append(f"answer {answer!r}: the client reported {statuses}")
    model.script([Step.text("nothing to do")])
    before = len(model_requests(model))
    running.ask("anything else?", approve="")
    # What the model was told of each refused call: in the request after it, or in the next
    # question's (a host may end its turn on a refusal); never that it ran.
    for answer, call_id in denied_outputs.items():
        told = [o for body in model_requests(model) for o in paired_outputs(body, call_id)]
        said = stated_status(told[0]) if told else None
        if said not in (None, "denied"):
            problems.append(
                f"answer {answer!r}: the model was told {said}: {output_text(told[0])[:120]!r}"
            )
    check(
        len(model_requests(model)) > before,
        ids="APR-2",
        expected="the next question reaches the model (the later watch is not vacuous)",
        actual="no model request for it",
    )
    late = stays_quiet(docs.journal, timeouts.grace, "tools/call")
    sent = sorted(
        {
            str(((e.params or {}).get("arguments") or {}).get("answer"))
            for e in docs.journal.entries("tools/call")
        }
    )
    check(
        not sent and not late,
        ids="APR-2",
        expected="no denied call ever sent: not in its turn, not at the next question, not later",
        actual=f"sent the calls denied with {sent}",
    )
    check(
        not problems,
        ids="APR-2",
        expected=f"answers {NOT_YES} each deny, and the model is never told the call ran",
        actual="; ".join(problems),
    )


HINTS_ALONE = {
    "look": {"readOnlyHint": True},
    "keep": {"destructiveHint": False},
    "again": {"idempotentHint": True},
    "closed": {"openWorldHint": False},
    "peek": {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    },
}


@pytest.mark.mcphc_requirements("APR-3")
def test_annotations_never_skip_approval(host, http_mock, stdio_mock, model):
    """Tool annotations such as `readOnlyHint: true` never skip the approval: each hint alone
    and all together, over HTTP and stdio, and also after an earlier call of the same
    read-only tool was approved."""
    docs = http_mock(
        docs_spec(
            *(
                Tool(
                    name, "Reads only; changes nothing.", annotations=hints, reply=Reply.text("ok")
                )
                for name, hints in HINTS_ALONE.items()
            )
        )
    )
    notes = stdio_mock(
        ServerSpec(
            name="notes",
            tools=[
                Tool(
                    "read",
                    "Reads notes.",
                    annotations={"readOnlyHint": True},
                    reply=Reply.text("ok"),
                )
            ],
        )
    )
    host.add_http("docs", docs)
    host.add_stdio("notes", notes)
    running = host.start()
    annotated = [Step.call(server="docs", tool=name, arguments={"n": 0}) for name in HINTS_ALONE]
    annotated.append(Step.call(server="notes", tool="read", arguments={"n": 0}))
    # One call a question: a host may end its turn at a refusal, which says nothing of the
    # approval of the calls it never reached.
    unconfirmed = []
    for call in annotated:
        model.script([call, Step.text("ok")])
        turn = running.ask("peek at it", approve="")
        if len(turn.confirmations) != 1:
            unconfirmed.append(f"{call.tool_calls[0].wanted}: {len(turn.confirmations)}")

    later = [
        (Step.call(server="docs", tool="look", arguments={"n": 1}), "y"),
        (Step.call(server="docs", tool="look", arguments={"n": 2}), "n"),
        (Step.call(server="notes", tool="read", arguments={"n": 1}), "y"),
        (Step.call(server="notes", tool="read", arguments={"n": 2}), ""),
    ]
    confirmed_later = 0
    for call, answer in later:
        model.script([call, Step.text("ok")])
        confirmed_later += len(running.ask("look again", approve=answer).confirmations)
    # Within one turn too: the second call of a read-only tool just approved is asked again
    # (both approved, so a host that ends its turn on a refusal reaches both).
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="docs", tool="look", arguments={"n": 3}),
                    Step.call(server="docs", tool="look", arguments={"n": 4}),
                ]
            ),
            Step.text("ok"),
        ]
    )
    in_one_turn = len(running.ask("look twice", approve=["y", "y"]).confirmations)

    check(
        not unconfirmed,
        ids="APR-3",
        expected=f"a confirmation for each of the {len(annotated)} annotated calls",
        actual=f"confirmations for {unconfirmed}",
    )
    check(
        confirmed_later == 4,
        ids="APR-3",
        expected=(
            "a confirmation for each of 4 calls of read-only tools, also after one was approved"
        ),
        actual=f"{confirmed_later} confirmation(s)",
    )
    check(
        in_one_turn == 2,
        ids="APR-3",
        expected="a confirmation for each of two calls of a read-only tool in one turn",
        actual=f"{in_one_turn} confirmation(s)",
    )
    sent = sorted(
        f"{server}/{e.params.get('name')} n={(e.params.get('arguments') or {}).get('n')}"
        for server, mock in (("docs", docs), ("notes", notes))
        for e in mock.journal.entries("tools/call")
    )
    check(
        sent == ["docs/look n=1", "docs/look n=3", "docs/look n=4", "notes/read n=1"],
        ids="APR-3",
        expected="only the four approved calls sent",
        actual=f"sent {sent}",
    )


@pytest.mark.mcphc_requirements("APR-4")
def test_confirmation_names_server_destination_tool_and_arguments(
    host, http_mock, stdio_mock, model
):
    """The confirmation shows Server (the configured name), Destination (the URL, or the stdio
    command), Tool (the server's own tool name, not the exposed one), and Arguments as
    pretty-printed JSON (shown as is, or as the seed's quoted form of it), with a warning
    that the arguments go to this server and the client cannot control what it does with
    them (in any wording that says both)."""
    # A tool name with a dot cannot be part of an exposed name, so the two always differ.
    # Each server names itself (serverInfo) and titles its tool otherwise, as real ones do:
    # the confirmation shows the configured name and the tool's own name.
    remote = http_mock(
        ServerSpec(
            name="spec-name",
            server_info={"name": "Acme Docs", "title": "Acme documentation", "version": "2"},
            tools=[
                Tool("find.docs", "Finds docs.", reply=Reply.text("ok"), title="Find documents")
            ],
        )
    )
    local = stdio_mock(
        ServerSpec(
            name="spec-name",
            server_info={"name": "notes-server", "version": "0.1"},
            tools=[Tool("read.notes", "Reads notes.", reply=Reply.text("ok"), title="Read notes")],
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
        shown_args, pretty = shown_json(confirmation.arguments)
        if shown_args != arguments:
            problems.append(
                f"Arguments {confirmation.arguments[:200]!r} are not the JSON of {arguments}"
            )
        elif not pretty:
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


# The boundary cases, measured on the catalog's rendering (`json.dumps(indent=2)`, UTF-8):
# a host's own pretty-printing (another indent, the quoted form) moves the size by fewer
# bytes than this margin.
MARGIN = 32


def pretty_size(arguments: dict) -> int:
    return len(json.dumps(arguments, indent=2, ensure_ascii=False).encode("utf-8"))


def sized_arguments(n: int, target: int, fill: str) -> dict:
    """Arguments `{"id": n, "payload": "BEGIN-n-" + fill... + "-END-n"}` whose pretty JSON is
    `target` bytes of UTF-8 (to within one fill character)."""
    head, tail = f"BEGIN-{n}-", f"-END-{n}"
    arguments = {"id": n, "payload": head + tail}
    room = target - pretty_size(arguments)
    per = len(json.dumps(fill, ensure_ascii=False).encode("utf-8")) - 2
    arguments["payload"] = head + fill * max(room // per, 0) + tail
    return arguments


# (name, arguments, cut): just under 2 KiB (shown whole, unmarked); just over; multi-byte
# text that is under 2 Ki characters but three times that in bytes (a host counting
# characters shows it whole); JSON escapes that double the size of the text.
BOUNDARY = [
    ("ascii, just under 2 KiB", sized_arguments(1, ARGUMENTS_LIMIT - MARGIN, "a"), False),
    ("ascii, just over 2 KiB", sized_arguments(2, ARGUMENTS_LIMIT + MARGIN, "a"), True),
    ("multi-byte: 1 Ki characters, 3 KiB", sized_arguments(3, 3 * KIB, "€"), True),
    ("4-byte characters: 700 characters", sized_arguments(4, 2 * KIB + 700, "😀"), True),
    ("escapes: quotes and newlines", sized_arguments(5, 3 * KIB, '"\n'), True),
]
_ALPHABET = '0123456789 xyzqXYZQ-_/:#é€中😀"\\\n\t'


def cut_problems(name: str, arguments: dict, shown: str, cut: bool) -> list[str]:
    """What is wrong with the arguments text shown for `arguments` (APR-5); sizes are those
    of the pretty JSON shown, the quoted form's escapes undone."""
    size = shown_size(shown)
    full = pretty_size(arguments)
    value, _pretty = shown_json(shown)
    if not cut:
        if value != arguments:
            return [f"{name}: {full} bytes of arguments not shown whole ({size} bytes shown)"]
        return []
    problems = []
    if value == arguments:
        problems.append(f"{name}: {full} bytes of arguments shown whole, not cut after 2 KiB")
    elif not ARGUMENTS_LIMIT - 8 <= size <= ARGUMENTS_LIMIT + MARKER_SLACK:
        problems.append(
            f"{name}: {size} bytes shown for {full} bytes of arguments (expected about "
            f"{ARGUMENTS_LIMIT}: cut after 2 KiB of UTF-8, plus a marker)"
        )
    if f"BEGIN-{arguments['id']}-" not in shown:
        problems.append(f"{name}: the shown text does not start with the arguments' beginning")
    if f"-END-{arguments['id']}" in shown:
        problems.append(f"{name}: the shown text holds the arguments' end")
    if CUT_MARKER.search(shown) is None:
        problems.append(f"{name}: no visible mark that the arguments were cut ({shown[-80:]!r})")
    return problems


@pytest.mark.mcphc_requirements("APR-5")
def test_long_arguments_are_cut_and_marked_but_sent_whole(host, http_mock, model):
    """Arguments shown are cut off after 2 KiB, visibly marked as cut; the server still
    receives the complete arguments once approved. Counted in bytes of UTF-8: just under
    2 KiB is shown whole, just over is cut; multi-byte text that is under 2 Ki characters
    but over 2 KiB is cut. (Then a derandomized property: text of 2.5-8 KiB, multi-byte
    characters and JSON escapes included; one client start for all.)"""
    docs = http_mock(docs_spec(Tool("store", "Stores a note.", reply=Reply.text("stored"))))
    host.add_http("docs", docs)
    running = host.start()
    problems: list[str] = []

    def run(name: str, arguments: dict, cut: bool) -> None:
        model.script([Step.call(server="docs", tool="store", arguments=arguments), Step.text("ok")])
        shown: list[str] = []

        def approve(confirmation) -> str:
            shown.append(confirmation.arguments)
            return "y"

        running.ask("store this", approve=approve)
        if len(shown) != 1:
            problems.append(f"{name}: {len(shown)} confirmation(s) for one call")
        else:
            problems.extend(cut_problems(name, arguments, shown[0], cut))
        received = calls_with(docs.journal, "id", arguments["id"])
        got = received[0].params.get("arguments") if received else None
        if len(received) != 1 or got != arguments:
            complete = "complete" if got == arguments else "incomplete or altered"
            problems.append(f"{name}: the server received {len(received)} call(s), {complete}")

    for name, arguments, cut in BOUNDARY:
        run(name, arguments, cut)
    check(
        not problems,
        ids="APR-5",
        expected=(
            "arguments under 2 KiB of UTF-8 shown whole; over it, the first 2 KiB shown and "
            "marked as cut; the server receives them whole, once"
        ),
        actual="; ".join(problems),
    )

    seen = {"n": 100}

    # Derandomized (the same examples every run) and without shrinking: every example costs
    # a turn, and the first failing one says enough.
    @settings(
        max_examples=4,
        deadline=None,
        database=None,
        derandomize=True,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    # The text comes from a seeded generator, not st.text: hypothesis draws a string one
    # character at a time (~0.5 s of CPU for these four, more than the turns they run).
    @given(st.integers(min_value=2600, max_value=8000), st.integers(0, 2**32 - 1))
    def example(size: int, seed: int) -> None:
        text = "".join(random.Random(seed).choices(_ALPHABET, k=size))
        seen["n"] += 1
        arguments = {"id": seen["n"], "payload": f"BEGIN-{seen['n']}-{text}-END-{seen['n']}"}
        problems.clear()
        run(f"{len(text)} random characters", arguments, True)
        check(
            not problems,
            ids="APR-5",
            expected="the first 2 KiB of UTF-8 shown, marked as cut; the server receives all",
            actual="; ".join(problems),
        )

    example()
