"""The turn loop against the HTTP mock and the mock Responses service
(APR, RES, RETRY, TURN, SESS-1)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.model_script import Step, function_call_outputs, offered_tools
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool
from mcp_host_conformance.reference_client import results
from mcp_host_conformance.reference_client.config import HttpServerConfig
from mcp_host_conformance.reference_client.engine import HostEngine
from mcp_host_conformance.reference_client.turn_rules import LIMIT_OUTPUT, MAX_CALLS_PER_TURN
from tests.reference_client.engine_support import ScriptedUI, run

SECRET = "canary-Hdr-7731-secret"


class ListSession:
    def __init__(self) -> None:
        self.items: list[dict] = []

    def append(self, item: dict) -> None:
        self.items.append(item)


def spec(reply: Reply | None = None, **misbehaviour: Any) -> ServerSpec:
    tool = Tool("query", description="Query the docs", reply=reply or Reply.echo_arguments())
    return ServerSpec(
        name="docs", tools=[tool, Tool("other")], misbehaviour=Misbehaviour(**misbehaviour)
    )


def bodies(model: MockResponses) -> list[dict]:
    return [e.extra["body"] for e in model.journal.entries(kind="http") if "body" in e.extra]


async def session_with(
    mock: HttpMock,
    model: MockResponses,
    ui: ScriptedUI,
    questions: list[str],
    tmp_path: Path,
    *,
    call_timeout: float = 30.0,
    history: list[dict] | None = None,
    session: ListSession | None = None,
    during: Any = None,
) -> tuple[HostEngine, list]:
    host = HostEngine(
        [HttpServerConfig("docs", mock.url, {"Authorization": SECRET})],
        model_url=model.url,
        model_key=model.api_key,
        environ={"HOME": str(tmp_path)},
        cwd=tmp_path,
        ui=ui,
        connect_timeout=10.0,
        call_timeout=call_timeout,
        session=session,
        history=history,
    )
    reports = []
    try:
        await host.start()
        for question in questions:
            if during is not None:
                task = asyncio.ensure_future(host.ask(question))
                await asyncio.get_running_loop().run_in_executor(None, during, host)
                reports.append(await task)
            else:
                reports.append(await host.ask(question))
    finally:
        await host.close()
    return host, reports


def test_approved_call_completes_and_result_is_shown_saved_and_sent(tmp_path: Path) -> None:
    ui = ScriptedUI(approvals=["y"])
    log = ListSession()
    with HttpMock(spec()) as mock, MockResponses() as model:
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "hi"}), Step.text("the answer")]
        )
        _, [report] = run(session_with(mock, model, ui, ["question?"], tmp_path, session=log))
        assert mock.journal.count("tools/call") == 1
        sent = bodies(model)
    assert report.question_sent and report.answer == "the answer"
    [call] = report.calls
    assert (call.status, call.output) == ("completed", '{"q":"hi"}')
    [view] = report.confirmations
    assert (view.server, view.destination, view.tool) == ("docs", mock.url, "query")
    assert '"q": "hi"' in view.arguments
    outputs = function_call_outputs(sent[1])
    assert list(outputs.values()) == ["Status: completed\n" + '{"q":"hi"}']
    assert [i["type"] for i in log.items if "type" in i] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert any("completed" in line and '{"q":"hi"}' in line for line in ui.shown)
    names = [t["name"] for t in offered_tools(sent[0])]
    assert "read_file" in names and "mcp_docs_query" in names
    assert "untrusted" in sent[0]["instructions"] or "data" in sent[0]["instructions"]


@pytest.mark.parametrize("answer", ["", "n", "maybe", "no"])
def test_anything_but_yes_denies_and_sends_nothing(tmp_path: Path, answer: str) -> None:
    ui = ScriptedUI(approvals=[answer])
    with HttpMock(spec()) as mock, MockResponses() as model:
        model.script([Step.call(server="docs", tool="query", arguments={"q": 1})])
        _, [report] = run(session_with(mock, model, ui, ["q"], tmp_path))
        assert mock.journal.count("tools/call") == 0
        outputs = function_call_outputs(bodies(model)[1])
    assert report.calls[0].status == "denied"
    assert list(outputs.values())[0].startswith("Status: denied")


def test_each_call_waits_for_its_own_approval(tmp_path: Path) -> None:
    ui = ScriptedUI(approvals=["y", ""])
    with HttpMock(spec()) as mock, MockResponses() as model:
        calls_seen: list[int] = []
        ui.on_approve = lambda view: calls_seen.append(mock.journal.count("tools/call"))
        model.script(
            [
                Step.calls(
                    [
                        Step.call(server="docs", tool="query", arguments={"n": 1}),
                        Step.call(server="docs", tool="other", arguments={"n": 2}),
                    ]
                )
            ]
        )
        _, [report] = run(session_with(mock, model, ui, ["q"], tmp_path))
        assert mock.journal.count("tools/call") == 1
    assert calls_seen == [0, 1]
    assert [c.status for c in report.calls] == ["completed", "denied"]
    assert [v.tool for v in report.confirmations] == ["query", "other"]


@pytest.mark.parametrize(
    "misbehaviour",
    [
        dict(stall=["tools/call"]),
        dict(drop_call="reset"),
        dict(drop_call="close"),
        dict(oversize_at="tools/call"),
    ],
)
def test_uncertain_outcomes_are_unknown_and_sent_once(tmp_path: Path, misbehaviour: dict) -> None:
    ui = ScriptedUI(approvals=["y"])
    with HttpMock(spec(**misbehaviour)) as mock, MockResponses() as model:
        model.script([Step.call(server="docs", tool="query", arguments={"q": 1}), Step.text("ok")])
        _, [report] = run(session_with(mock, model, ui, ["q"], tmp_path, call_timeout=0.3))
        assert mock.journal.count("tools/call") == 1
        output = list(function_call_outputs(bodies(model)[1]).values())[0]
    assert report.calls[0].status == "unknown"
    assert "may have acted" in output and "retry" in output


def test_unknown_needs_acknowledgement_declined_then_accepted(tmp_path: Path) -> None:
    ui = ScriptedUI(approvals=["y"], acks=[False, True])
    with HttpMock(spec(stall=["tools/call"])) as mock, MockResponses() as model:
        model.script(
            [Step.call(server="docs", tool="query", arguments={}), Step.text("a"), Step.text("b")]
        )
        _, reports = run(
            session_with(
                mock, model, ui, ["first", "second", "second again"], tmp_path, call_timeout=0.2
            )
        )
        sent = bodies(model)
    assert [r.question_sent for r in reports] == [True, False, True]
    assert reports[1].acknowledgements == [results.ACK_PROMPT] == ui.prompts[:1]
    assert len(sent) == 3  # call + answer for the first question, one request for the accepted one
    last_user = [i for i in sent[-1]["input"] if i.get("role") == "user"][-1]
    assert last_user["content"] == "second again"
    assert not any(i.get("content") == "second" for i in sent[-1]["input"])


def test_user_cancel_gives_unknown(tmp_path: Path) -> None:
    ui = ScriptedUI(approvals=["y"])
    with HttpMock(spec(stall=["tools/call"])) as mock, MockResponses() as model:
        model.script([Step.call(server="docs", tool="query", arguments={}), Step.text("done")])

        def cancel_when_sent(host: HostEngine) -> None:
            mock.journal.wait_for("tools/call", timeout=30)
            host.cancel()

        # The cancel ends the call: a long timeout costs nothing and never beats it.
        _, [report] = run(
            session_with(mock, model, ui, ["q"], tmp_path, call_timeout=60, during=cancel_when_sent)
        )
    assert report.calls[0].status == "unknown" and "cancelled" in report.calls[0].output


def test_sixteen_calls_per_turn_at_most(tmp_path: Path) -> None:
    ui = ScriptedUI(approvals=["y"] * 40)
    with HttpMock(spec()) as mock, MockResponses() as model:
        model.script([Step.call(server="docs", tool="query", arguments={}, repeat=True)])
        host, [report] = run(session_with(mock, model, ui, ["q"], tmp_path))
        assert mock.journal.count("tools/call") == MAX_CALLS_PER_TURN
        sent = bodies(model)
    assert len(report.calls) == MAX_CALLS_PER_TURN
    final = sent[-1]
    assert final["tool_choice"] == "none"  # the model is asked to finish
    calls = [i["call_id"] for i in final["input"] if i.get("type") == "function_call"]
    assert set(calls) == set(function_call_outputs(final))  # every call paired
    # the call asked for after the limit is answered, not executed, and goes in the next request
    assert host.conversation.history[-1]["output"] == LIMIT_OUTPUT
    assert host.conversation.history[-2]["type"] == "function_call"


def test_failed_results_and_hostile_echo_of_a_secret(tmp_path: Path) -> None:
    ui = ScriptedUI(approvals=["y", "y"])
    s = spec(reply=Reply.text(f"token is {SECRET}"))
    s.tools[1].reply = Reply.tool_error("it broke")
    log = ListSession()
    with HttpMock(s) as mock, MockResponses() as model:
        model.script(
            [
                Step.call(server="docs", tool="query", arguments={}),
                Step.call(server="docs", tool="other", arguments={}),
                Step.text("done"),
            ]
        )
        _, [report] = run(session_with(mock, model, ui, ["q"], tmp_path, session=log))
        sent = json.dumps(bodies(model))
    assert [c.status for c in report.calls] == ["completed", "failed"]
    assert "it broke" in report.calls[1].output
    assert SECRET not in sent and SECRET not in ui.text and SECRET not in json.dumps(log.items)
    assert SECRET not in report.calls[0].output


def test_read_file_builtin_is_confined_to_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello notes")
    ui = ScriptedUI()
    with HttpMock(spec()) as mock, MockResponses() as model:
        model.script(
            [
                Step.call(name="read_file", arguments={"path": "notes.txt"}),
                Step.call(name="read_file", arguments={"path": "../../etc/passwd"}),
                Step.text("ok"),
            ]
        )
        _, [report] = run(session_with(mock, model, ui, ["q"], tmp_path))
        sent = bodies(model)
    assert report.confirmations == [] and report.calls == []
    assert list(function_call_outputs(sent[1]).values()) == ["Status: completed\nhello notes"]
    assert "inside the working directory" in list(function_call_outputs(sent[2]).values())[-1]


def test_resumed_history_is_sent_first_and_nothing_is_called(tmp_path: Path) -> None:
    history = [
        {"type": "message", "role": "user", "content": "earlier"},
        {
            "type": "function_call",
            "call_id": "call_old",
            "name": "mcp_docs_gone",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_old", "output": "Status: completed\nold"},
    ]
    ui = ScriptedUI()
    with HttpMock(spec()) as mock, MockResponses() as model:
        model.script([Step.text("welcome back")])
        _, [report] = run(session_with(mock, model, ui, ["again"], tmp_path, history=history))
        assert mock.journal.count("tools/call") == 0
        sent = bodies(model)
    assert sent[0]["input"][:3] == history
    assert report.answer == "welcome back"


def test_tool_output_never_exceeds_the_limit() -> None:
    body = "x" * (results.OUTPUT_LIMIT - len(results.TRUNCATION_MARKER)) + results.TRUNCATION_MARKER
    text = results.model_output(results.Outcome(results.OUTPUT_LIMITED, body))
    assert len(text.encode()) <= results.OUTPUT_LIMIT and text.endswith(results.TRUNCATION_MARKER)
    assert text.startswith("Status: output_limit\n")


def test_tool_list_is_fixed_after_discovery(tmp_path: Path) -> None:
    ui = ScriptedUI(approvals=["y"])
    s = spec(change_tools_after_call=True, changed_tools=[Tool("brand_new")])
    with HttpMock(s) as mock, MockResponses() as model:
        model.script(
            [Step.call(server="docs", tool="query", arguments={}), Step.text("a"), Step.text("b")]
        )
        run(session_with(mock, model, ui, ["one", "two"], tmp_path))
        assert mock.journal.count("tools/list") == 1
        sent = bodies(model)
    assert all(
        {t["name"] for t in offered_tools(b)} == {t["name"] for t in offered_tools(sent[0])}
        for b in sent
    )
    assert not any("brand_new" in t["name"] for t in offered_tools(sent[-1]))
