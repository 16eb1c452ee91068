"""The Responses service's request handling against hostile bodies (no sockets needed).

`ResponsesService.handle` is what both the HTTP server and the respx router call, so
these properties hold for both: any body gets an answer (200 or an API error envelope),
never an exception; every request is journalled, rejected or not.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks.responses import ResponsesService, parse_sse

KEY = "sk-test"
HEADERS = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}


def handle(service: ResponsesService, raw: bytes, path: str = "/v1/responses"):
    return service.handle("POST", path, dict(HEADERS), raw, "test")


def _check(answer) -> None:
    assert 200 <= answer.status < 600
    content = answer.content()
    if answer.events is not None:
        assert parse_sse(content)
    elif content:
        decoded = json.loads(content)
        if answer.status >= 400:
            assert decoded["error"]["message"]


@pytest.mark.parametrize(
    "raw, reason",
    [
        (b"[" * 100_000, "nested"),
        (b'{"model": "m", "input": ' + b"[" * 1000 + b"]" * 1000 + b"}", "nested"),
        (b'{"model": "\xff"}', "UTF-8"),
        (b'{"model": "\\ud800"}', "surrogate"),
        (b"", "empty"),
    ],
)
def test_unreadable_bodies_are_a_400_saying_why_and_are_journalled(raw, reason):
    service = ResponsesService(api_key=KEY)
    answer = handle(service, raw)
    assert answer.status == 400 and reason in json.loads(answer.body)["error"]["message"]
    entry = service.journal.entries(kind="http")[0]
    assert entry.body_size == len(raw) and reason in entry.extra["error"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
tool = st.fixed_dictionaries(
    {"type": st.just("function"), "name": st.text(max_size=70)},
    optional={"description": st.text(max_size=40), "parameters": json_values},
)
item = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "function_call", "function_call_output", "x"])},
    optional={
        "call_id": st.text(max_size=8),
        "output": json_values,
        "role": st.text(max_size=8),
        "content": json_values,
        "name": st.text(max_size=10),
        "arguments": st.text(max_size=20),
    },
)
body = st.fixed_dictionaries(
    {},
    optional={
        "model": st.text(max_size=10) | json_values,
        "input": st.lists(item, max_size=4) | json_values,
        "tools": st.lists(tool | json_values, max_size=4) | json_values,
        "stream": st.booleans() | json_values,
        "store": st.booleans(),
        "previous_response_id": st.text(max_size=10),
    },
)


@settings(deadline=None)
@given(body)
def test_fuzz_any_request_body_gets_an_answer(value):
    service = ResponsesService(api_key=KEY)
    _check(handle(service, json.dumps(value).encode()))
    assert service.journal.count(kind="http") == 1


@settings(deadline=None)
@given(st.binary(max_size=1000), st.sampled_from(["/v1/responses", "/__script", "/v1/x"]))
def test_fuzz_any_bytes_get_an_answer(raw, path):
    service = ResponsesService(api_key=KEY)
    _check(handle(service, raw, path))


@settings(deadline=None)
@given(json_values)
def test_fuzz_any_script_posted_is_taken_or_refused_clearly(value):
    service = ResponsesService(api_key=KEY)
    answer = handle(service, json.dumps(value).encode(), "/__script")
    assert answer.status in (200, 400)
    _check(answer)
