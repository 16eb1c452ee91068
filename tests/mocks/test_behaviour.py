"""`behaviour.decide`: each misbehaviour planned once, the same for every transport."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks import _rpc
from mcp_host_conformance.mocks.behaviour import Behaviour, Plan, decide
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

TOOLS = [Tool("t", reply=Reply.text("fine")), Tool("u")]


def spec(**mis) -> ServerSpec:
    return ServerSpec(tools=list(TOOLS), misbehaviour=Misbehaviour(**mis))


def call(name: str = "t", id_: int = 7) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name}}


def plan(message: dict, **mis) -> Plan:
    return decide(spec(**mis), list(TOOLS), 0, message)


def test_a_well_behaved_mock_answers_as_the_protocol_says():
    got = plan(call())
    assert got.reply == _rpc.answer(spec(), call()) and got.answers
    assert (got.delay, got.stall, got.garbage, got.drop, got.poll) == (0, False, False, None, None)
    assert got.counts_as_call and got.events == ()


def test_garbage_comes_before_everything_else():
    got = plan(call(), garbage=True, stall=["tools/call"], drop_call="reset")
    assert got.garbage and got.reply is None and got.answers


@pytest.mark.parametrize("how", ["reset", "close", "stall"])
def test_drop_is_for_calls_only(how):
    dropped = plan(call(), drop_call=how)
    assert dropped.drop == how and not dropped.answers
    assert dropped.events == ({"event": f"call-dropped-{how}"},)
    assert plan({"jsonrpc": "2.0", "id": 1, "method": "ping"}, drop_call=how).answers


def test_stall_is_per_method_and_journalled():
    got = plan({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, stall=["tools/list"])
    assert got.stall and not got.answers
    assert got.events == ({"event": "stalled", "method": "tools/list", "id": 3},)
    assert plan(call(), stall=["tools/list"]).answers


def test_delay_is_per_method():
    assert plan(call(), delays={"tools/call": 0.25}).delay == 0.25
    assert plan({"jsonrpc": "2.0", "id": 1, "method": "ping"}, delays={"tools/call": 1}).delay == 0


@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
def test_oversize_pads_one_answer_and_says_so(method):
    message = call() if method == "tools/call" else {"jsonrpc": "2.0", "id": 1, "method": method}
    got = plan(message, oversize_at=method, oversize_bytes=100_000)
    assert got.reply is not None and len(_rpc.compact(got.reply)) >= 100_000
    assert got.events == ({"event": "oversized", "method": method, "bytes": 100_000},)


def test_tools_change_after_the_first_answered_call_only():
    behaviour = Behaviour(spec(change_tools_after_call=True, changed_tools=[Tool("new")]))
    first = behaviour.plan(call())
    assert first.tools_after is not None and [t.name for t in first.tools_after] == ["new"]
    assert [t.name for t in behaviour.tools] == ["new"]
    assert behaviour.plan(call("new")).tools_after is None


def test_a_stalled_call_does_not_count_as_the_first():
    behaviour = Behaviour(
        spec(change_tools_after_call=True, changed_tools=[Tool("new")], garbage=False)
    )
    behaviour.spec.misbehaviour.stall = ["tools/call"]
    behaviour.plan(call())
    assert [t.name for t in behaviour.tools] == ["t", "u"]


def test_stderr_flood_is_planned_before_each_call():
    assert plan(call(), stderr_flood=10).flood_stderr == 10
    assert plan({"jsonrpc": "2.0", "id": 1, "method": "ping"}, stderr_flood=10).flood_stderr == 0


@pytest.mark.parametrize(
    "variant, delivered",
    [("deliver", "result"), ("close-again", "result"), ("error", "error"), ("stall", None)],
)
def test_polling_plans_what_the_resumed_stream_delivers(variant, delivered):
    got = plan(call(), poll_call=variant)
    assert got.poll == variant
    if delivered is None:
        assert got.reply is None
    else:
        assert got.reply is not None and delivered in got.reply and got.reply["id"] == 7


def test_polling_can_be_limited_to_some_tools():
    assert plan(call("t"), poll_call="deliver", poll_tools=["u"]).poll is None
    assert plan(call("u"), poll_call="deliver", poll_tools=["u"]).poll == "deliver"
    assert plan({"jsonrpc": "2.0", "id": 1, "method": "ping"}, poll_call="deliver").poll is None


def test_behaviour_tools_can_be_replaced():
    behaviour = Behaviour(spec())
    behaviour.set_tools([Tool("z")])
    listed = behaviour.plan({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).reply
    assert listed is not None and [t["name"] for t in listed["result"]["tools"]] == ["z"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
methods = st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "x/y"]) | st.text()


@settings(deadline=None)
@given(
    methods,
    st.integers() | st.text(max_size=10),
    json_values,
    st.booleans(),
    st.sampled_from([None, "deliver", "stall", "error", "close-again"]),
)
def test_fuzz_any_request_gets_a_plan_with_a_reply_to_its_id(method, id_, params, oversize, poll):
    message = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
    mis = {"poll_call": poll, "oversize_at": method if oversize else None, "oversize_bytes": 2000}
    got = plan(message, **mis)
    if got.reply is not None:
        assert got.reply["id"] == id_ and ("result" in got.reply) != ("error" in got.reply)
        json.dumps(got.reply)


@settings(deadline=None)
@given(json_values)
def test_fuzz_classify_any_decoded_message(message):
    """The JSON-RPC message classifier (both transports) on any decoded JSON value."""
    kind, problem = _rpc.classify(message)
    assert kind in ("request", "notification", "response", "invalid")
    assert (problem is not None) == (kind == "invalid")
    if problem is not None:
        assert problem["error"]["code"] == _rpc.INVALID_REQUEST
        assert problem["id"] is None or isinstance(problem["id"], str | int)
        json.dumps(problem)


@pytest.mark.parametrize("fill", ["x", "\u00e9", "\u20ac", "\U0001f600"])
@pytest.mark.parametrize("method", ["initialize", "tools/list", "tools/call"])
def test_oversize_pads_to_exactly_that_many_bytes_whatever_the_fill(method, fill):
    message = call() if method == "tools/call" else {"jsonrpc": "2.0", "id": 1, "method": method}
    for size in (1000, 1001, 1002, 65_537):
        got = plan(message, oversize_at=method, oversize_bytes=size, oversize_fill=fill)
        assert got.reply is not None and len(_rpc.compact(got.reply).encode()) == size
    wide = plan(message, oversize_at=method, oversize_bytes=30_000, oversize_fill="\u20ac")
    text = _rpc.compact(wide.reply)
    assert len(text) < 12_000  # bytes three times the characters, near enough


def test_fail_at_answers_that_method_with_its_error():
    message = {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}}
    got = plan(message, fail_at="initialize", fail_message="no \x1b[2J thanks")
    assert got.reply == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32603, "message": "no \x1b[2J thanks"},
    }
    assert got.events == ({"event": "failed", "method": "initialize"},)
    assert plan(call(), fail_at="initialize").reply == _rpc.answer(spec(), call())


def test_garbage_at_one_method_only():
    got = plan(call(), garbage_at="tools/call")
    assert got.garbage and got.answers
    assert not plan({"jsonrpc": "2.0", "id": 1, "method": "ping"}, garbage_at="tools/call").garbage


def test_a_lost_session_is_the_first_call_s_only():
    got = plan(call(), call_session_lost=True)
    assert got.session_lost and got.reply == _rpc.answer(spec(), call())  # stdio: the reply
    assert {"event": "session-lost", "method": "tools/call"} in got.events
    assert got.counts_as_call  # so the call sent again after a new initialize is answered
    assert not decide(spec(call_session_lost=True), list(TOOLS), 1, call()).session_lost
    assert not plan(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}, call_session_lost=True
    ).session_lost


def test_call_http_status_keeps_the_reply_for_stdio():
    got = plan(call(), call_http_status=502)
    assert got.http_status == 502 and got.reply == _rpc.answer(spec(), call())
    assert {"event": "call-http-status", "status": 502} in got.events
    assert (
        plan({"jsonrpc": "2.0", "id": 1, "method": "ping"}, call_http_status=502).http_status
        is None
    )
