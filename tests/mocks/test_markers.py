"""Markers: every mock serves one per tool, and the mock model finds a tool by it wherever a
host put it (any name, no label, inside a Responses `namespace` tool)."""

from __future__ import annotations

import json

import httpx
import pytest

from mcp_host_conformance.mocks.responses import MockResponses, Step
from mcp_host_conformance.mocks.responses.script import find_tool, plan_autopilot, plan_reply
from mcp_host_conformance.mocks.spec import (
    MARKER_PREFIX,
    ServerSpec,
    Tool,
    load_spec,
    tool_marker,
)
from mcp_host_conformance.mocks.stdio_server import StdioMock

SPEC = ServerSpec(
    tools=[
        Tool(
            "query", "Looks things up.", {"type": "object", "properties": {"q": {"type": "string"}}}
        ),
        Tool("fetch"),
    ]
)


def served_tools(raw, start_mock, spec: ServerSpec = SPEC) -> tuple[object, list[dict]]:
    mock = start_mock(spec)
    client = raw(mock)
    client.initialize()
    return mock, client.request("tools/list")["result"]["tools"]


def test_every_served_tool_carries_its_marker_in_description_and_schema(raw, start_mock):
    mock, tools = served_tools(raw, start_mock)
    for tool in tools:
        marker = tool_marker(mock.marker_token, tool["name"])
        assert tool["description"].endswith(f"(ref {marker})")
        assert marker in tool["inputSchema"]["description"]
    query = next(t for t in tools if t["name"] == "query")
    assert query["description"].startswith("Looks things up.")  # the text itself unchanged
    assert query["inputSchema"]["properties"] == {"q": {"type": "string"}}
    assert SPEC.tools[0].marker is None  # the caller's spec is not touched


def test_markers_differ_per_mock_and_tool_and_follow_changed_tools(raw, start_mock):
    first, first_tools = served_tools(raw, start_mock)
    second, second_tools = served_tools(raw, start_mock)
    markers = {
        tool_marker(m.marker_token, t["name"])
        for m, tools in ((first, first_tools), (second, second_tools))
        for t in tools
    }
    assert len(markers) == 4
    first.change_tools([Tool("renamed")])
    client = raw(first)
    client.initialize()
    (renamed,) = client.request("tools/list")["result"]["tools"]
    assert tool_marker(first.marker_token, "renamed") in renamed["description"]


def test_a_stdio_mock_marks_its_spec_file(tmp_path):
    mock = StdioMock(SPEC, tmp_path)
    served = load_spec(mock.spec_path)
    assert [t.marker for t in served.tools] == [
        tool_marker(mock.marker_token, "query"),
        tool_marker(mock.marker_token, "fetch"),
    ]


# ---- finding the function a host offered ------------------------------------------------------

TOKEN = "t0ken"
QUERY = tool_marker(TOKEN, "query")


def codex_like_body() -> dict:
    """Tools as Codex CLI offers them: MCP functions inside a namespace, raw descriptions."""
    return {
        "model": "m",
        "tools": [
            {"type": "function", "name": "exec_command", "description": "Runs a command."},
            {
                "type": "namespace",
                "name": "mcp__docs",
                "description": "Tools in the mcp__docs namespace.",
                "tools": [
                    {
                        "type": "function",
                        "name": "query",
                        "description": f"Looks things up. (ref {QUERY})",
                        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                    }
                ],
            },
        ],
    }


def test_a_bound_server_is_found_inside_a_namespace_and_called_as_offered():
    plan = plan_reply(Step.call(server="docs", tool="query"), codex_like_body(), {"docs": TOKEN})
    assert plan.calls == [("query", "{}", "mcp__docs")] and not plan.problems


def test_the_marker_is_found_anywhere_even_with_the_description_replaced():
    body = {
        "model": "m",
        "tools": [
            {
                "type": "function",
                "name": "fn_7",
                "description": "A host's own words.",
                "parameters": {"type": "object", "description": f"(ref {QUERY})"},
            }
        ],
    }
    assert find_tool(Step.call(server="docs", tool="query").tool_calls[0], body, {"docs": TOKEN})


def test_a_tool_the_host_did_not_offer_is_said_so():
    plan = plan_reply(Step.call(server="docs", tool="fetch"), codex_like_body(), {"docs": TOKEN})
    assert plan.calls == []
    assert plan.problems == [
        "the host offered no function for docs/fetch (offered: exec_command, mcp__docs/query)"
    ]


def test_the_autopilot_calls_marked_functions_inside_namespaces():
    plan = plan_autopilot(codex_like_body(), set())
    assert [(name, ns) for name, _, ns in plan.calls] == [("query", "mcp__docs")]


@pytest.mark.parametrize("stream", [False, True])
def test_the_service_replies_with_the_namespace_and_journals_it(stream):
    with MockResponses() as model:
        model.bind("docs", TOKEN)
        model.script([Step.call(server="docs", tool="query", arguments={"q": "x"})])
        body = {**codex_like_body(), "input": "hi", "stream": stream}
        with httpx.Client(timeout=10) as client:
            response = client.post(
                f"{model.url}/responses",
                json=body,
                headers={"Authorization": f"Bearer {model.api_key}"},
            )
        assert response.status_code == 200
        if stream:
            done = [
                json.loads(line[6:])
                for line in response.text.splitlines()
                if line.startswith("data: ") and '"response.completed"' in line
            ][0]["response"]
        else:
            done = response.json()
        (call,) = done["output"]
        assert (call["name"], call["namespace"]) == ("query", "mcp__docs")
        (entry,) = model.journal.entries(kind="http")
        assert entry.extra["reply_calls"][0]["namespace"] == "mcp__docs"


def test_bindings_can_be_posted_to_a_standalone_service():
    with MockResponses() as model, httpx.Client(timeout=10) as client:
        answer = client.post(f"{model.url[:-3]}/__servers", json={"docs": TOKEN})
        assert answer.status_code == 200 and answer.json() == {"servers": 1}
        assert client.post(f"{model.url[:-3]}/__servers", json=["docs"]).status_code == 400
    assert MARKER_PREFIX in QUERY
