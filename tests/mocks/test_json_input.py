"""The one bounded JSON reader: clear errors for what a mock will not take, never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks.json_input import JsonInputError, check_value, read_json


def test_plain_json_is_read():
    assert read_json(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"[" * 100_000, "nested"),
        (b'{"a":' * 100_000, "nested"),
        (b"[" * 200 + b"]" * 200, "nested more than 128"),
        (b'"\xff"', "not UTF-8"),
        (b'"\\ud800"', "lone surrogate"),
        (b'{"\\udfff": 1}', "lone surrogate"),
        (b"NaN", "malformed"),
        (b"[Infinity]", "malformed"),
        (b"1" * 5000, "malformed"),  # more digits than Python converts
        (b"\xef\xbb\xbf{}", "byte order mark"),
        (b"{", "malformed"),
        (b"", "malformed"),
    ],
)
def test_what_a_mock_will_not_take_is_a_clear_error(data, reason):
    with pytest.raises(JsonInputError, match=reason):
        read_json(data)


def test_size_is_checked_before_decoding():
    with pytest.raises(JsonInputError, match="over the 10-byte limit"):
        read_json(b'"' + b"x" * 100 + b'"', max_bytes=10)


def test_depth_limit_is_exact():
    assert read_json(b"[" * 128 + b"]" * 128)
    with pytest.raises(JsonInputError):
        read_json(b"[" * 129 + b"]" * 129)
    check_value({"a": {"b": 1}}, max_depth=2)
    with pytest.raises(JsonInputError):
        check_value({"a": {"b": {}}}, max_depth=2)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@settings(deadline=None)
@given(json_values)
def test_fuzz_every_json_value_round_trips(value):
    assert read_json(json.dumps(value).encode()) == value


@settings(deadline=None)
@given(st.binary(max_size=2000) | st.text(max_size=500).map(lambda t: t.encode("utf-8", "replace")))
def test_fuzz_any_bytes_give_a_value_or_a_clear_error(data):
    try:
        value = read_json(data)
    except JsonInputError as exc:
        assert str(exc)
        return
    json.dumps(value).encode("utf-8")  # whatever is accepted encodes back


@settings(deadline=None)
@given(st.integers(1, 3000), st.sampled_from(["[", '{"k":', "[1,"]))
def test_fuzz_nesting_of_any_depth_is_bounded(depth, opener):
    data = (opener * depth).encode()
    with pytest.raises(JsonInputError):
        read_json(data)
