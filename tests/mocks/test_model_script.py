"""Steps, their JSON form, resolving calls against offered tools, arguments from schemas."""

from __future__ import annotations

import json

import pytest

from mcp_host_conformance.mocks.model_script import (
    Step,
    arguments_for_schema,
    function_call_outputs,
    function_calls,
    label,
    offered_mcp_tools,
    plan_autopilot,
    plan_reply,
    script_from_json,
)

BODY = {
    "tools": [
        {
            "type": "function",
            "name": "mcp_s_t_ab12",
            "description": label("s", "t") + " rest",
            "parameters": {},
        },
        {"type": "function", "name": "builtin", "description": "not mcp"},
        {"type": "web_search"},
    ],
    "input": [
        {"type": "function_call", "call_id": "c1", "name": "builtin", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "o1"},
    ],
}


def test_label_resolution_and_exact_name():
    assert plan_reply(Step.call(server="s", tool="t", arguments={"a": 1}), BODY).calls == [
        ("mcp_s_t_ab12", '{"a":1}', None)
    ]
    assert plan_reply(Step.call(name="builtin", arguments="not json"), BODY).calls == [
        ("builtin", "not json", None)
    ]


def test_label_must_match_whole_tool_name():
    plan = plan_reply(Step.call(server="s", tool="tt"), BODY)
    assert plan.calls == [] and "no function for s/tt" in plan.text and plan.problems


def test_partial_match_in_several_calls_keeps_the_good_ones():
    plan = plan_reply(Step.calls([Step.call(server="s", tool="t"), Step.call(name="gone")]), BODY)
    assert (
        [c[0] for c in plan.calls] == ["mcp_s_t_ab12"]
        and plan.text is None
        and len(plan.problems) == 1
    )


def test_a_fallback_call_of_a_tool_not_offered_calls_an_offered_mcp_tool():
    """As a model calls only what it was given; never a built-in, and the same each time."""
    for wanted in ("gone", "other"):
        plan = plan_reply(
            Step.call(server="s", tool=wanted, arguments={"a": 1}, fallback=True), BODY
        )
        assert plan.calls == [("mcp_s_t_ab12", '{"a":1}', None)] and not plan.problems
    only_builtin = {"tools": [t for t in BODY["tools"] if t.get("name") != "mcp_s_t_ab12"]}
    plan = plan_reply(Step.call(server="s", tool="t", fallback=True), only_builtin)
    assert plan.calls == [] and plan.problems  # no MCP tool offered at all: said, as before
    assert plan_reply(Step.call(server="s", tool="gone"), BODY).problems  # not asked: none


def test_step_needs_a_target():
    with pytest.raises(ValueError):
        Step.call(server="only")
    with pytest.raises(ValueError):
        Step.error(200, "not an error")


@pytest.mark.parametrize(
    "step",
    [
        Step.call(server="s", tool="t", arguments={"x": [1]}),
        Step.call(name="n", repeat=True),
        Step.call(name="n", retry_on_error=True),
        Step.call(server="s", tool="t", fallback=True),
        Step.calls([Step.call(server="s", tool="gone", fallback=True), Step.call(name="a")]),
        Step.calls([Step.call(name="a"), Step.call(server="s", tool="t")]),
        Step.calls([Step.call(name="a")], retry_on_error=True),
        Step.text("hi"),
        Step.error(429, "slow down"),
    ],
)
def test_json_round_trip(step):
    assert Step.from_json(json.loads(json.dumps(step.to_json()))) == step


def test_script_from_json_names_the_bad_step():
    with pytest.raises(ValueError, match=r"script\[1\]"):
        script_from_json([{"type": "text", "text": "ok"}, {"type": "call"}])
    assert script_from_json([{"type": "call", "server": "s", "tool": "t"}])[0] == Step.call(
        server="s", tool="t"
    )


def test_autopilot_skips_called_tools():
    assert plan_autopilot(BODY, set()).calls[0][0] == "mcp_s_t_ab12"
    assert plan_autopilot(BODY, {"mcp_s_t_ab12"}).text.startswith("autopilot")


def test_body_readers():
    assert [t["name"] for t in offered_mcp_tools(BODY)] == ["mcp_s_t_ab12"]
    assert [c["call_id"] for c in function_calls(BODY)] == ["c1"]
    assert function_call_outputs(BODY) == {"c1": "o1"}
    assert function_calls({"input": "plain"}) == [] and offered_mcp_tools(None) == []


def test_arguments_for_schema():
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "b": {"type": ["null", "boolean"]},
            "e": {"enum": ["red", "blue"]},
            "o": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
            "a": {"type": "array", "items": {"type": "string"}},
            "optional": {"type": "string"},
        },
        "required": ["s", "i", "b", "e", "o", "a"],
    }
    assert arguments_for_schema(schema) == {
        "s": "test",
        "i": 1,
        "b": True,
        "e": "red",
        "o": {"n": 1},
        "a": [],
    }
    assert (
        arguments_for_schema("not a schema") == {} and arguments_for_schema({"type": "array"}) == {}
    )
