"""The Responses API client: reply parsing (pure) and errors against the mock service."""

from __future__ import annotations

import pytest

from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.reference_client.model import (
    ModelClient,
    ModelError,
    history_item,
    reply_from_body,
)
from tests.reference_client.engine_support import run


def test_reply_keeps_calls_and_text_drops_the_rest() -> None:
    body = {
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "c1",
                "name": "f",
                "arguments": "{}",
                "status": "completed",
            },
            {
                "type": "message",
                "id": "m",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}],
            },
        ]
    }
    reply = reply_from_body(body)
    assert reply.calls == [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    ]
    assert reply.text == "hi"
    assert [i["type"] for i in reply.items] == ["function_call", "message"]


@pytest.mark.parametrize("body", [None, {}, {"output": {}}])
def test_reply_without_output_is_an_error(body) -> None:
    with pytest.raises(ModelError):
        reply_from_body(body)


def test_malformed_function_call_is_an_error() -> None:
    with pytest.raises(ModelError):
        history_item({"type": "function_call", "call_id": 1, "name": "f", "arguments": "{}"})


def test_service_error_is_reported_once_without_the_key() -> None:
    with MockResponses() as model:
        model.script([Step.error(500, "boom")])
        client = ModelClient(model.url, model.api_key)

        async def go():
            try:
                return await client.respond(
                    [{"type": "message", "role": "user", "content": "q"}], [], "i"
                )
            finally:
                await client.close()

        with pytest.raises(ModelError) as caught:
            run(go())
        assert len(model.journal.entries(kind="http")) == 1  # no retry
    assert "500" in str(caught.value) and model.api_key not in str(caught.value)


def test_request_carries_bearer_key_and_model() -> None:
    with MockResponses() as model:
        model.script([Step.text("hello")])
        client = ModelClient(model.url + "/", model.api_key, model="m-1")

        async def go():
            try:
                return await client.respond(
                    [{"type": "message", "role": "user", "content": "q"}], [], "inst"
                )
            finally:
                await client.close()

        assert run(go()).text == "hello"
        [entry] = model.journal.entries(kind="http")
    assert entry.extra["body"]["model"] == "m-1" and entry.extra["body"]["instructions"] == "inst"
    assert entry.headers["authorization"] == f"Bearer {model.api_key}"
