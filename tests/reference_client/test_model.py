"""The Responses API client: reply parsing (pure) and errors against the mock service."""

from __future__ import annotations

import json

import pytest

from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.reference_client import model as model_module
from mcp_host_conformance.reference_client.model import (
    ModelClient,
    ModelError,
    history_item,
    reply_from_body,
    reply_from_events,
)
from tests.reference_client.engine_support import (
    RawHttpServer,
    StreamingHttpServer,
    http_answer,
    run,
)


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


# ---- a hostile model service (hardening) ---------------------------------------------------

QUESTION = [{"type": "message", "role": "user", "content": "q"}]


def respond_once(url: str, *, timeout: float = 20.0):
    client = ModelClient(url, "key")

    async def go():
        try:
            return await client.respond(QUESTION, [], "i")
        finally:
            await client.close()

    return run(go(), timeout=timeout)


@pytest.mark.parametrize("status", [200, 500])
def test_deeply_nested_reply_is_an_error_not_a_crash(status: int) -> None:
    deep = b'{"output": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with RawHttpServer(lambda request: http_answer(status, deep)) as server:
        with pytest.raises(ModelError) as caught:
            respond_once(server.url.removesuffix("/mcp"))
    assert str(status) in str(caught.value) or "nested" in str(caught.value)


def test_endless_reply_is_abandoned_at_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_module, "MAX_REPLY_BYTES", 1024 * 1024)
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    with StreamingHttpServer(head, b" " * 65536, limit=256 * 1024 * 1024) as server:
        with pytest.raises(ModelError, match="over"):
            respond_once(server.url + "/v1")
        assert server.done.wait(10)
    assert server.sent < 64 * 1024 * 1024  # read up to the limit, not to the end


def test_announced_oversized_reply_is_refused_before_reading() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 209715200\r\n\r\n"
    with StreamingHttpServer(head, b"", limit=0) as server:
        with pytest.raises(ModelError, match="over 32 MiB"):
            respond_once(server.url + "/v1", timeout=10)


def test_compressed_reply_is_refused() -> None:
    answer = http_answer(200, b"\x1f\x8b garbage", extra="content-encoding: gzip\r\n")
    with RawHttpServer(lambda request: answer) as server:
        with pytest.raises(ModelError, match="compressed"):
            respond_once(server.url.removesuffix("/mcp"))


def test_a_streamed_reply_is_read_from_its_completed_event() -> None:
    response = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]}
    events = (
        b'event: response.created\ndata: {"type":"response.created"}\n\n'
        b"event: response.completed\ndata: "
        + json.dumps({"type": "response.completed", "response": response}).encode()
        + b"\n\n"
    )
    answer = http_answer(200, events, content_type="text/event-stream")
    with RawHttpServer(lambda request: answer) as server:
        assert respond_once(server.url.removesuffix("/mcp")).text == "hi"
    assert reply_from_events(b"data: [DONE]\n\n" + events).text == "hi"
    for broken in (b"data: {not json\n\n", b'data: {"type":"error"}\n\n', b""):
        with pytest.raises(ModelError):
            reply_from_events(broken)
