"""The OpenAI Responses API's shapes: response objects, stream events, rejections.

Strategy: pure functions with no I/O, so the HTTP server and the respx router produce
byte-identical answers. Shapes follow the public API reference (response object,
`function_call` and `message` output items, the `response.*` stream events with
`sequence_number`); rejections use the real error envelope and messages, so a host
that would be refused by the real service is refused here too.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
TOOL_NAME_MAX = 64


@dataclass
class ApiError:
    status: int
    message: str
    type: str = "invalid_request_error"
    param: str | None = None
    code: str | None = None

    def envelope(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


# ---- rejections --------------------------------------------------------------------------


def missing_key() -> ApiError:
    return ApiError(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization "
        "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    )


def wrong_key() -> ApiError:
    # The real service echoes a masked key; the mock echoes none of it (no secret in errors).
    return ApiError(401, "Incorrect API key provided.", code="invalid_api_key")


def bad_json(reason: str | None = None) -> ApiError:
    message = (
        "We could not parse the JSON body of your request. The OpenAI API expects a JSON payload."
    )
    return ApiError(400, f"{message} ({reason})" if reason else message)


def not_found(method: str, path: str) -> ApiError:
    return ApiError(404, f"Invalid URL ({method} {path})")


def error_for_status(status: int, message: str) -> ApiError:
    """The envelope a scripted `Step.error` answers with."""
    if status == 429:
        return ApiError(status, message, type="requests", code="rate_limit_exceeded")
    if status >= 500:
        return ApiError(status, message, type="server_error")
    return ApiError(status, message)


def check_request(body: Any, earlier_calls: dict[str, list[str]] | None = None) -> ApiError | None:
    """What the real service would reject in a `POST /v1/responses` body, else None.

    `earlier_calls` maps a stored response id to the call_ids of its function calls, so a
    request continuing with `previous_response_id` may answer those calls.
    """
    if not isinstance(body, dict):
        return ApiError(
            400, "Invalid type for request body: expected an object.", code="invalid_type"
        )
    if not isinstance(body.get("model"), str):
        return ApiError(
            400,
            "Missing required parameter: 'model'.",
            param="model",
            code="missing_required_parameter",
        )
    tools = body.get("tools", [])
    if tools is not None and not isinstance(tools, list):
        return ApiError(
            400, "Invalid type for 'tools': expected an array.", param="tools", code="invalid_type"
        )
    for i, tool in enumerate(tools or []):
        problem = check_tool(tool, f"tools[{i}]")
        if problem:
            return problem
    pending: list[str] = []
    prev = body.get("previous_response_id")
    if prev is not None:
        if earlier_calls is None or prev not in earlier_calls:
            return ApiError(
                400,
                f"Previous response with id '{prev}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        pending.extend(earlier_calls[prev])
    return check_pairs(body.get("input"), pending)


def check_tool(tool: Any, where: str) -> ApiError | None:
    if not isinstance(tool, dict):
        return ApiError(
            400,
            f"Invalid type for '{where}': expected an object.",
            param=where,
            code="invalid_type",
        )
    if tool.get("type") != "function":
        return None
    return check_name(tool.get("name"), f"{where}.name")


def check_name(name: Any, where: str) -> ApiError | None:
    """A function name as OpenAI checks one (Responses and Chat Completions alike)."""
    if not isinstance(name, str):
        return ApiError(
            400,
            f"Missing required parameter: '{where}'.",
            param=where,
            code="missing_required_parameter",
        )
    if len(name) > TOOL_NAME_MAX:
        return ApiError(
            400,
            f"Invalid '{where}': string too long. Expected a string with maximum length "
            f"{TOOL_NAME_MAX}, but got a string with length {len(name)} instead.",
            param=where,
            code="string_above_max_length",
        )
    if not TOOL_NAME.fullmatch(name):  # `$` would let a final newline through
        return ApiError(
            400,
            f"Invalid '{where}': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            param=where,
            code="invalid_value",
        )
    return None


def check_pairs(items: Any, pending: list[str]) -> ApiError | None:
    """Every function_call needs a later function_call_output of its call_id, and every
    output needs its call (in this input or in the previous response). An output answers
    the earliest open call of its id. Linear: counts, not list searches (a body of 100,000
    calls must not take quadratic time)."""
    if not isinstance(items, list):
        return None  # a plain string input carries no calls
    opened = list(pending)  # every call, in order
    counts = Counter(pending)  # calls per id
    answered: Counter[str] = Counter()  # outputs per id, each answering the earliest call
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            opened.append(str(item.get("call_id")))
            counts[opened[-1]] += 1
        elif item.get("type") == "function_call_output":
            call_id = str(item.get("call_id"))
            if not counts[call_id]:
                return ApiError(
                    400,
                    f"No tool call found for function call output with call_id {call_id}.",
                    param="input",
                )
            if answered[call_id] < counts[call_id]:
                answered[call_id] += 1
    for call_id in opened:
        if answered[call_id]:
            answered[call_id] -= 1
        else:
            return ApiError(
                400, f"No tool output found for function call {call_id}.", param="input"
            )
    return None


# ---- answers -----------------------------------------------------------------------------


def function_call_item(name: str, arguments: str, namespace: str | None = None) -> dict[str, Any]:
    """A call of an offered function; `namespace` names the `namespace` tool holding it."""
    item = {
        "type": "function_call",
        "id": new_id("fc"),
        "call_id": new_id("call"),
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }
    if namespace is not None:
        item["namespace"] = namespace
    return item


def message_item(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": new_id("msg"),
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, separators=(",", ":"))) // 4)


def response_object(
    body: dict[str, Any], output: list[dict[str, Any]], status: str = "completed"
) -> dict[str, Any]:
    input_tokens = tokens(body.get("input"))
    output_tokens = tokens(output) if output else 0
    return {
        "id": new_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def chunks(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The event sequence the real service streams for a finished `response`."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=started)
    emit("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        if item["type"] == "function_call":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in chunks(item["arguments"]):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            for part_index, part in enumerate(item["content"]):
                where = {"item_id": item["id"], "output_index": index, "content_index": part_index}
                emit("response.content_part.added", **where, part={**part, "text": ""})
                for piece in chunks(part["text"], 16):
                    emit("response.output_text.delta", **where, delta=piece, logprobs=[])
                emit("response.output_text.done", **where, text=part["text"], logprobs=[])
                emit("response.content_part.done", **where, part=part)
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response)
    return events


def sse_encode(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


def parse_sse(data: bytes | str) -> list[dict[str, Any]]:
    """Decode an SSE body back into events (for tests and people reading a stream): the
    JSON of each event's data, Chat Completions' closing `[DONE]` left out."""
    text = data.decode() if isinstance(data, bytes) else data
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [ln[5:].lstrip() for ln in block.split("\n") if ln.startswith("data:")]
        if lines and lines != ["[DONE]"]:
            events.append(json.loads("\n".join(lines)))
    return events
