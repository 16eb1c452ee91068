"""Streaming shapes and the rejections the real Responses API makes, over real HTTP."""

from __future__ import annotations

import json

import httpx
import pytest

from mcp_host_conformance.mocks.responses import MockResponses, Step, parse_sse


def fn(name: str, server: str = "docs", tool: str = "query") -> dict:
    return {
        "type": "function",
        "name": name,
        "description": f"[MCP server {server}, tool {tool}] untrusted",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }


@pytest.fixture
def model():
    with MockResponses() as m:
        yield m


@pytest.fixture
def client(model):
    with httpx.Client(
        base_url=model.url, headers={"Authorization": f"Bearer {model.api_key}"}, timeout=5
    ) as c:
        yield c


def post(client, **body):
    return client.post("/responses", json={"model": "mock", "input": "hi", **body})


def test_stream_of_a_call_and_text(model, client):
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="docs", tool="query", arguments={"q": "a long question"}),
                    Step.call(name="mcp_docs_query"),
                ]
            )
        ]
    )
    r = post(client, tools=[fn("mcp_docs_query")], stream=True)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.content)
    kinds = [e["type"] for e in events]
    assert (
        kinds[:2] == ["response.created", "response.in_progress"]
        and kinds[-1] == "response.completed"
    )
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert (
        events[0]["response"]["status"] == "in_progress" and events[0]["response"]["output"] == []
    )
    added = [e for e in events if e["type"] == "response.output_item.added"]
    assert [e["output_index"] for e in added] == [0, 1]
    assert added[0]["item"]["type"] == "function_call" and added[0]["item"]["arguments"] == ""
    first_id = added[0]["item"]["id"]
    deltas = "".join(
        e["delta"]
        for e in events
        if e["type"] == "response.function_call_arguments.delta" and e["item_id"] == first_id
    )
    done = next(
        e
        for e in events
        if e["type"] == "response.function_call_arguments.done" and e["item_id"] == first_id
    )
    assert json.loads(deltas) == json.loads(done["arguments"]) == {"q": "a long question"}
    final = events[-1]["response"]
    assert (
        final["status"] == "completed"
        and [o["name"] for o in final["output"]] == ["mcp_docs_query"] * 2
    )
    items_done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert items_done == final["output"]
    # raw framing: "event: <type>" lines precede each data line
    assert r.text.startswith("event: response.created\ndata: ")

    model.script([Step.text("Streamed answer that is long enough to be cut in pieces.")])
    events = parse_sse(post(client, stream=True).content)
    kinds = [e["type"] for e in events]
    assert kinds[2:5] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Streamed answer that is long enough to be cut in pieces."
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == text


def envelope(r, status: int) -> dict:
    assert r.status_code == status
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


@pytest.mark.parametrize(
    "name, code",
    [
        ("mcp_docs.query", "invalid_value"),
        ("has space", "invalid_value"),
        ("x" * 65, "string_above_max_length"),
    ],
)
def test_rejects_tool_names_the_api_rejects(model, client, name, code):
    err = envelope(post(client, tools=[fn("fine-name_1"), fn(name)]), 400)
    assert (
        err["type"] == "invalid_request_error"
        and err["param"] == "tools[1].name"
        and err["code"] == code
    )
    assert model.journal.count(kind="http") == 1  # journalled even when rejected


def test_accepts_a_64_character_name(client):
    assert post(client, tools=[fn("x" * 64)]).status_code == 200


def test_rejects_a_call_without_its_output_and_an_output_without_its_call(client):
    call = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}
    err = envelope(post(client, input=[{"role": "user", "content": "q"}, call]), 400)
    assert err == {
        "message": "No tool output found for function call call_1.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }
    orphan = {"type": "function_call_output", "call_id": "call_2", "output": "x"}
    err = envelope(post(client, input=[orphan]), 400)
    assert err["message"] == "No tool call found for function call output with call_id call_2."
    paired = [call, {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]
    assert post(client, input=paired).status_code == 200


def test_previous_response_calls_must_be_answered(model, client):
    model.script([Step.call(name="f"), Step.text("ok"), Step.text("ok")])
    first = post(client, tools=[fn("f")]).json()
    call_id = first["output"][0]["call_id"]
    err = envelope(post(client, previous_response_id=first["id"], input=[]), 400)
    assert call_id in err["message"]
    reply = post(
        client,
        previous_response_id=first["id"],
        input=[{"type": "function_call_output", "call_id": call_id, "output": "r"}],
    )
    assert reply.status_code == 200
    err = envelope(post(client, previous_response_id="resp_unknown"), 400)
    assert err["code"] == "previous_response_not_found"


def test_rejects_missing_or_wrong_bearer_key(model):
    with httpx.Client(base_url=model.url, timeout=5) as c:
        err = envelope(c.post("/responses", json={"model": "m", "input": "x"}), 401)
        assert err["type"] == "invalid_request_error" and "API key" in err["message"]
        err = envelope(
            c.post(
                "/responses",
                json={"model": "m", "input": "x"},
                headers={"Authorization": "Bearer sk-wrong"},
            ),
            401,
        )
        assert err["code"] == "invalid_api_key" and "sk-wrong" not in err["message"]
    assert model.journal.count(kind="http") == 2


def test_bad_json_missing_model_and_unknown_path(client):
    assert envelope(
        client.post("/responses", content=b"{nope", headers={"content-type": "application/json"}),
        400,
    )["message"].startswith("We could not parse")
    assert envelope(client.post("/responses", json={"input": "x"}), 400)["param"] == "model"
    assert envelope(client.get("/models"), 404)["message"] == "Invalid URL (GET /v1/models)"


def test_rejected_request_does_not_consume_a_step(model, client):
    model.script([Step.text("first")])
    post(client, tools=[fn("bad name")])
    assert post(client).json()["output"][0]["content"][0]["text"] == "first"
