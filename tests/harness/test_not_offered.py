"""A scripted call of a tool the host never offered is reported as what it is: "the host
offered no function for S/T", a precondition (EXP-5), not a failure of the case's rule."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from mcp_host_conformance.harness.cases.hostrun import Host, Running, Timeouts
from mcp_host_conformance.harness.contract.adapter import ServerStatus, Turn
from mcp_host_conformance.harness.verdicts.outcomes import ConformanceFailure, PreconditionFailure
from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.responses import MockResponses, Step
from mcp_host_conformance.mocks.spec import ServerSpec, Tool


class OffersNothing:
    """A host session that asks the model once, offering only a built-in tool."""

    text = ""

    def __init__(self, model: MockResponses, statuses=()) -> None:
        self.model = model
        self.statuses = statuses

    def ask(self, question, approve, acknowledge) -> Turn:
        with httpx.Client(timeout=10) as client:
            client.post(
                f"{self.model.url}/responses",
                headers={"Authorization": f"Bearer {self.model.api_key}"},
                json={
                    "model": "m",
                    "input": question,
                    "tools": [{"type": "function", "name": "read_file", "parameters": {}}],
                },
            ).raise_for_status()
        return Turn(question_sent=True)

    def stop(self):  # pragma: no cover - not used
        raise NotImplementedError


@pytest.fixture
def statuses():
    return []


@pytest.fixture
def running(tmp_path: Path, statuses):
    with MockResponses() as model, HttpMock(ServerSpec(tools=[Tool("query")])) as docs:
        host = Host(
            adapter=None,  # type: ignore[arg-type] - configuration is not used here
            home=tmp_path,
            project=tmp_path,
            model_url=model.url,
            model_key=model.api_key,
            timeouts=Timeouts(),
            model=model,
        )
        host.bind("docs", docs)
        model.script([Step.call(server="docs", tool="query")])
        yield Running(host, OffersNothing(model, statuses), host.options(), 0.0)


def test_it_is_a_precondition_of_exp_5_naming_the_tool(running):
    with pytest.raises(PreconditionFailure) as raised:
        running.ask("use the docs")
    assert raised.value.ids == ["EXP-5"]
    assert "the host offered no function for docs/query (offered: read_file)" in str(raised.value)


def test_a_case_whose_rule_is_the_offer_fails_its_own_rule(running):
    with pytest.raises(ConformanceFailure) as raised:
        running.ask("use the docs", offer_rule="DISC-4")
    assert not isinstance(raised.value, PreconditionFailure)
    assert str(raised.value).startswith("DISC-4 (MUST)")


@pytest.mark.parametrize(
    "statuses",
    [
        [
            ServerStatus("docs", False, reason="ConnectError", line="docs unavailable: refused"),
            ServerStatus("other", True, tools=1, line="other: 1 tool"),
        ]
    ],
)
def test_it_says_what_the_host_said_of_a_server_it_left_unavailable(running):
    with pytest.raises(PreconditionFailure) as raised:
        running.ask("use the docs")
    assert "the host said of docs: docs unavailable: refused" in str(raised.value)
    assert "other" not in str(raised.value).split("offered: read_file)")[1]
