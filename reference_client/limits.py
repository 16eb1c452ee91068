"""Discovery limits and the byte-size rule (DISC-6..DISC-10, NET-4).

Strategy: one pure function decides whether a server's whole tool list is acceptable, so
registration is all-or-nothing (DISC-10): the engine calls `check_tools` once on the
complete list and registers nothing when it returns a reason. Sizes are the UTF-8 length
of the compact JSON encoding (`json_size`), as the requirements catalog decides for DISC-8
and DISC-9 (harness/data/requirements.md).

The definitions total (DISC-9) is the sum, over tools, of the compact JSON size of the
object `{"name": ..., "description": ..., "inputSchema": ...}` made of those of the three
fields the tool has: what a tool definition costs in a model request, give or take our own
label. Annotations, titles and other fields are not counted.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "MAX_DEFINITIONS_BYTES",
    "MAX_MESSAGE_BYTES",
    "MAX_PAGES",
    "MAX_SCHEMA_BYTES",
    "MAX_TOOLS",
    "check_tools",
    "json_size",
    "message_limit_reason",
    "page_limit_reason",
]

MAX_PAGES = 16
MAX_TOOLS = 128
MAX_SCHEMA_BYTES = 16 * 1024
MAX_DEFINITIONS_BYTES = 64 * 1024
MAX_MESSAGE_BYTES = 1024 * 1024


def json_size(value: Any) -> int:
    """UTF-8 length of the compact JSON encoding of `value`.

    Raises ValueError / TypeError / RecursionError for values JSON cannot encode.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return len(text.encode("utf-8", "surrogatepass"))


def page_limit_reason() -> str:
    return f"it needs more than {MAX_PAGES} pages of tools/list (the limit is {MAX_PAGES} pages)"


def message_limit_reason() -> str:
    return f"a message from the server is larger than the 1 MiB limit ({MAX_MESSAGE_BYTES} bytes)"


def _shown(name: str) -> str:
    # A hostile name could be huge or hold control characters; show a short JSON form.
    text = json.dumps(name, ensure_ascii=True)
    return text if len(text) <= 80 else text[:77] + '..."'


def check_tools(tools: list[dict[str, Any]]) -> str | None:
    """The reason a server with this complete tools/list result is unavailable, or None."""
    try:
        return _tools_problem(tools)
    except (ValueError, TypeError, RecursionError, OverflowError):
        return "its tool list cannot be encoded as JSON"


def _tools_problem(tools: Any) -> str | None:
    if not isinstance(tools, list):
        return "its tools/list result is not a list of tools"
    if len(tools) > MAX_TOOLS:
        return f"it lists {len(tools)} tools; the limit is {MAX_TOOLS} tools per server"
    seen: set[str] = set()
    total = 0
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"tool number {index + 1} in its tool list is not a JSON object"
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            return f"tool number {index + 1} in its tool list has no name"
        if name in seen:
            return f"it lists the tool {_shown(name)} twice"
        seen.add(name)
        description = tool.get("description")
        if description is not None and not isinstance(description, str):
            return f"the description of tool {_shown(name)} is not text"
        if "inputSchema" not in tool:
            return f"tool {_shown(name)} has no inputSchema (it must be a JSON object)"
        schema = tool["inputSchema"]
        if not isinstance(schema, dict):
            return f"the inputSchema of tool {_shown(name)} is not a JSON object"
        schema_size = json_size(schema)
        if schema_size > MAX_SCHEMA_BYTES:
            return (
                f"the inputSchema of tool {_shown(name)} is {schema_size} bytes; "
                f"the limit is 16 KiB ({MAX_SCHEMA_BYTES} bytes)"
            )
        definition = {
            key: tool[key] for key in ("name", "description", "inputSchema") if key in tool
        }
        total += json_size(definition)
    if total > MAX_DEFINITIONS_BYTES:
        return (
            f"its tool definitions total {total} bytes; "
            f"the limit is 64 KiB ({MAX_DEFINITIONS_BYTES} bytes) per server"
        )
    return None
