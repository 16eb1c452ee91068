"""The readers of tool outputs in `mcp_host_conformance.harness.cases.observe`,
against a live mock model service."""

from __future__ import annotations

import httpx
import pytest

from mcp_host_conformance.harness.cases.observe import (
    builtin_tools,
    call_outputs,
    mcp_tool,
    model_requests,
    output_text,
    paired_outputs,
    reply_calls,
    shows_status,
    status_contradiction,
    status_not_conveyed,
    user_texts,
)
from mcp_host_conformance.mocks.responses import MockResponses, Step

TOOL = {
    "type": "function",
    "name": "mcp_docs_query",
    "description": "[MCP server docs, tool query] Searches.",
    "parameters": {"type": "object", "properties": {}},
    "strict": False,
}


@pytest.mark.parametrize(
    ("text", "status", "expected"),
    [
        ("Status: unknown\nThe server may have acted.", "unknown", True),
        ('{"status": "denied", "output": "nothing sent"}', "denied", True),
        ("[Tool result: output_limit] first part", "output_limit", True),
        ("Status: failed\nthe outcome is unknown", "unknown", False),  # the label decides
        ("The status of this call is unknown.", "unknown", True),
        ("status=completed", "completed", True),
        ("note: [tool result: failed] then Status: completed", "failed", True),  # first decides
        # a bare word states nothing
        ("completed", "completed", False),
        ("uncompleted work", "completed", False),
        ("the server failed to answer", "failed", False),
        ("Error: panic\n   0: <unknown>\n   1: <unknown>", "unknown", False),  # Rust backtrace
        ("Wall time: 0.01 seconds\nOutput:\nunknown", "unknown", False),
    ],
)
def test_shows_status(text, status, expected):
    assert shows_status(text, status) is expected


def test_only_a_stated_status_that_contradicts_what_happened_is_a_problem():
    """A status is presentation: an output that states none (the server's text as it came,
    a bare word) is no contradiction; one stating another status is."""
    assert status_contradiction("Error: quota exceeded", "failed") is None  # states none
    assert status_contradiction("alpha\nbravo", "completed") is None
    assert status_contradiction("the server failed", "completed") is None  # a bare word
    assert status_contradiction("Status: unknown\nmay have run", "unknown") is None
    assert status_contradiction('{"status": "failed"}', "completed", "unknown") == (
        'the model received \'{"status": "failed"}\', stating status failed, '
        "not completed or unknown"
    )
    assert "stating status completed" in status_contradiction("Status: completed", "unknown")


def test_output_text_of_strings_and_parts():
    assert output_text("plain") == "plain"
    parts = [
        {"type": "input_text", "text": "a"},
        {"type": "input_image"},
        {"type": "input_text", "text": "b"},
    ]
    assert output_text(parts) == "a\nb"
    assert output_text(None) == ""


def test_user_texts_and_paired_outputs():
    body = {
        "input": [
            {"type": "message", "role": "user", "content": "first"},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "second"}],
            },
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "function_call_output", "call_id": "c1", "output": "y"},
        ]
    }
    assert user_texts(body) == ["first", "second"]
    assert user_texts({"input": "just a string"}) == ["just a string"]
    assert paired_outputs(body, "c1") == ["x", "y"]
    assert paired_outputs(body, "c2") == []


def test_calls_are_paired_with_the_next_requests_outputs():
    with (
        MockResponses() as model,
        httpx.Client(
            base_url=model.url, headers={"Authorization": f"Bearer {model.api_key}"}, timeout=5
        ) as client,
    ):
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")]
        )
        first = client.post(
            "/responses", json={"model": "m", "input": "hi", "tools": [TOOL]}
        ).json()
        call = first["output"][0]
        assert reply_calls(model) == [
            [{"call_id": call["call_id"], "name": "mcp_docs_query", "arguments": '{"q":"x"}'}]
        ]
        assert call_outputs(model) == [(reply_calls(model)[0][0], [])]  # no next request yet

        output = {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": "Status: denied\nno",
        }
        client.post(
            "/responses",
            json={
                "model": "m",
                "input": [output],
                "tools": [TOOL],
                "previous_response_id": first["id"],
            },
        ).raise_for_status()

        ((_made, outputs),) = call_outputs(model)
        assert outputs == ["Status: denied\nno"]
        assert status_contradiction(outputs[0], "denied") is None
        assert "stating status denied, not completed" in (
            status_contradiction(outputs[0], "completed") or ""
        )


CHAT_TOOL = {
    "type": "function",
    "function": {k: v for k, v in TOOL.items() if k != "type"},
}
MESSAGES_TOOL = {
    "name": TOOL["name"],
    "description": TOOL["description"],
    "input_schema": TOOL["parameters"],
}


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_the_readers_read_chat_and_messages_requests_alike(api):
    """The same turn over Chat Completions and Anthropic Messages: the readers see the
    offered function, the call, its output, the user's text, as they do for Responses."""
    with MockResponses() as model, httpx.Client(timeout=5) as client:
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")]
        )
        if api == "chat":
            url = f"{model.url}/chat/completions"
            headers = {"authorization": f"Bearer {model.api_key}"}
            ask = {"model": "m", "tools": [CHAT_TOOL, {"type": "custom", "custom": {"name": "c"}}]}
            history: list[dict] = [{"role": "user", "content": "hi"}]
            reply = client.post(url, json={**ask, "messages": history}, headers=headers).json()
            message = reply["choices"][0]["message"]
            call_id = message["tool_calls"][0]["id"]
            history += [
                message,
                {"role": "tool", "tool_call_id": call_id, "content": "Status: denied"},
            ]
        else:
            url = f"{model.anthropic_url}/v1/messages"
            headers = {"x-api-key": model.api_key, "anthropic-version": "2023-06-01"}
            ask = {"model": "m", "max_tokens": 9, "tools": [MESSAGES_TOOL]}
            history = [{"role": "user", "content": "hi"}]
            reply = client.post(url, json={**ask, "messages": history}, headers=headers).json()
            call_id = reply["content"][0]["id"]
            result = {"type": "tool_result", "tool_use_id": call_id, "content": "Status: denied"}
            history += [
                {"role": "assistant", "content": reply["content"]},
                {"role": "user", "content": [result]},
            ]
        client.post(url, json={**ask, "messages": history}, headers=headers).raise_for_status()

        first, second = model_requests(model)
        assert mcp_tool(first, "docs", "query")["parameters"] == TOOL["parameters"]
        assert user_texts(second) == ["hi"] and paired_outputs(second, call_id) == [
            "Status: denied"
        ]
        assert [t.get("name") for t in builtin_tools(first)] == ([None] if api == "chat" else [])
        assert reply_calls(model) == [
            [{"call_id": call_id, "name": "mcp_docs_query", "arguments": '{"q":"x"}'}],
            [],
        ]
        assert status_contradiction(paired_outputs(second, call_id)[0], "denied") is None


def test_a_status_is_conveyed_only_when_the_output_states_it():
    """RES-1 and RES-5 to RES-9 (the RES decision): an output stating no status fails them,
    one stating another fails every rule, a status in words or framing passes."""
    assert "states no status" in (status_not_conveyed("alpha bravo", "completed") or "")
    assert "stating status failed" in (
        status_not_conveyed("[Tool result: failed] boom", "completed") or ""
    )
    assert status_not_conveyed("[Tool result: completed] alpha", "completed") is None
    assert status_not_conveyed("The outcome of this call is unknown: no answer", "unknown") is None


def test_a_messages_result_conveys_what_its_is_error_field_says():
    """The Messages API tells the model a call failed in its own field (`is_error`), and that
    it succeeded by leaving it unset: an output stating no status in its text conveys that
    (RES-1, RES-5), never unknown or denied; a statement in the text still decides, and the
    same text on an API without the field (Chat Completions) conveys nothing."""
    body = {
        "model": "claude-test",
        "max_tokens": 64,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "ok", "content": "alpha"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "bad",
                        "content": [{"type": "text", "text": "disk quota exceeded"}],
                        "is_error": True,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "said",
                        "content": "Status: unknown",
                        "is_error": True,
                    },
                ],
            }
        ],
    }
    (ok,) = paired_outputs(body, "ok")
    (bad,) = paired_outputs(body, "bad")
    (said,) = paired_outputs(body, "said")
    assert status_not_conveyed(ok, "completed") is None
    assert status_not_conveyed(bad, "failed") is None
    assert output_text(bad) == "disk quota exceeded"
    assert "states no status" in (status_not_conveyed(ok, "failed") or "")
    assert "states no status" in (status_not_conveyed(bad, "unknown") or "")
    assert "states no status" in (status_not_conveyed(bad, "denied") or "")
    assert "stating status unknown" in (status_not_conveyed(said, "failed") or "")
    assert status_contradiction(bad, "unknown") is None  # the field contradicts nothing
    chat = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "ok", "content": "alpha"}]}
    (plain,) = paired_outputs(chat, "ok")
    assert "states no status" in (status_not_conveyed(plain, "completed") or "")
