"""The mock model's Chat Completions and Anthropic Messages endpoints against hostile bodies
(no sockets needed), and the request readers against any JSON.

`ResponsesService.handle` is what both the HTTP server and the respx router call: any body
gets an answer (200, a stream, or the API's error envelope), never an exception, and the
readers (`mocks/responses/bodies.py`) take whatever a host sent.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.mocks.responses import (
    ResponsesService,
    Step,
    as_responses,
    function_calls,
    instructions,
    offered_functions,
    parse_sse,
    tool_outputs,
    user_texts,
)

KEY = "sk-test"
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "image", "x"])},
    optional={
        "id": st.sampled_from(["a", "b"]) | json_values,
        "tool_use_id": st.sampled_from(["a", "b"]) | json_values,
        "name": st.text(max_size=10) | json_values,
        "input": json_values,
        "text": st.text(max_size=10),
        "content": json_values,
    },
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer"]) | json_values},
    optional={
        "content": st.text(max_size=10) | st.lists(block | json_values, max_size=3) | json_values,
        "tool_call_id": st.sampled_from(["a", "b"]) | json_values,
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {"id": st.sampled_from(["a", "b"]) | json_values},
                optional={"function": st.fixed_dictionaries({}, optional={"name": json_values})},
            )
            | json_values,
            max_size=2,
        )
        | json_values,
    },
)
tool = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["function", "custom", "web_search_20250305"]) | json_values,
        "name": st.text(max_size=70) | json_values,
        "function": st.fixed_dictionaries({}, optional={"name": st.text(max_size=70)})
        | json_values,
        "input_schema": json_values,
    },
)
conversation = st.fixed_dictionaries(
    {},
    optional={
        "model": st.text(max_size=10) | json_values,
        "max_tokens": st.integers() | json_values,
        "messages": st.lists(message | json_values, max_size=4) | json_values,
        "system": json_values,
        "tools": st.lists(tool | json_values, max_size=3) | json_values,
        "stream": st.booleans() | json_values,
        "stream_options": json_values,
    },
)


def check_answer(answer) -> None:
    assert 200 <= answer.status < 600
    content = answer.content()
    if answer.events is not None:
        assert parse_sse(content)
    else:
        decoded = json.loads(content)
        if answer.status >= 400:
            assert decoded["error"]["message"]


@settings(deadline=None)
@given(conversation, st.sampled_from(["/v1/chat/completions", "/v1/messages?beta=true"]))
def test_fuzz_any_conversation_gets_an_answer(value, path):
    service = ResponsesService(api_key=KEY)
    service.script([Step.calls([Step.call(name="a"), Step.call(name="b")]), Step.text("x")])
    headers = {"authorization": f"Bearer {KEY}", "anthropic-version": "2023-06-01"}
    for _ in range(2):
        check_answer(service.handle("POST", path, dict(headers), json.dumps(value).encode()))
    for body in service.requests():
        as_responses(body)
        (offered_functions(body), tool_outputs(body), user_texts(body), instructions(body))


@settings(deadline=None)
@given(json_values)
def test_fuzz_the_readers_take_any_json(value):
    for body in (value, {"messages": value}, {"messages": [value]}, {"tools": [value]}):
        view = as_responses(body)
        assert view is body or isinstance(view, dict)
        (offered_functions(body), function_calls(body), tool_outputs(body))
        (user_texts(body), instructions(body))
