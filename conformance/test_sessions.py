"""SESS: sessions and replay.

Strategy: a session is checked by its effects. A first run makes one or two MCP calls whose
results carry unique markers, and stops; the markers must be in the session files the
client reported and in the next model request. Then the server goes away (removed from the
configuration, or offline, or renamed its tools) and the client reopens the session with
`resume=`: it must load (the next model request carries the earlier question, call and
paired output, by the same `call_id`), and no server may be called again while reopening
(a removed server's live mock keeps an empty journal, not even `initialize`). The main
cases reopen in a restarted host: the client under test in a new process of its own
(`restarted_host`), so nothing the first process kept in memory can stand in for what it
saved; the others reopen in the same process.

What a session must carry across a restart includes what the person still owes it: a
session whose last call ended `unknown` and was not acknowledged still asks for the
acknowledgement before the next question goes out (RETRY-2, across the restart).
"""

from __future__ import annotations

import json
import secrets as _random
from dataclasses import dataclass
from typing import Any

import pytest

from mcp_host_conformance.harness.cases.observe import (
    function_call_outputs,
    function_calls,
    model_requests,
    offered_function,
    output_text,
    status_text,
)
from mcp_host_conformance.harness.verdicts.outcomes import check, precondition
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool


def marker(what: str) -> str:
    return f"mcphc-{what}-{_random.token_hex(6)}"


@dataclass
class FirstRun:
    """What the first run left: the session to resume and the call it made."""

    session_id: str | None
    question: str
    call_id: str | None  # the model's call, as the client replayed it
    call_name: str | None
    arguments: Any
    output: Any  # the output the client sent the model for it


def text_of_files(paths) -> str:
    """Every session file (or file under a reported directory), decoded leniently."""
    from pathlib import Path

    chunks = []
    for path in map(Path, paths):
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            try:
                chunks.append(f.read_bytes().decode("utf-8", errors="replace"))
            except OSError:
                continue
    return "\n".join(chunks)


def first_run(host, model, server: str, tool: str, ids: str) -> FirstRun:
    """Start, ask one question whose model reply calls `server`/`tool` (approved), stop."""
    question = f"first question {marker('question')}"
    model.script(
        [Step.call(server=server, tool=tool, arguments={"q": "before"}), Step.text("first answer")]
    )
    running = host.start()
    turn = running.ask(question, approve="y")
    stopped = running.stop()
    # What the session holds comes first, and is other rules': the call completed (RES-1)
    # and its result went to the model (SESS-1); reopening it is this case's.
    precondition(
        [c.status for c in turn.calls] == ["completed"],
        ids="RES-1",
        expected="the first run's call completes",
        actual=f"call statuses {[c.status for c in turn.calls]}",
    )
    check(
        bool(stopped.session_id),
        ids=ids,
        expected="stop() returns the session's id (to reopen it)",
        actual=f"session id {stopped.session_id!r}",
    )
    bodies = model_requests(model)
    precondition(
        len(bodies) >= 2,
        ids="SESS-1",
        expected="two model requests in the first run (the question, then the call's output)",
        actual=f"{len(bodies)} model request(s)",
    )
    calls = function_calls(bodies[1])
    outputs = function_call_outputs(bodies[1])
    call = calls[-1] if calls else {}
    return FirstRun(
        session_id=stopped.session_id,
        question=question,
        call_id=call.get("call_id"),
        call_name=call.get("name"),
        arguments=call.get("arguments"),
        output=outputs.get(call.get("call_id")),
    )


def resume(host, session_id: str, ids: str, **overrides):
    """Start with `resume=`; a conformance failure (not an error) if the client refuses."""
    try:
        return host.start(resume=session_id, **overrides)
    except AssertionError:
        raise
    except Exception as exc:  # noqa: BLE001 - the client could not reopen it: that is the finding
        check(
            False,
            ids=ids,
            expected="the session reopens",
            actual=f"start(resume=...) failed: {type(exc).__name__}: {exc}",
        )


def second_run(host, model, session_id: str, ids: str):
    """Resume `session_id`, ask the second question (model answers in text, no call), stop;
    (running, turn)."""
    model.script([Step.text("second answer")])
    running = resume(host, session_id, ids)
    turn = running.ask("second question", approve="n")
    running.stop()
    return running, turn


def carries_question(body: Any, question: str) -> bool:
    return question in json.dumps(body.get("input"), ensure_ascii=False)


# ---- SESS-1 -----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("SESS-1")
def test_result_is_shown_saved_and_sent(host, http_mock, model):
    """A tool result (status and output) is shown to the user, saved in the session, and sent
    to the model in the next request."""
    ok_text = marker("completed-output")
    failed_text = marker("failed-output")
    docs = http_mock(
        ServerSpec(
            name="docs",
            tools=[
                Tool("query", "Looks something up.", reply=Reply.text(ok_text)),
                Tool("broken", "Fails.", reply=Reply.tool_error(failed_text)),
            ],
        )
    )
    host.add_http("docs", docs)
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="docs", tool="query", arguments={"q": "a"}),
                    Step.call(server="docs", tool="broken", arguments={"q": "b"}),
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    turn = running.ask("look it up", approve="y")
    stopped = running.stop()

    shown = {c.status: c.output for c in turn.calls}
    check(
        sorted(shown) == ["completed", "failed"]
        and ok_text in shown.get("completed", "")
        and failed_text in shown.get("failed", ""),
        ids="SESS-1",
        expected=(
            "both results shown to the user: completed with its output, failed with its message"
        ),
        actual=f"shown: {[(c.status, c.output[:80]) for c in turn.calls]}",
    )
    saved = text_of_files(stopped.session_files)
    missing = [
        name
        for name, text in (("completed", ok_text), ("failed", failed_text))
        if text not in saved
    ]
    check(
        bool(stopped.session_files) and not missing,
        ids="SESS-1",
        expected="both outputs saved in the session files the client reported",
        actual=(
            f"{len(stopped.session_files)} session file(s); "
            f"missing the {', '.join(missing) or 'none'} output"
        ),
    )
    bodies = model_requests(model)
    sent = function_call_outputs(bodies[1]) if len(bodies) > 1 else {}
    replayed = {c.get("call_id") for c in function_calls(bodies[1])} if len(bodies) > 1 else set()
    texts = {
        cid: json.dumps(out, ensure_ascii=False) for cid, out in sent.items() if cid in replayed
    }
    missing = [
        name
        for name, text in (("completed", ok_text), ("failed", failed_text))
        if not any(text in t for t in texts.values())
    ]
    check(
        len(bodies) > 1 and not missing,
        ids="SESS-1",
        expected="both outputs in the next model request, each paired with its call",
        actual=f"{len(bodies)} model request(s); not sent: {', '.join(missing) or 'none'}",
    )


# ---- SESS-2 -----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("SESS-2")
def test_reopens_with_its_servers_removed_without_calling_them(
    host, restarted_host, http_mock, stdio_mock, model
):
    """A session that used an MCP server reopens when that server is removed; nothing is
    called again while reopening (not even initialize: the server is not configured).
    Reopened by a restarted host process."""
    docs = http_mock(
        ServerSpec(name="docs", tools=[Tool("query", reply=Reply.text(marker("out")))])
    )
    local = stdio_mock(
        ServerSpec(name="local", tools=[Tool("read", reply=Reply.text(marker("out")))])
    )
    host.add_http("docs", docs)
    host.add_stdio("local", local)
    first = first_run(host, model, "docs", "query", "SESS-2")
    host.remove("docs")
    host.remove("local")
    docs_seen = len(docs.journal.entries())
    local_seen = len(local.journal.entries())
    local_starts = len(local.process_entries())
    requests_before = len(model_requests(model))

    running, turn = second_run(restarted_host(), model, first.session_id, "SESS-2")

    check(
        len(docs.journal.entries()) == docs_seen,
        ids="SESS-2",
        expected="nothing sent to the removed HTTP server while reopening or after",
        actual=(
            f"{len(docs.journal.entries()) - docs_seen} new request(s): "
            f"{docs.journal.methods()[docs_seen:]}"
        ),
    )
    check(
        len(local.process_entries()) == local_starts and len(local.journal.entries()) == local_seen,
        ids="SESS-2",
        expected="the removed stdio server not started again",
        actual=f"{len(local.process_entries()) - local_starts} new start(s)",
    )
    bodies = model_requests(model)[requests_before:]
    check(
        turn.question_sent and bool(bodies) and carries_question(bodies[0], first.question),
        ids="SESS-2",
        expected="the session loaded: the next model request carries the earlier question",
        actual=f"question sent={turn.question_sent}, {len(bodies)} new model request(s)"
        + (
            ""
            if not bodies
            else f", earlier question carried={carries_question(bodies[0], first.question)}"
        ),
    )


@pytest.mark.mcphc_requirements("SESS-2")
def test_reopens_with_its_server_offline(host, http_mock, model):
    """A session that used an MCP server reopens when that server is offline."""
    docs = http_mock(
        ServerSpec(name="docs", tools=[Tool("query", reply=Reply.text(marker("out")))])
    )
    host.add_http("docs", docs)
    first = first_run(host, model, "docs", "query", "SESS-2")
    docs.close()  # still configured, now nobody listens there
    requests_before = len(model_requests(model))

    running, turn = second_run(host, model, first.session_id, "SESS-2")

    status = running.status("docs")
    check(
        status is None or not status.connected,
        ids="SESS-2",
        expected="the offline server reported unavailable",
        actual=status_text(status),
    )
    bodies = model_requests(model)[requests_before:]
    check(
        turn.question_sent and bool(bodies) and carries_question(bodies[0], first.question),
        ids="SESS-2",
        expected="the session loaded: the next model request carries the earlier question",
        actual=f"question sent={turn.question_sent}, {len(bodies)} new model request(s)",
    )


@pytest.mark.mcphc_requirements("SESS-2")
def test_reopening_never_repeats_a_call(host, http_mock, stdio_mock, model, timeouts):
    """Nothing is called again while reopening: a server still configured and live gets no
    second tools/call."""
    docs = http_mock(
        ServerSpec(name="docs", tools=[Tool("query", reply=Reply.text(marker("out")))])
    )
    host.add_http("docs", docs)
    first = first_run(host, model, "docs", "query", "SESS-2")
    check(
        docs.journal.count("tools/call") == 1,
        ids="SESS-2",
        expected="one tools/call in the first run",
        actual=f"{docs.journal.count('tools/call')} tools/call",
    )
    running, _ = second_run(host, model, first.session_id, "SESS-2")

    calls = docs.journal.count("tools/call")
    check(
        calls == 1,
        ids="SESS-2",
        expected=(
            "still one tools/call after reopening (the recorded call is not replayed to the server)"
        ),
        actual=f"{calls} tools/call",
    )


# ---- SESS-3 -----------------------------------------------------------------------------------


def replay_problems(body: Any, first: FirstRun) -> list[str]:
    """What the request lacks of the earlier call and its paired output."""
    calls = [c for c in function_calls(body) if c.get("call_id") == first.call_id]
    outputs = function_call_outputs(body)
    problems = []
    if not calls:
        problems.append(
            f"no function_call with the earlier call_id (calls: {len(function_calls(body))})"
        )
    elif calls[0].get("name") != first.call_name:
        problems.append("the earlier function_call has another name")
    if first.call_id not in outputs:
        problems.append("no function_call_output with the earlier call_id")
    elif output_text(outputs[first.call_id]) != output_text(first.output):
        # the same text the model read before (a string or content parts alike)
        problems.append("the paired output differs from the one sent before")
    return problems


@pytest.mark.mcphc_requirements("SESS-3")
def test_reopened_session_replays_call_and_paired_output(host, restarted_host, http_mock, model):
    """After reopening, the next model request carries the earlier call and its paired output
    (reopened by a restarted host process)."""
    docs = http_mock(
        ServerSpec(name="docs", tools=[Tool("query", reply=Reply.text(marker("out")))])
    )
    host.add_http("docs", docs)
    first = first_run(host, model, "docs", "query", "SESS-3")
    check(
        first.call_id is not None and first.output is not None,
        ids="SESS-3",
        expected="the first run sent the model the call and its output (same call_id)",
        actual=(
            f"call_id {'found' if first.call_id else 'missing'}, "
            f"output {'found' if first.output is not None else 'missing'}"
        ),
    )
    host.remove("docs")  # reopen with no MCP tools at all
    requests_before = len(model_requests(model))

    running, _ = second_run(restarted_host(), model, first.session_id, "SESS-3")

    bodies = model_requests(model)[requests_before:]
    problems = replay_problems(bodies[0], first) if bodies else ["no model request after reopening"]
    check(
        not problems,
        ids="SESS-3",
        expected=(
            "the earlier function_call and its function_call_output (same call_id, same output)"
        ),
        actual="; ".join(problems),
    )


# ---- SESS-4 -----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("SESS-4")
def test_reopens_after_the_server_renamed_its_tools(host, restarted_host, http_mock, model):
    """Recorded MCP calls are checked only by the shape of their arguments (a JSON object),
    not by whether the tool still exists (reopened by a restarted host process)."""
    before = http_mock(
        ServerSpec(name="docs", tools=[Tool("query", reply=Reply.text(marker("out")))])
    )
    host.add_http("docs", before)
    first = first_run(host, model, "docs", "query", "SESS-4")
    # The same server name, now offering other tools (one with a schema the old call breaks).
    renamed_schema = {
        "type": "object",
        "properties": {"needle": {"type": "string"}},
        "required": ["needle"],
    }
    after = http_mock(
        ServerSpec(name="docs", tools=[Tool("search", input_schema=renamed_schema), Tool("fetch")])
    )
    host.remove("docs")
    host.add_http("docs", after)
    requests_before = len(model_requests(model))

    running, turn = second_run(restarted_host(), model, first.session_id, "SESS-4")

    status = running.status("docs")
    check(
        status is not None and status.connected,
        ids="SESS-4",
        expected="the server with renamed tools connects (control)",
        actual=status_text(status),
    )
    bodies = model_requests(model)[requests_before:]
    check(
        turn.question_sent and bool(bodies),
        ids="SESS-4",
        expected="the session loads and the next question reaches the model",
        actual=f"question sent={turn.question_sent}, {len(bodies)} new model request(s)",
    )
    problems = replay_problems(bodies[0], first)
    if offered_function(bodies[0], after, "search") is None:
        problems.append("the server's new tool is not offered")
    check(
        not problems,
        ids="SESS-4",
        expected=(
            "the earlier call (to a tool that no longer exists) and its output carried, "
            "new tools offered"
        ),
        actual="; ".join(problems),
    )
    check(
        after.journal.count("tools/call") == 0,
        ids="SESS-4",
        expected="no call sent to the renamed server while reopening",
        actual=f"{after.journal.count('tools/call')} tools/call",
    )


# ---- RETRY-2 across a restart ------------------------------------------------------------


@pytest.mark.mcphc_requirements("RETRY-2")
def test_unacknowledged_unknown_still_asks_after_reopening(host, restarted_host, http_mock, model):
    """After an `unknown` result, the user's next question is not sent until the user
    acknowledges that the call may already have run: also when the session is reopened by
    a restarted host, after the acknowledgement was declined, or never asked for (the
    session ended first)."""
    flaky = http_mock(
        ServerSpec(
            name="flaky",
            tools=[Tool("create", reply=Reply.text("created"))],
            misbehaviour=Misbehaviour(drop_call="close"),
        )
    )
    host.add_http("flaky", flaky)
    problems = []
    for ending in ("declined", "never asked"):
        running = host.start()
        model.script(
            [Step.call(server="flaky", tool="create", arguments={"n": 1}), Step.text("answer")]
        )
        turn = running.ask(f"create a ticket ({ending})", approve="y", acknowledge=True)
        statuses = [c.status for c in turn.calls]
        precondition(
            statuses == ["unknown"],
            ids="RES-7",
            expected="the dropped call ends unknown (what follows it is this case's rule)",
            actual=f"the client reported {statuses}",
        )
        if ending == "declined":
            before = len(model_requests(model))
            running.ask("a question declined", approve="y", acknowledge=False)
            if len(model_requests(model)) != before:
                problems.append("a declined acknowledgement still sent the question")
        stopped = running.stop()
        again = restarted_host().start(resume=stopped.session_id)
        before = len(model_requests(model))
        asked: list[int] = []
        question = f"the first question after reopening ({ending}) {marker('q')}"
        model.script([Step.text("reopened answer")])
        again.ask(
            question,
            approve="y",
            acknowledge=lambda _prompt, asked=asked: (
                asked.append(len(model_requests(model))) is None
            ),
        )
        again.stop()
        sent = [
            b
            for b in model_requests(model)[before:]
            if question in json.dumps(b.get("input"), ensure_ascii=False)
        ]
        if not asked:
            problems.append(f"{ending}: no acknowledgement asked after reopening")
        elif asked[0] != before:
            problems.append(f"{ending}: {asked[0] - before} model request(s) before it")
        elif not sent:
            problems.append(f"{ending}: the question never sent once acknowledged")
    check(
        not problems,
        ids="RETRY-2",
        expected=(
            "the reopened session asks for the acknowledgement of the unknown call before the "
            "next question goes out (acknowledgement declined, or never asked before the end)"
        ),
        actual="; ".join(problems),
    )
