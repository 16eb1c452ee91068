"""The mock model over Chat Completions and Anthropic Messages, beside the Responses API:
one script and one journal, each API's own shapes, streams, errors, keys and rejections.

A turn is a scripted call of a marked tool and its follow-up with the tool's result; the
same script plays in each API. The official SDKs, when importable (they are not project
dependencies), complete such a turn too (the last tests).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mcp_host_conformance.mocks.responses import (
    MockResponses,
    Step,
    as_responses,
    function_call_outputs,
    function_calls,
    instructions,
    offered_functions,
    parse_sse,
    tool_outputs,
    user_texts,
)
from mcp_host_conformance.mocks.spec import tool_marker

TOKEN = "0123456789abcdef"
QUERY = tool_marker(TOKEN, "query")
FETCH = tool_marker(TOKEN, "fetch")
QUERY_SCHEMA = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
    "description": f"(ref {QUERY})",
}


def chat_tools() -> list[dict]:
    return [
        {
            "type": "function",
            "function": {
                "name": "docs__query",
                "description": f"Looks things up. (ref {QUERY})",
                "parameters": QUERY_SCHEMA,
            },
        },
        {
            "type": "function",
            "function": {"name": "docs__fetch", "description": f"Fetches. (ref {FETCH})"},
        },
        {"type": "function", "function": {"name": "read_file", "description": "built-in"}},
    ]


def messages_tools() -> list[dict]:
    return [
        {
            "name": "docs__query",
            "description": f"Looks things up. (ref {QUERY})",
            "input_schema": QUERY_SCHEMA,
        },
        {
            "name": "docs__fetch",
            "description": "Fetches.",
            "input_schema": {"type": "object", "description": f"(ref {FETCH})"},
            "cache_control": {"type": "ephemeral"},
        },
        {"name": "read_file", "description": "built-in", "input_schema": {"type": "object"}},
        {"type": "web_search_20250305", "name": "web_search"},
    ]


@pytest.fixture
def model():
    with MockResponses() as m:
        m.bind("docs", TOKEN)
        yield m


@pytest.fixture
def http():
    with httpx.Client(timeout=10) as c:
        yield c


def chat(http, model, headers: dict | None = None, **body) -> httpx.Response:
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}], **body}
    auth = {"authorization": f"Bearer {model.api_key}"} if headers is None else headers
    return http.post(f"{model.url}/chat/completions", json=body, headers=auth)


def anthropic_headers(model) -> dict:
    return {"x-api-key": model.api_key, "anthropic-version": "2023-06-01"}


def messages(http, model, headers: dict | None = None, query: str = "", **body) -> httpx.Response:
    body = {
        "model": "claude-test",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "hi"}],
        **body,
    }
    headers = anthropic_headers(model) if headers is None else headers
    return http.post(f"{model.anthropic_url}/v1/messages{query}", json=body, headers=headers)


def test_urls(model):
    assert model.url == model.anthropic_url + "/v1"
    assert model.anthropic_url.startswith("http://127.0.0.1:") and model.port


# ---- Chat Completions ------------------------------------------------------------------------


def test_chat_turn_with_a_scripted_call_and_its_follow_up(model, http):
    model.script([Step.call(server="docs", tool="query", arguments={"q": "mcp"}), Step.text("ok")])
    r = chat(http, model, tools=chat_tools())
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    done = r.json()
    assert done["object"] == "chat.completion" and done["id"].startswith("chatcmpl-")
    (choice,) = done["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["index"] == 0
    message = choice["message"]
    assert message["role"] == "assistant" and message["content"] is None
    (call,) = message["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "docs__query", "arguments": '{"q":"mcp"}'}
    assert set(done["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}

    follow_up = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        message,
        {"role": "tool", "tool_call_id": call["id"], "content": "found it"},
    ]
    r = chat(http, model, tools=chat_tools(), messages=follow_up)
    (choice,) = r.json()["choices"]
    assert choice["finish_reason"] == "stop" and choice["message"]["content"] == "ok"
    assert "tool_calls" not in choice["message"]

    first, second = model.journal.entries(kind="http")
    assert first.path == "/v1/chat/completions" and first.extra["api"] == "chat"
    assert first.extra["reply_calls"] == [
        {"call_id": call["id"], "name": "docs__query", "arguments": '{"q":"mcp"}'}
    ]
    assert second.extra["reply_calls"] == [] and second.extra["body"]["messages"] == follow_up
    assert model.requests() == [first.extra["body"], second.extra["body"]]


def chat_stream(http, model, **body) -> tuple[httpx.Response, list[dict]]:
    r = chat(http, model, stream=True, **body)
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert "event:" not in r.text and r.text.endswith("data: [DONE]\n\n")
    return r, parse_sse(r.content)


def test_chat_stream_of_two_calls_with_usage(model, http):
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="docs", tool="query", arguments={"q": "a long question"}),
                    Step.call(server="docs", tool="fetch"),
                ]
            )
        ]
    )
    _, chunks = chat_stream(http, model, tools=chat_tools(), stream_options={"include_usage": True})
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({(c["id"], c["created"], c["model"]) for c in chunks}) == 1
    *body, last = chunks
    assert last["choices"] == [] and set(last["usage"]) >= {"prompt_tokens", "total_tokens"}
    assert all(c["usage"] is None for c in body)
    deltas = [c["choices"][0]["delta"] for c in body]
    assert [d.get("role") for d in deltas].count("assistant") == 1 and deltas[0]["role"]
    assert body[-1]["choices"][0]["finish_reason"] == "tool_calls" and deltas[-1] == {}
    assert all(c["choices"][0]["finish_reason"] is None for c in body[:-1])
    calls: dict[int, dict] = {}
    for delta in deltas:
        for piece in delta.get("tool_calls", []):
            found = calls.setdefault(piece["index"], {"arguments": ""})
            if "id" in piece:  # only in the first piece of each call
                assert "id" not in found
                found.update(id=piece["id"], name=piece["function"]["name"])
            found["arguments"] += piece["function"]["arguments"]
    made = model.journal.entries(kind="http")[0].extra["reply_calls"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls.values()] == [
        (m["call_id"], m["name"], m["arguments"]) for m in made
    ]
    assert [m["name"] for m in made] == ["docs__query", "docs__fetch"]
    assert json.loads(calls[0]["arguments"]) == {"q": "a long question"}


def test_chat_stream_of_text_without_usage(model, http):
    model.script([Step.text("A streamed answer, long enough to be cut in several pieces.")])
    _, chunks = chat_stream(http, model)
    assert all("usage" not in c for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": "", "refusal": None}
    text = "".join(d.get("content") or "" for d in deltas)
    assert text == "A streamed answer, long enough to be cut in several pieces."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


# ---- Anthropic Messages ----------------------------------------------------------------------


def test_messages_turn_with_a_scripted_call_and_its_follow_up(model, http):
    model.script([Step.call(server="docs", tool="query", arguments={"q": "mcp"}), Step.text("ok")])
    r = messages(http, model, tools=messages_tools(), system="be brief")
    assert r.status_code == 200 and r.headers["request-id"].startswith("req_")
    done = r.json()
    assert (done["type"], done["role"], done["model"]) == ("message", "assistant", "claude-test")
    assert done["stop_reason"] == "tool_use" and done["stop_sequence"] is None
    assert done["id"].startswith("msg_") and {"input_tokens", "output_tokens"} <= set(done["usage"])
    (use,) = done["content"]
    assert use["type"] == "tool_use" and use["id"].startswith("toolu_")
    assert (use["name"], use["input"]) == ("docs__query", {"q": "mcp"})

    follow_up = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": done["content"]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "found it"}],
        },
    ]
    r = messages(http, model, tools=messages_tools(), messages=follow_up)
    assert r.json()["content"] == [{"type": "text", "text": "ok"}]
    assert r.json()["stop_reason"] == "end_turn"

    first, second = model.journal.entries(kind="http")
    assert first.path == "/v1/messages" and first.extra["api"] == "messages"
    assert first.extra["reply_calls"] == [
        {"call_id": use["id"], "name": "docs__query", "arguments": '{"q":"mcp"}'}
    ]
    assert second.extra["reply_calls"] == [] and second.extra["body"]["messages"] == follow_up


def test_messages_stream_with_a_bearer_key_and_the_beta_query(model, http):
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="docs", tool="fetch"),
                    Step.call(server="docs", tool="query", arguments={"q": "a long question"}),
                ]
            )
        ]
    )
    headers = {
        "authorization": f"Bearer {model.api_key}",
        "anthropic-version": "2026-10-21",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
    }
    r = messages(
        http, model, headers=headers, query="?beta=true", tools=messages_tools(), stream=True
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert "[DONE]" not in r.text
    events = parse_sse(r.content)
    names = [line[7:] for line in r.text.splitlines() if line.startswith("event: ")]
    assert names == [e["type"] for e in events]  # every event named, as its type
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert "ping" in kinds
    start = events[0]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["usage"]
    blocks: dict[int, dict] = {}
    for event in events:
        if event["type"] == "content_block_start":
            assert event["index"] not in blocks and event["content_block"]["input"] == {}
            blocks[event["index"]] = {**event["content_block"], "json": ""}
        elif event["type"] == "content_block_delta":
            assert event["delta"]["type"] == "input_json_delta"
            blocks[event["index"]]["json"] += event["delta"]["partial_json"]
    assert kinds.count("content_block_stop") == len(blocks) == 2
    delta = events[-2]
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] > 0

    (entry,) = model.journal.entries(kind="http")
    assert entry.path == "/v1/messages" and entry.extra["query"] == "beta=true"
    assert entry.headers["anthropic-beta"].startswith("claude-code")
    made = entry.extra["reply_calls"]
    assert [(b["id"], b["name"], b["json"]) for b in blocks.values()] == [
        (m["call_id"], m["name"], m["arguments"]) for m in made
    ]
    assert [m["name"] for m in made] == ["docs__fetch", "docs__query"]
    assert json.loads(blocks[1]["json"]) == {"q": "a long question"}


def test_messages_stream_of_text(model, http):
    model.script([Step.text("A streamed answer, long enough to be cut in several pieces.")])
    events = parse_sse(messages(http, model, stream=True).content)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert events[1]["content_block"] == {"type": "text", "text": ""}
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "A streamed answer, long enough to be cut in several pieces."
    assert events[-2]["delta"]["stop_reason"] == "end_turn"


# ---- one script, three APIs ------------------------------------------------------------------


def answer_of(api: str, http, model, tools: bool = True) -> tuple[list[tuple[str, Any]], str]:
    """(the calls, the text) of one non-streamed answer from `api`, each call as (name,
    arguments as a JSON value)."""
    if api == "responses":
        body = {"model": "m", "input": "hi"}
        if tools:
            body["tools"] = [
                {"type": "function", **t["function"]} for t in chat_tools()
            ]  # the same functions, in the Responses form
        out = http.post(
            f"{model.url}/responses",
            json=body,
            headers={"authorization": f"Bearer {model.api_key}"},
        ).json()["output"]
        calls = [
            (o["name"], json.loads(o["arguments"])) for o in out if o["type"] == "function_call"
        ]
        text = "".join(o["content"][0]["text"] for o in out if o["type"] == "message")
        return calls, text
    if api == "chat":
        message = chat(http, model, **({"tools": chat_tools()} if tools else {})).json()
        message = message["choices"][0]["message"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls", [])
        ]
        return calls, message["content"] or ""
    content = messages(http, model, **({"tools": messages_tools()} if tools else {})).json()
    content = content["content"]
    calls = [(b["name"], b["input"]) for b in content if b["type"] == "tool_use"]
    return calls, "".join(b["text"] for b in content if b["type"] == "text")


@pytest.mark.parametrize("api", ["responses", "chat", "messages"])
def test_the_same_script_whichever_api(model, http, api):
    model.script(
        [
            Step.calls([Step.call(server="docs", tool="query"), Step.call(name="read_file")]),
            Step.call(server="docs", tool="fetch", arguments={"url": "x"}, repeat=True),
        ]
    )
    calls, text = answer_of(api, http, model)
    assert calls == [("docs__query", {"q": "test"}), ("read_file", {})] and text == ""
    for _ in range(2):
        assert answer_of(api, http, model)[0] == [("docs__fetch", {"url": "x"})]
    model.script([Step.call(server="docs", tool="gone"), Step.text("bye")])
    calls, text = answer_of(api, http, model)
    assert calls == [] and "the host offered no function for docs/gone" in text
    (event,) = model.journal.entries(kind="event")
    assert event.extra["event"] == "unmatched-call"
    assert answer_of(api, http, model) == ([], "bye")
    assert answer_of(api, http, model) == ([], "done")  # the script is exhausted
    apis = {e.extra["api"] for e in model.journal.entries(kind="http")}
    assert apis == {api}


def test_malformed_arguments_reach_each_api_as_they_can(model, http):
    model.script([Step.call(name="read_file", arguments="not json")] * 2)
    (call,) = chat(http, model, tools=chat_tools()).json()["choices"][0]["message"]["tool_calls"]
    assert call["function"]["arguments"] == "not json"  # verbatim
    (use,) = messages(http, model, tools=messages_tools()).json()["content"]
    assert use["input"] == "not json"  # Anthropic's input is JSON: the text as a string
    made = model.journal.entries(kind="http")[1].extra["reply_calls"][0]
    assert made["arguments"] == '"not json"'


def test_the_autopilot_reads_each_apis_history(model, http):
    model.script(None)
    first = chat(http, model, tools=chat_tools()).json()["choices"][0]["message"]
    assert first["tool_calls"][0]["function"]["name"] == "docs__query"
    # A fresh service remembers nothing: the history alone says what was called.
    with MockResponses() as fresh:
        history = [
            {"role": "user", "content": "hi"},
            first,
            {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "r"},
        ]
        second = chat(http, fresh, tools=chat_tools(), messages=history).json()
        assert second["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == (
            "docs__fetch"
        )
        fresh.reset()  # forgets what it called
        use = {"type": "tool_use", "id": "toolu_1", "name": "docs__query", "input": {"q": "x"}}
        history = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
        ]
        reply = messages(http, fresh, tools=messages_tools(), messages=history).json()
        assert [b["name"] for b in reply["content"]] == ["docs__fetch"]


# ---- errors and keys -------------------------------------------------------------------------


def openai_error(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status and r.headers["x-should-retry"] == "false"
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def anthropic_error(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status and r.headers["x-should-retry"] == "false"
    body = r.json()
    assert set(body) == {"type", "error", "request_id"} and body["type"] == "error"
    assert body["request_id"] == r.headers["request-id"]
    assert set(body["error"]) == {"type", "message"}
    return body["error"]


@pytest.mark.parametrize(
    "status, openai_type, anthropic_type",
    [
        (429, "requests", "rate_limit_error"),
        (500, "server_error", "api_error"),
        (529, "server_error", "overloaded_error"),
        (400, "invalid_request_error", "invalid_request_error"),
    ],
)
def test_scripted_errors_in_each_apis_envelope(model, http, status, openai_type, anthropic_type):
    model.script([Step.error(status, "scripted trouble"), Step.error(status, "again")])
    err = openai_error(chat(http, model), status)
    assert (err["message"], err["type"]) == ("scripted trouble", openai_type)
    err = anthropic_error(messages(http, model), status)
    assert err == {"type": anthropic_type, "message": "again"}
    assert all("reply_calls" not in e.extra for e in model.journal.entries(kind="http"))


def test_chat_keys(model, http):
    err = openai_error(chat(http, model, headers={}), 401)
    assert "API key" in err["message"]
    err = openai_error(chat(http, model, headers={"authorization": "Bearer sk-wrong"}), 401)
    assert err["code"] == "invalid_api_key" and "sk-wrong" not in err["message"]
    xkey = {"x-api-key": model.api_key}  # an Anthropic key header is not an OpenAI key
    assert openai_error(chat(http, model, headers=xkey), 401)
    assert model.journal.count(kind="http") == 3  # journalled, rejected or not


def test_messages_keys_and_version(model, http):
    version = {"anthropic-version": "2023-06-01"}
    err = anthropic_error(messages(http, model, headers=version), 401)
    assert err == {"type": "authentication_error", "message": "x-api-key header is required"}
    err = anthropic_error(messages(http, model, headers={**version, "x-api-key": "sk-wrong"}), 401)
    assert err == {"type": "authentication_error", "message": "invalid x-api-key"}
    wrong_bearer = {**version, "authorization": "Bearer sk-wrong"}
    err = anthropic_error(messages(http, model, headers=wrong_bearer), 401)
    assert err["message"] == "Invalid bearer token"
    err = anthropic_error(messages(http, model, headers={"x-api-key": model.api_key}), 400)
    assert err == {
        "type": "invalid_request_error",
        "message": "anthropic-version: header is required",
    }
    for value in ("2023-06-01", "2026-10-21", "whatever"):
        headers = {"x-api-key": model.api_key, "anthropic-version": value}
        assert messages(http, model, headers=headers).status_code == 200
    assert all("sk-wrong" not in json.dumps(e.extra) for e in model.journal.entries(kind="event"))


def test_paths_each_api_does_not_serve(model, http):
    key = anthropic_headers(model)
    r = http.post(f"{model.url}/v1/messages", json={}, headers=key)  # a base URL with /v1
    err = anthropic_error(r, 404)
    assert err["type"] == "not_found_error" and "anthropic_url" in err["message"]
    r = http.post(f"{model.anthropic_url}/v1/messages/count_tokens", json={}, headers=key)
    assert anthropic_error(r, 404)["type"] == "not_found_error"
    bearer = {"authorization": f"Bearer {model.api_key}"}
    r = http.post(f"{model.anthropic_url}/chat/completions", json={}, headers=bearer)
    assert openai_error(r, 404)["message"] == "Invalid URL (POST /chat/completions)"
    r = http.get(f"{model.url}/chat/completions", headers=bearer)
    assert openai_error(r, 404)["message"] == "Invalid URL (GET /v1/chat/completions)"
    assert all("api" not in e.extra for e in model.journal.entries(kind="http")[:2])
    assert model.requests() == []


# ---- what the real services reject -----------------------------------------------------------


def test_chat_rejects_unanswered_calls_and_orphan_tool_messages(model, http):
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
    user = {"role": "user", "content": "q"}
    err = openai_error(chat(http, model, messages=[user, assistant]), 400)
    assert err["message"].startswith("An assistant message with 'tool_calls' must be followed")
    assert err["message"].endswith("did not have response messages: call_1")
    err = openai_error(chat(http, model, messages=[user, assistant, user]), 400)
    assert "call_1" in err["message"]
    orphan = {"role": "tool", "tool_call_id": "call_1", "content": "x"}
    err = openai_error(chat(http, model, messages=[user, orphan]), 400)
    assert err["message"] == (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'."
    )
    assert err["param"] == "messages.[1].role"
    stray = {"role": "tool", "tool_call_id": "call_9", "content": "x"}
    err = openai_error(chat(http, model, messages=[user, assistant, orphan, stray]), 400)
    assert "'call_9' not found in 'tool_calls' of previous message" in err["message"]
    late = [user, assistant, user, orphan]  # the answer must follow the call at once
    assert openai_error(chat(http, model, messages=late), 400)
    parts = {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "x"}]}
    assert chat(http, model, messages=[user, assistant, parts, user]).status_code == 200


@pytest.mark.parametrize(
    "body, param",
    [
        ({"model": None}, None),
        ({"messages": None}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
        ({"tools": [{"type": "function", "function": {"name": "a.b"}}]}, "tools[0].function.name"),
        (
            {"tools": [{"type": "function", "function": {"name": "x" * 65}}]},
            "tools[0].function.name",
        ),
        ({"tools": [{"type": "function", "function": {"name": "ok\n"}}]}, "tools[0].function.name"),
        ({"tools": [{"type": "function"}]}, "tools[0].function"),
    ],
)
def test_chat_rejects_what_the_api_rejects(model, http, body, param):
    model.script([Step.text("first")])
    full = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **body}
    if full["model"] is None:
        del full["model"]
    if full["messages"] is None:
        del full["messages"]
    r = http.post(
        f"{model.url}/chat/completions",
        json=full,
        headers={"authorization": f"Bearer {model.api_key}"},
    )
    assert openai_error(r, 400)["param"] == param
    assert chat(http, model).json()["choices"][0]["message"]["content"] == "first"  # not consumed


def test_messages_rejects_unanswered_uses_and_orphan_results(model, http):
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    user = {"role": "user", "content": "q"}
    called = {"role": "assistant", "content": [{"type": "text", "text": "calling"}, use]}
    err = anthropic_error(messages(http, model, messages=[user, called, user]), 400)
    assert err["message"] == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block "
        "in the next message."
    )
    assert (
        "messages.1:"
        in anthropic_error(messages(http, model, messages=[user, called]), 400)["message"]
    )
    orphan = {"role": "user", "content": [{"type": "text", "text": "and"}, result]}
    err = anthropic_error(
        messages(http, model, messages=[user, {"role": "assistant", "content": "no"}, orphan]), 400
    )
    assert err["message"].startswith(
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1."
    )
    answered = {"role": "user", "content": [result]}
    assert messages(http, model, messages=[user, called, answered]).status_code == 200


@pytest.mark.parametrize(
    "body, message",
    [
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"max_tokens": "9"}, "max_tokens: Input should be a valid integer"),
        ({"model": None}, "model: Field required"),
        ({"messages": {}}, "messages: Input should be a valid list"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages.0.role: Input should be"),
        ({"tools": [{"name": "a.b", "input_schema": {}}]}, "tools.0.custom.name: String should"),
        (
            {"tools": [{"name": "x" * 129, "input_schema": {}}]},
            "tools.0.custom.name: String should have at most 128",
        ),
        ({"tools": [{"name": "f"}]}, "tools.0.custom.input_schema: Field required"),
    ],
)
def test_messages_rejects_what_the_api_rejects(model, http, body, message):
    full = {"model": "c", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}], **body}
    full = {k: v for k, v in full.items() if v is not None}
    r = http.post(f"{model.anthropic_url}/v1/messages", json=full, headers=anthropic_headers(model))
    err = anthropic_error(r, 400)
    assert err["type"] == "invalid_request_error" and err["message"].startswith(message)
    assert "param" not in err  # the API's envelope has none
    # the field at fault is journalled, as for the OpenAI APIs: a case tells a refused tool
    # name (EXP-2) or schema (EXP-3) from any other refusal by it
    (entry,) = [e for e in model.journal.entries(kind="http") if e.extra.get("refused")]
    assert entry.extra["refused"]["param"] == message.split(":")[0]


def test_messages_accepts_128_character_names_and_server_tools(model, http):
    tools = [{"name": "x" * 128, "input_schema": {"type": "object"}}, messages_tools()[3]]
    assert messages(http, model, tools=tools).status_code == 200


def test_bad_json_in_each_envelope(model, http):
    bearer = {"authorization": f"Bearer {model.api_key}", "content-type": "application/json"}
    r = http.post(f"{model.url}/chat/completions", content=b"{nope", headers=bearer)
    assert openai_error(r, 400)["message"].startswith("We could not parse the JSON body")
    r = http.post(
        f"{model.anthropic_url}/v1/messages", content=b"[" * 1000, headers=anthropic_headers(model)
    )
    assert "nested" in anthropic_error(r, 400)["message"]


# ---- reading a request of any API -------------------------------------------------------------

RESPONSES_BODY = {
    "model": "m",
    "instructions": "be brief",
    "tools": [{"type": "function", **t["function"]} for t in chat_tools()],
    "input": [
        {"role": "user", "content": "look it up"},
        {"type": "function_call", "call_id": "c1", "name": "docs__query", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
    ],
}
CHAT_BODY = {
    "model": "m",
    "tools": chat_tools(),
    "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
        {"role": "user", "content": "look it up"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "docs__query", "arguments": '{"q":"x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "found"}]},
    ],
}
MESSAGES_BODY = {
    "model": "m",
    "max_tokens": 9,
    "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
    "tools": messages_tools(),
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look it up"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "docs__query", "input": {"q": "x"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "found"}],
        },
    ],
}


@pytest.mark.parametrize("body", [RESPONSES_BODY, CHAT_BODY, MESSAGES_BODY])
def test_the_readers_read_each_api_alike(body):
    names = [f["name"] for f, ns in offered_functions(body) if ns is None]
    assert names[:2] == ["docs__query", "docs__fetch"]
    query = offered_functions(body)[0][0]
    assert query["description"].startswith("Looks things up.")
    assert query["parameters"] == QUERY_SCHEMA
    assert [(c["call_id"], c["name"], c["arguments"]) for c in function_calls(body)] == [
        ("c1", "docs__query", '{"q":"x"}')
    ]
    assert tool_outputs(body) == {"c1": "found"}
    assert list(function_call_outputs(body)) == ["c1"]
    assert user_texts(body) == ["look it up"]
    assert instructions(body) == ["be brief"]


def test_the_common_shape_keeps_every_field_and_leaves_other_tools_alone():
    view = as_responses(MESSAGES_BODY)
    fetch = view["tools"][1]
    assert fetch["cache_control"] == {"type": "ephemeral"} and "input_schema" not in fetch
    assert view["tools"][3] == {"type": "web_search_20250305", "name": "web_search"}
    assert as_responses(RESPONSES_BODY) is RESPONSES_BODY
    assert as_responses(CHAT_BODY, "responses") is CHAT_BODY  # the API the body was sent to
    odd = {"messages": [None, 3, {"role": "user", "content": 5}, {"tool_calls": "x"}], "tools": 7}
    assert as_responses(odd)["input"] == [{"type": "message", "role": "user", "content": 5}]
    assert offered_functions(odd) == [] and user_texts(odd) == ["\n".join([])]


def test_requests_lists_every_apis_bodies(model, http):
    chat(http, model)
    messages(http, model)
    http.post(
        f"{model.url}/responses",
        json={"model": "m", "input": "hi"},
        headers={"authorization": f"Bearer {model.api_key}"},
    )
    assert [list(b)[:2] for b in model.requests()] == [
        ["model", "messages"],
        ["model", "max_tokens"],
        ["model", "input"],
    ]
    assert [e.extra["api"] for e in model.journal.entries(kind="http")] == [
        "chat",
        "messages",
        "responses",
    ]


# ---- the official SDKs (not project dependencies: skipped unless importable) ------------------


def test_the_openai_sdk_completes_a_chat_turn(model):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(
        base_url=model.url, api_key=model.api_key, max_retries=0, _strict_response_validation=True
    )
    for stream in (False, True):
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")]
        )
        history: list[dict] = [{"role": "user", "content": "hi"}]
        if stream:
            with client.chat.completions.stream(
                model="m",
                messages=history,
                tools=chat_tools(),
                stream_options={"include_usage": True},
            ) as events:
                message = events.get_final_completion().choices[0].message
        else:
            message = (
                client.chat.completions.create(model="m", messages=history, tools=chat_tools())
                .choices[0]
                .message
            )
        (call,) = message.tool_calls
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "docs__query",
            {"q": "x"},
        )
        history += [
            message.model_dump(exclude_none=True, exclude={"parsed"}),
            {"role": "tool", "tool_call_id": call.id, "content": "found"},
        ]
        final = client.chat.completions.create(model="m", messages=history, tools=chat_tools())
        assert final.choices[0].message.content == "ok"
    model.script([Step.error(503, "busy")])
    with pytest.raises(openai.InternalServerError):
        client.with_options(max_retries=2).chat.completions.create(model="m", messages=history)
    assert model.journal.count(kind="http") == 5  # x-should-retry: false, no retries


def test_the_anthropic_sdk_completes_a_messages_turn(model):
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(
        base_url=model.anthropic_url,
        api_key=model.api_key,
        max_retries=0,
        _strict_response_validation=True,
    )
    for stream in (False, True):
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")]
        )
        history: list[dict] = [{"role": "user", "content": "hi"}]
        ask = {"model": "c", "max_tokens": 99, "tools": messages_tools(), "system": "be brief"}
        if stream:
            with client.messages.stream(messages=history, **ask) as events:
                reply = events.get_final_message()
        else:
            reply = client.messages.create(messages=history, **ask)
        (use,) = [b for b in reply.content if b.type == "tool_use"]
        assert (use.name, use.input, reply.stop_reason) == ("docs__query", {"q": "x"}, "tool_use")
        history += [
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in reply.content],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "found"}],
            },
        ]
        final = client.messages.create(messages=history, **ask)
        assert final.content[0].text == "ok"
    model.script([Step.error(529, "overloaded")])
    with pytest.raises(anthropic.InternalServerError):
        client.with_options(max_retries=2).messages.create(messages=history, **ask)
    assert model.journal.count(kind="http") == 5  # x-should-retry: false, no retries
