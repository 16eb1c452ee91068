"""Specs from dicts and files: every field checked, every problem one SpecError naming it."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks.spec import (
    MISSING,
    Misbehaviour,
    Reply,
    ServerSpec,
    SpecError,
    Tool,
    dump_spec,
    load_spec,
    spec_from_dict,
)


def test_a_full_spec_round_trips_through_a_file(tmp_path):
    spec = ServerSpec(
        name="full",
        tools=[
            Tool("a", "A.", input_schema=MISSING, annotations={"readOnlyHint": True}),
            Tool("b", reply=Reply.rpc_error("no", code=-32001)),
        ],
        page_size=1,
        response_mode="json",
        instructions="hi",
        misbehaviour=Misbehaviour(
            stall=["ping"],
            delays={"tools/list": 0.5},
            poll_call="close-again",
            poll_tools=["a"],
            poll_retry_ms=10,
            changed_tools=[Tool("c")],
        ),
    )
    path = tmp_path / "spec.json"
    dump_spec(spec, path)
    assert load_spec(path) == spec


def test_toml_files_are_read(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "t"\n[[tools]]\nname = "x"\n[misbehaviour]\npoll_call = "deliver"\n')
    loaded = load_spec(path)
    assert loaded.tools[0].name == "x" and loaded.misbehaviour.poll_call == "deliver"


@pytest.mark.parametrize(
    "data, where",
    [
        ({"tools": 3}, "spec.tools"),
        ({"tools": [{"description": "no name"}]}, "spec.tools[0]: missing key(s) name"),
        ({"tools": [{"name": ""}]}, "spec.tools[0].name"),
        ({"page_size": 0}, "spec.page_size"),
        ({"page_size": True}, "spec.page_size"),
        ({"response_mode": "xml"}, "spec.response_mode"),
        ({"name": 5}, "spec.name"),
        ({"bogus": 1}, "unknown key(s) 'bogus'"),
        ({"misbehaviour": {"delays": {"ping": "soon"}}}, "spec.misbehaviour.delays.ping"),
        ({"misbehaviour": {"delays": {"ping": -1}}}, "spec.misbehaviour.delays.ping"),
        ({"misbehaviour": {"delays": {"ping": float("nan")}}}, "delays.ping"),
        ({"misbehaviour": {"stall": "ping"}}, "spec.misbehaviour.stall"),
        ({"misbehaviour": {"drop_call": "explode"}}, "spec.misbehaviour.drop_call"),
        ({"misbehaviour": {"poll_call": "sometimes"}}, "spec.misbehaviour.poll_call"),
        ({"misbehaviour": {"poll_retry_ms": -1}}, "spec.misbehaviour.poll_retry_ms"),
        ({"misbehaviour": {"oversize_bytes": 10**12}}, "spec.misbehaviour.oversize_bytes"),
        ({"misbehaviour": {"redirect_status": 200}}, "spec.misbehaviour.redirect_status"),
        ({"misbehaviour": {"reject_status": 200}}, "spec.misbehaviour.reject_status"),
        ({"misbehaviour": {"exit_at_once": 300}}, "spec.misbehaviour.exit_at_once"),
        ({"misbehaviour": {"garbage": "yes"}}, "spec.misbehaviour.garbage"),
        ({"misbehaviour": {"changed_tools": [{"name": 1}]}}, "changed_tools[0].name"),
        ({"tools": [{"name": "x", "reply": {"pad_to": 10**12}}]}, "reply.pad_to"),
        ({"tools": [{"name": "x", "reply": {"content": ["text"]}}]}, "reply.content[0]"),
        ({"tools": [{"name": "x", "reply": {"jsonrpc_error": {"code": "x"}}}]}, "code"),
    ],
)
def test_a_wrong_field_is_named(data, where):
    with pytest.raises(SpecError, match=None) as caught:
        spec_from_dict(data)
    assert where in str(caught.value)


def test_a_python_built_spec_is_checked_too():
    with pytest.raises(SpecError, match="delays"):
        spec_from_dict(ServerSpec(misbehaviour=Misbehaviour(delays={"ping": "x"})))  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "name, content, reason",
    [
        ("deep.json", b"[" * 100_000, "nested"),
        ("deep.json", b'{"tools": ' + b"[" * 300 + b"]" * 300 + b"}", "nested"),
        ("bad.json", b'{"name": "\xff"}', "UTF-8"),
        ("bad.json", b"{oops", "malformed"),
        ("deep.toml", b"a = " + b"[" * 100_000, "too deeply"),
        ("dotted.toml", b"a" + b".a" * 100_000 + b" = 1", "too deeply"),
        ("table.toml", b"[" + b"a." * 100_000 + b"b]", "too deeply"),
        ("bad.toml", b"tools = [", "malformed"),
        ("bad.toml", b'name = "\xff"', "UTF-8"),
    ],
)
def test_hostile_spec_files_are_one_clear_error(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert reason in str(caught.value) and name in str(caught.value)


def test_a_huge_spec_file_is_refused_unread(tmp_path, monkeypatch):
    import mcp_host_conformance.mocks.spec as spec_module

    monkeypatch.setattr(spec_module, "MAX_SPEC_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"description": "x" * 200}))
    with pytest.raises(SpecError, match="over 100 bytes"):
        load_spec(path)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "nope.json")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=15,
)
FIELDS = st.sampled_from(
    ["name", "tools", "page_size", "response_mode", "misbehaviour", "description"]
)
MIS_FIELDS = st.sampled_from(
    ["stall", "delays", "drop_call", "poll_call", "poll_tools", "oversize_bytes", "garbage"]
)
spec_like = st.dictionaries(FIELDS, json_values | st.dictionaries(MIS_FIELDS, json_values))


@settings(deadline=None)
@given(json_values | spec_like)
def test_fuzz_any_dict_is_a_spec_or_a_spec_error(data):
    try:
        spec = spec_from_dict(data)
    except SpecError as exc:
        assert str(exc).startswith("spec")
        return
    assert isinstance(spec, ServerSpec)
    json.dumps(spec.to_dict())


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=500), st.sampled_from([".json", ".toml"]))
def test_fuzz_any_file_is_a_spec_or_a_spec_error(tmp_path, content, suffix):
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(content)
    try:
        load_spec(path)
    except SpecError as exc:
        assert "fuzz" in str(exc)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("oversize_fill", "xy"),
        ("oversize_fill", '"'),
        ("oversize_fill", "\x1b"),
        ("reject_challenge", "Bearer \r\nX-Injected: 1"),
        ("reject_challenge", "Bearer \x9b"),
        ("exit_at", 3),
        ("daemonize", "yes"),
    ],
)
def test_the_power_fields_are_checked(field, value):
    with pytest.raises(SpecError, match=f"spec.misbehaviour.{field}"):
        spec_from_dict({"misbehaviour": {field: value}})
