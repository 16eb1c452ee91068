"""The MCP server protocol of the mocks, as pure functions: a message in, a reply out.

Strategy: no I/O and no SDK here. The HTTP mock (and anything else that wants it) feeds
one decoded JSON-RPC message at a time and gets back the reply dict to send, or None for a
notification. Replies are hand-written on purpose: a mock must be able to send a tool list
the SDK would refuse to build (a non-object schema, 129 tools, a 17 KiB schema). Errors
follow JSON-RPC 2.0 and the MCP spec: -32700 parse error, -32600 invalid request, -32601
unknown method, -32602 invalid params (also an unknown tool).
"""

from __future__ import annotations

import base64
import json

from mcp_host_conformance.mocks.spec import ServerSpec, Tool

TYPE_CHECKING = False  # no `typing` at run time: the stdio mock imports this (stdio_server)
if TYPE_CHECKING:
    from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = SUPPORTED_VERSIONS[-1]
SERVER_VERSION = "0.1.0"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def result(id_: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


# ---- classifying what arrived --------------------------------------------------------------


def _valid_id(value: Any) -> bool:
    return (isinstance(value, str | int) and not isinstance(value, bool)) or value is None


def classify(message: Any) -> tuple[str, dict[str, Any] | None]:
    """("request" | "notification" | "response" | "invalid", error reply if invalid)."""
    if not isinstance(message, dict):
        return "invalid", error(
            None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object"
        )
    id_ = message.get("id")
    reply_id = id_ if _valid_id(id_) else None
    if message.get("jsonrpc") != "2.0":
        return "invalid", error(
            reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
        )
    if "method" in message:
        if not isinstance(message["method"], str):
            return "invalid", error(
                reply_id, INVALID_REQUEST, "Invalid Request: method must be a string"
            )
        if "params" in message and not isinstance(message["params"], dict | list):
            return "invalid", error(
                reply_id, INVALID_REQUEST, "Invalid Request: params must be an object"
            )
        if "id" not in message:
            return "notification", None
        if id_ is None or not _valid_id(id_):
            return "invalid", error(
                None, INVALID_REQUEST, "Invalid Request: id must be a string or integer"
            )
        return "request", None
    if "id" in message and ("result" in message or "error" in message):
        return "response", None
    return "invalid", error(reply_id, INVALID_REQUEST, "Invalid Request: no method")


# ---- answering ---------------------------------------------------------------------------------


def initialize_result(spec: ServerSpec, params: Any) -> dict[str, Any]:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    version = asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION
    out: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": spec.server_info or {"name": spec.name, "version": SERVER_VERSION},
    }
    if spec.instructions:
        out["instructions"] = spec.instructions
    return out


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: Any) -> int | None:
    if not isinstance(cursor, str):
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, number = text.partition(":")
        offset = int(number)
    except (ValueError, UnicodeDecodeError):
        return None
    return offset if prefix == "offset" and offset >= 0 else None


def list_tools_result(
    tools: list[Tool], page_size: int | None, params: Any
) -> dict[str, Any] | str:
    """A page of tools, or an error message (invalid cursor)."""
    offset = 0
    cursor = params.get("cursor") if isinstance(params, dict) else None
    if cursor is not None:
        decoded = decode_cursor(cursor)
        if decoded is None or decoded > len(tools):
            return "Invalid params: unknown cursor"
        offset = decoded
    size = page_size or max(len(tools), 1)
    page = tools[offset : offset + size]
    out: dict[str, Any] = {"tools": [t.definition() for t in page]}
    if offset + size < len(tools):
        out["nextCursor"] = encode_cursor(offset + size)
    return out


def call_tool_result(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
    """The `tools/call` result of a tool, or (code, message) for a JSON-RPC error reply."""
    reply = tool.reply
    if reply.jsonrpc_error:
        return int(reply.jsonrpc_error.get("code", -32603)), str(
            reply.jsonrpc_error.get("message", "")
        )
    content = [dict(block) for block in reply.content]
    if reply.echo:
        content.append({"type": "text", "text": compact(arguments)})
    out: dict[str, Any] = {"content": content}
    if reply.structured is not None:
        out["structuredContent"] = reply.structured
    if reply.is_error:
        out["isError"] = True
    if reply.meta is not None:
        out["_meta"] = reply.meta
    if reply.pad_to:
        missing = reply.pad_to - len(compact(out).encode())
        if missing > 0:
            out["content"].append({"type": "text", "text": "x" * missing})
    return out


def padded(value: dict[str, Any], size: int) -> dict[str, Any]:
    """`value` (a tools/list or tools/call result) grown to about `size` bytes of JSON.

    A call result gets a big text block (what a host would show); a list result gets the
    padding in `_meta`, so the list itself stays valid and only its size is wrong.
    """
    missing = max(size - len(compact(value).encode()), 0)
    grown = dict(value)
    if "content" in grown:
        grown["content"] = [*grown["content"], {"type": "text", "text": "x" * missing}]
    else:
        grown["_meta"] = {"padding": "x" * missing}
    return grown


def padded_message(message: dict[str, Any], size: int, fill: str = "x") -> dict[str, Any]:
    """`message` (a response with a `result`) whose compact JSON is exactly `size` bytes of
    UTF-8 (or its smallest padded form, when that is already bigger).

    The padding goes where `padded` puts it; it is `fill` repeated (one character that
    JSON writes as itself, maybe multi-byte, so bytes and characters differ), then ASCII
    `x` for the bytes a whole `fill` would overshoot.
    """

    def with_padding(text: str) -> dict[str, Any]:
        result = dict(message["result"])
        if "content" in result:
            result["content"] = [*result["content"], {"type": "text", "text": text}]
        else:
            result["_meta"] = {"padding": text}
        return {**message, "result": result}

    missing = max(size - len(compact(with_padding("")).encode()), 0)
    unit = len(fill.encode())
    count, rest = divmod(missing, unit)
    return with_padding(fill * count + "x" * rest)


def answer(spec: ServerSpec, message: dict[str, Any]) -> dict[str, Any]:
    """The reply to one well-formed request (see `classify`)."""
    id_ = message["id"]
    method = message["method"]
    params = message.get("params")
    if method == "initialize":
        return result(id_, initialize_result(spec, params))
    if method == "ping":
        return result(id_, {})
    if method == "tools/list":
        listed = list_tools_result(spec.tools, spec.page_size, params)
        if isinstance(listed, str):
            return error(id_, INVALID_PARAMS, listed)
        return result(id_, listed)
    if method == "tools/call":
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return error(id_, INVALID_PARAMS, "Invalid params: tools/call needs a string name")
        arguments = params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return error(id_, INVALID_PARAMS, "Invalid params: arguments must be an object")
        tool = spec.tool(params["name"])
        if tool is None:
            return error(id_, INVALID_PARAMS, f"Unknown tool: {params['name']}")
        called = call_tool_result(tool, arguments)
        if isinstance(called, tuple):
            return error(id_, called[0], called[1])
        return result(id_, called)
    return error(id_, METHOD_NOT_FOUND, f"Method not found: {method}")
