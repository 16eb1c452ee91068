"""OpenAI Chat Completions' shapes: completion objects, stream chunks, rejections.

Strategy: pure functions with no I/O, like `wire` (the Responses API) beside it, so the
HTTP server and the respx router answer byte for byte alike. Shapes are the ones the
official `openai` SDK validates strictly (`chat.completion` with one choice; a stream of
data-only `chat.completion.chunk` events ended by `data: [DONE]`, the role, a call's id,
type and name only in its first delta, every tool-call delta with its `index`, the usage
chunk only when `stream_options.include_usage` asks). Errors use the OpenAI envelope that
`wire.ApiError` builds, and the messages the real service gives for what matters to a
host: a call answered by no tool message, a tool message answering no call, a function
name the API refuses.
"""

from __future__ import annotations

import json
import time
from typing import Any

from mcp_host_conformance.mocks.responses.wire import ApiError, check_name, chunks, new_id, tokens

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


# ---- rejections --------------------------------------------------------------------------


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )


def check_request(body: Any) -> ApiError | None:
    """What the real service would reject in a `POST /v1/chat/completions` body, else None."""
    if not isinstance(body, dict):
        return ApiError(
            400, "Invalid type for request body: expected an object.", code="invalid_type"
        )
    if not isinstance(body.get("model"), str):
        return ApiError(400, "you must provide a model parameter")
    messages = body.get("messages")
    if messages is None:
        return ApiError(
            400,
            "Missing required parameter: 'messages'.",
            param="messages",
            code="missing_required_parameter",
        )
    if not isinstance(messages, list):
        return ApiError(
            400,
            f"Invalid type for 'messages': expected an array of objects, but got "
            f"{_kind(messages)} instead.",
            param="messages",
            code="invalid_type",
        )
    for i, message in enumerate(messages):
        problem = _check_message(message, i)
        if problem:
            return problem
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return ApiError(
            400,
            f"Invalid type for 'tools': expected an array of objects, but got {_kind(tools)} "
            "instead.",
            param="tools",
            code="invalid_type",
        )
    for i, tool in enumerate(tools or []):
        problem = _check_tool(tool, f"tools[{i}]")
        if problem:
            return problem
    return check_pairs(messages)


def _check_message(message: Any, i: int) -> ApiError | None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        return ApiError(
            400,
            f"Invalid type for '{where}': expected an object, but got {_kind(message)} instead.",
            param=where,
            code="invalid_type",
        )
    role = message.get("role")
    if role not in ROLES:
        shown = f"'{role[:100]}'" if isinstance(role, str) else json.dumps(role)[:100]
        return ApiError(
            400,
            f"Invalid value: {shown}. Supported values are: 'system', "
            "'assistant', 'user', 'function', 'tool', and 'developer'.",
            param=f"{where}.role",
            code="invalid_value",
        )
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        return ApiError(
            400,
            f"Missing required parameter: '{where}.tool_call_id'.",
            param=f"{where}.tool_call_id",
            code="missing_required_parameter",
        )
    calls = message.get("tool_calls")
    if role == "assistant" and calls is not None:
        if not isinstance(calls, list):
            return ApiError(
                400,
                f"Invalid type for '{where}.tool_calls': expected an array of objects, but got "
                f"{_kind(calls)} instead.",
                param=f"{where}.tool_calls",
                code="invalid_type",
            )
        for j, call in enumerate(calls):
            at = f"{where}.tool_calls[{j}]"
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                return ApiError(
                    400,
                    f"Missing required parameter: '{at}.id'.",
                    param=f"{at}.id",
                    code="missing_required_parameter",
                )
            if not isinstance(function, dict):
                return ApiError(
                    400,
                    f"Missing required parameter: '{at}.function'.",
                    param=f"{at}.function",
                    code="missing_required_parameter",
                )
            problem = check_name(function.get("name"), f"{at}.function.name")
            if problem:
                return problem
    return None


def _check_tool(tool: Any, where: str) -> ApiError | None:
    if not isinstance(tool, dict):
        return ApiError(
            400,
            f"Invalid type for '{where}': expected an object, but got {_kind(tool)} instead.",
            param=where,
            code="invalid_type",
        )
    if tool.get("type") != "function":
        return None  # `custom` tools and whatever comes next: not the mock's to judge
    if not isinstance(tool.get("function"), dict):
        return ApiError(
            400,
            f"Missing required parameter: '{where}.function'.",
            param=f"{where}.function",
            code="missing_required_parameter",
        )
    return check_name(tool["function"].get("name"), f"{where}.function.name")


def check_pairs(messages: list[Any]) -> ApiError | None:
    """An assistant message's `tool_calls` must be answered, each, by the `tool` messages
    right after it, and a `tool` message must answer a call of that assistant message.
    (Messages are checked by `_check_message` first: objects, ids strings.)"""
    # A set and a dict, not lists: a body of 100,000 calls must not take quadratic time.
    block: set[str] = set()  # the calls the tool messages here may answer
    pending: dict[str, None] = {}  # those not answered yet, in order
    after = -1  # the assistant message they belong to
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if after < 0:
                return ApiError(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{i}].role",
                )
            call_id = message["tool_call_id"]
            if call_id not in block:
                return ApiError(
                    400,
                    f"Invalid parameter: 'tool_call_id' of '{call_id[:100]}' not found in "
                    "'tool_calls' of previous message.",
                    param=f"messages.[{i}].tool_call_id",
                )
            pending.pop(call_id, None)
            continue
        if pending:
            return _unanswered(list(pending))
        calls = message.get("tool_calls") if role == "assistant" else None
        if isinstance(calls, list) and calls:
            pending = dict.fromkeys(str(c["id"]) for c in calls)
            block, after = set(pending), i
        else:
            block, after = set(), -1
    return _unanswered(list(pending)) if pending else None


def _unanswered(pending: list[str]) -> ApiError:
    return ApiError(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(c[:100] for c in pending[:20]),
    )


# ---- answers -----------------------------------------------------------------------------


def tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """A call the reply makes (`{"call_id", "name", "arguments"}`) in the message's form."""
    return {
        "id": call["call_id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": call["arguments"]},
    }


def _usage(body: dict[str, Any], calls: list[dict[str, Any]], text: str | None) -> dict[str, int]:
    prompt = tokens(body.get("messages"))
    completion = tokens([calls, text]) if calls or text else 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def completion(
    body: dict[str, Any], calls: list[dict[str, Any]], text: str | None
) -> dict[str, Any]:
    """The `chat.completion` answering `body` with these calls and this text."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text,
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = [tool_call(c) for c in calls]
    return {
        "id": new_id("chatcmpl").replace("_", "-", 1),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": _usage(body, calls, text),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def stream_chunks(done: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The chunks the real service streams for a finished `completion`."""
    (choice,) = done["choices"]
    message = choice["message"]
    found: list[dict[str, Any]] = []
    head = {k: done[k] for k in ("id", "created", "model", "service_tier", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"

    def emit(delta: dict[str, Any], finish: str | None = None) -> None:
        found.append(
            {
                **head,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
        )

    text = message["content"]
    first: dict[str, Any] = {
        "role": "assistant",
        "content": None if text is None else "",
        "refusal": None,
    }
    if text is not None:
        emit(first)
        first = {}
        for piece in chunks(text, 16):
            emit({"content": piece})
    for index, call in enumerate(message.get("tool_calls", [])):
        opening = {**call, "index": index, "function": {**call["function"], "arguments": ""}}
        emit({**first, "tool_calls": [opening]})
        first = {}
        for piece in chunks(call["function"]["arguments"]):
            emit({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if first:  # nothing said at all: the role still comes first
        emit(first)
    emit({}, choice["finish_reason"])
    if include_usage:
        for chunk in found:
            chunk["usage"] = None
        found.append({**head, "choices": [], "usage": done["usage"]})
    return found


def sse_encode(chunk: dict[str, Any]) -> bytes:
    """One data-only SSE event (Chat Completions streams have no `event:` lines)."""
    return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode()


DONE = b"data: [DONE]\n\n"
