"""The Anthropic Messages API's shapes: message objects, stream events, rejections.

Strategy: pure functions with no I/O, like `wire` (the Responses API) beside it. Shapes are
the ones the official `anthropic` SDK reads (a `message` with `text` and `tool_use` content
blocks; a stream of named events, `message_start`, each block's `content_block_start`,
deltas and `content_block_stop`, a `ping`, `message_delta` with the usage and
`message_stop`, no `[DONE]`: the SDK drops an event without its `event:` line, and its
stream helper needs `usage` in `message_start` and `message_delta`). A `tool_use` carries its
`input` as a JSON value; arguments a script gives as text that is not JSON (malformed on
purpose) arrive as a string input. Errors use Anthropic's envelope (`{"type": "error",
"error": {"type", "message"}, "request_id"}`) with the type its status stands for, and the
messages the real service gives where it matters to a host: the key, the version header,
a `tool_use` answered by no `tool_result` in the next message, a `tool_result` answering
no `tool_use` of the previous one, a tool name the API refuses. The real service's
validation messages name a field by its path (`messages.1.content.0`), and so do these.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_host_conformance.mocks.json_input import JsonInputError, read_json
from mcp_host_conformance.mocks.responses.bodies import encode_input
from mcp_host_conformance.mocks.responses.wire import ApiError, chunks, new_id, tokens

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
TOOL_NAME_MAX = 128
ROLES = ("user", "assistant", "system")  # "system": newer SDKs may send one in `messages`
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error(status: int, message: str, param: str | None = None) -> ApiError:
    """An error of the type the real service gives with `status` (a scripted `Step.error`
    too). `param`, the field at fault, is never sent (the API's envelope has no such field):
    it goes to the request's journal entry, where a case tells a refused tool name (EXP-2)
    or schema (EXP-3) from any other refusal, whichever API the host speaks."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return ApiError(status, message, type=kind, param=param)


def envelope(err: ApiError, request_id: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": err.type, "message": err.message},
        "request_id": request_id,
    }


# ---- rejections --------------------------------------------------------------------------


def missing_key() -> ApiError:
    return error(401, "x-api-key header is required")


def wrong_key(bearer: bool) -> ApiError:
    # The mock echoes none of the key it was sent (no secret in errors).
    return error(401, "Invalid bearer token" if bearer else "invalid x-api-key")


def missing_version() -> ApiError:
    return error(400, "anthropic-version: header is required")


def bad_json(reason: str) -> ApiError:
    return error(400, f"The request body is not valid JSON: {reason}")


def not_found(method: str, path: str) -> ApiError:
    hint = ""
    if path.startswith("/v1/v1/"):
        hint = " (an Anthropic client's base URL has no /v1: use the mock's anthropic_url)"
    return error(404, f"Not Found: {method} {path[:200]}{hint}")


def _kind_problem(where: str, value: Any, wanted: type, name: str) -> ApiError | None:
    if value is None:
        return error(400, f"{where}: Field required", where)
    if not isinstance(value, wanted) or (isinstance(value, bool) and wanted is not bool):
        return error(400, f"{where}: Input should be a valid {name}", where)
    return None


def check_request(body: Any) -> ApiError | None:
    """What the real service would reject in a `POST /v1/messages` body, else None."""
    if not isinstance(body, dict):
        return error(400, "Input should be a valid dictionary")
    problem = (
        _kind_problem("model", body.get("model"), str, "string")
        or _kind_problem("max_tokens", body.get("max_tokens"), int, "integer")
        or _kind_problem("messages", body.get("messages"), list, "list")
    )
    if problem:
        return problem
    messages: list[Any] = body["messages"]
    for i, message in enumerate(messages):
        problem = _check_message(message, f"messages.{i}")
        if problem:
            return problem
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return error(400, "tools: Input should be a valid list", "tools")
    for i, tool in enumerate(tools or []):
        problem = _check_tool(tool, f"tools.{i}")
        if problem:
            return problem
    return check_pairs(messages)


def _check_message(message: Any, where: str) -> ApiError | None:
    if not isinstance(message, dict):
        return error(400, f"{where}: Input should be a valid dictionary", where)
    if message.get("role") not in ROLES:
        return error(400, f"{where}.role: Input should be 'user' or 'assistant'", f"{where}.role")
    content = message.get("content")
    if not isinstance(content, str | list):
        return error(400, f"{where}.content: Input should be a valid list", f"{where}.content")
    for j, block in enumerate(content if isinstance(content, list) else []):
        at = f"{where}.content.{j}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return error(400, f"{at}: Input should be a valid dictionary", at)
        if block["type"] == "tool_use":
            problem = _kind_problem(f"{at}.tool_use.id", block.get("id"), str, "string")
            problem = problem or _kind_problem(
                f"{at}.tool_use.name", block.get("name"), str, "string"
            )
            if problem:
                return problem
        elif block["type"] == "tool_result":
            problem = _kind_problem(
                f"{at}.tool_result.tool_use_id", block.get("tool_use_id"), str, "string"
            )
            if problem:
                return problem
    return None


def _check_tool(tool: Any, where: str) -> ApiError | None:
    if not isinstance(tool, dict):
        return error(400, f"{where}: Input should be a valid dictionary", where)
    if tool.get("type", "custom") not in ("custom", None):
        return None  # a server tool (`web_search_20250305`, ...): not the mock's to judge
    at = f"{where}.custom"
    name = tool.get("name")
    problem = _kind_problem(f"{at}.name", name, str, "string")
    if problem or not isinstance(name, str):
        return problem
    if len(name) > TOOL_NAME_MAX:
        return error(
            400, f"{at}.name: String should have at most {TOOL_NAME_MAX} characters", f"{at}.name"
        )
    if not TOOL_NAME.fullmatch(name):
        return error(
            400,
            f"{at}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,{TOOL_NAME_MAX}}}$'",
            f"{at}.name",
        )
    return _kind_problem(f"{at}.input_schema", tool.get("input_schema"), dict, "dictionary")


def _blocks(message: dict[str, Any], kind: str, key: str) -> list[tuple[int, str]]:
    content = message.get("content")
    return [
        (j, b[key])
        for j, b in enumerate(content if isinstance(content, list) else [])
        if b.get("type") == kind
    ]


def check_pairs(messages: list[Any]) -> ApiError | None:
    """Each `tool_use` of an assistant message needs a `tool_result` in the next message,
    and each `tool_result` a `tool_use` of the previous one. (Messages are checked by
    `_check_message` first: objects, blocks objects, ids strings.)"""
    uses: dict[str, None] = {}  # the previous message's tool_use ids, in order
    for i, message in enumerate(messages):
        results = _blocks(message, "tool_result", "tool_use_id")
        answered = {r for _, r in results}
        missing = [u for u in uses if u not in answered]
        if missing:
            return _unanswered(i - 1, missing)
        for j, result in results:
            if result not in uses:
                return error(
                    400,
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {result[:100]}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message.",
                )
        uses = {}
        if message.get("role") == "assistant":
            uses = dict.fromkeys(u for _, u in _blocks(message, "tool_use", "id"))
    return _unanswered(len(messages) - 1, list(uses)) if uses else None


def _unanswered(index: int, ids: list[str]) -> ApiError:
    return error(
        400,
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
        f"after: {', '.join(u[:100] for u in ids[:20])}. Each `tool_use` block must have a "
        "corresponding `tool_result` block in the next message.",
    )


# ---- answers -----------------------------------------------------------------------------


def tool_input(arguments: str) -> Any:
    """A call's arguments (JSON text) as a `tool_use` input: the JSON value, or the text
    itself when it is not JSON (a script's malformed arguments)."""
    try:
        return read_json(arguments)
    except JsonInputError:
        return arguments


def content_blocks(calls: list[dict[str, Any]], text: str | None) -> list[dict[str, Any]]:
    """The content of a reply: its text, then a `tool_use` block for each call
    (`{"call_id", "name", "input"}`)."""
    found: list[dict[str, Any]] = []
    if text is not None:
        found.append({"type": "text", "text": text})
    for call in calls:
        found.append(
            {
                "type": "tool_use",
                "id": call["call_id"],
                "name": call["name"],
                "input": call["input"],
            }
        )
    return found


def message(body: dict[str, Any], content: list[dict[str, Any]]) -> dict[str, Any]:
    """The `message` answering `body` with this content."""
    calls = any(b["type"] == "tool_use" for b in content)
    input_tokens = tokens([body.get("system"), body.get("messages")])
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": tokens(content) if content else 0,
        },
    }


def stream_events(done: dict[str, Any]) -> list[dict[str, Any]]:
    """The events the real service streams for a finished `message`."""
    events: list[dict[str, Any]] = []
    started = {
        **done,
        "content": [],
        "stop_reason": None,
        "usage": {**done["usage"], "output_tokens": 1},
    }
    events.append({"type": "message_start", "message": started})
    for index, block in enumerate(done["content"]):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            pieces = [
                {"type": "input_json_delta", "partial_json": p}
                for p in ["", *chunks(encode_input(block["input"]))]
            ]
        else:
            opening = {**block, "text": ""}
            pieces = [{"type": "text_delta", "text": p} for p in chunks(block["text"], 16)]
        events.append({"type": "content_block_start", "index": index, "content_block": opening})
        if index == 0:
            events.append({"type": "ping"})
        for delta in pieces:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    if not done["content"]:
        events.append({"type": "ping"})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": done["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": done["usage"]["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events


def sse_encode(event: dict[str, Any]) -> bytes:
    """One named SSE event (the SDK drops an event without its `event:` line)."""
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()
