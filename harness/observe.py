"""Reading what the client sent to the model service, the way a case needs it.

Strategy: cases check rules, not the reference client's way of meeting them. An MCP tool
is found in a model request by its mock's marker (`offered_function`), which every mock
serves in each tool's description and schema: it is there whatever name, label or place
(a top-level function, a function inside a Responses `namespace` tool) the host chose.
Only the EXP rules, whose subject is the naming and labelling, look a tool up by its label
`[MCP server S, tool T]` (`mcp_tool`, `exposed_name`). These are pure functions of the
mock Responses service's journal entries and request bodies (see
`mcp_host_conformance.mocks.responses.script` for the body readers).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_host_conformance.mocks.model_script import (
    function_call_outputs,
    function_calls,
    label,
    offered_tools,
)
from mcp_host_conformance.mocks.responses.script import carries, offered_functions
from mcp_host_conformance.mocks.spec import MARKER_PREFIX, tool_marker

__all__ = [
    "builtin_tools",
    "call_outputs",
    "exposed_name",
    "function_call_outputs",
    "function_calls",
    "label",
    "last_request",
    "mcp_functions",
    "mcp_tool",
    "mcp_tools",
    "model_requests",
    "offered_for",
    "offered_function",
    "offered_functions",
    "offered_names",
    "offered_tools",
    "offered_tools_of",
    "output_text",
    "paired_outputs",
    "reply_calls",
    "shows_status",
    "stated_status",
    "status_problem",
    "status_text",
    "stays_quiet",
    "user_texts",
]


def model_requests(model: Any) -> list[dict[str, Any]]:
    """The JSON bodies the client POSTed to the model service (`.../responses`), in order."""
    bodies = []
    for entry in model.journal.entries(kind="http"):
        body = entry.extra.get("body")
        if (
            entry.http_method == "POST"
            and (entry.path or "").endswith("/responses")
            and isinstance(body, dict)
        ):
            bodies.append(body)
    return bodies


def offered_names(body: Any) -> list[str]:
    return [str(t.get("name")) for t in offered_tools(body)]


def mcp_tools(body: Any) -> list[dict[str, Any]]:
    """Offered functions whose description starts with an MCP label."""
    return [
        t for t in offered_tools(body) if str(t.get("description") or "").startswith("[MCP server ")
    ]


def builtin_tools(body: Any) -> list[dict[str, Any]]:
    """Offered tools that are not MCP tools (the client's own), of any type: neither
    labelled as an MCP tool nor carrying a mock's marker (a `namespace` tool holding MCP
    functions carries their markers)."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return []
    return [
        t
        for t in tools
        if isinstance(t, dict)
        and not str(t.get("description") or "").startswith("[MCP server ")
        and not carries(t, MARKER_PREFIX)
    ]


def mcp_tool(body: Any, server: str, tool: str) -> dict[str, Any] | None:
    """The offered function labelled `[MCP server SERVER, tool TOOL]`, or None."""
    wanted = label(server, tool)
    return next(
        (t for t in offered_tools(body) if str(t.get("description") or "").startswith(wanted)), None
    )


def offered_function(body: Any, mock: Any, tool: str) -> dict[str, Any] | None:
    """The function the host offered for `mock`'s tool `tool`, found by the tool's marker
    anywhere in it, at the top level or inside a `namespace` tool; None if not offered."""
    marker = tool_marker(mock.marker_token, tool)
    return next((f for f, _ in offered_functions(body) if carries(f, marker)), None)


def offered_for(body: Any, model: Any, server: str, tool: str) -> dict[str, Any] | None:
    """The function offered for tool `tool` of the server configured as `server`: by the
    marker of the mock the model knows under that name (`Host.add_http`/`add_stdio` tell
    it), else, for a server no mock stands behind, by its label."""
    marker = model.marker_for(server, tool)
    if marker is None:
        return mcp_tool(body, server, tool)
    return next((f for f, _ in offered_functions(body) if carries(f, marker)), None)


def mcp_functions(body: Any) -> list[dict[str, Any]]:
    """Every offered function for an MCP tool (carrying a mock's marker, or labelled), at the
    top level or inside `namespace` tools."""
    return [
        f
        for f, _ in offered_functions(body)
        if carries(f, MARKER_PREFIX) or str(f.get("description") or "").startswith("[MCP server ")
    ]


def offered_tools_of(body: Any, mock: Any, tools: Any = None) -> list[str]:
    """Which of `mock`'s tools (default: every tool it serves or changes to) the request
    offers, by their markers, in the mock's order."""
    if tools is None:
        spec = mock.spec
        tools = [t.name for t in [*spec.tools, *spec.misbehaviour.changed_tools]]
    return [name for name in dict.fromkeys(tools) if offered_function(body, mock, name)]


def exposed_name(body: Any, server: str, tool: str) -> str | None:
    found = mcp_tool(body, server, tool)
    return None if found is None else str(found.get("name"))


def last_request(model: Any) -> dict[str, Any]:
    """The last body the client sent to the model; AssertionError if it sent none."""
    bodies = model_requests(model)
    if not bodies:
        raise AssertionError("the client sent no request to the model service")
    return bodies[-1]


def status_text(status: Any) -> str:
    """A server's reported status as the user saw it (its line), for a check's `actual`."""
    if status is None:
        return "no status line"
    return status.line or f"connected={status.connected} reason={status.reason!r}"


def stays_quiet(
    journal: Any, within: float, method: str | None = None, *, kind: str | None = None
) -> list[Any]:
    """Watch `journal` for `within` seconds; the matching entries (empty if none came).

    For rules about what must NOT happen: it returns as soon as something does."""
    from mcp_host_conformance.mocks.journal import JournalTimeout

    try:
        return journal.wait_for(method, kind=kind, timeout=within)
    except JournalTimeout:
        return []


# ---- tool outputs as the model receives them (RES, RETRY, TURN) ----------------------------


def output_text(output: Any) -> str:
    """A `function_call_output`'s output as text: a string as is, a list of content parts
    (`{"type": "input_text", "text": ...}`) joined by newlines, anything else as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = [
            p.get("text") for p in output if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "\n".join(parts)
    return "" if output is None else json.dumps(output, ensure_ascii=False)


STATUS_WORDS = ("completed", "failed", "denied", "unknown", "output_limit")
_ANY_STATUS = "|".join(STATUS_WORDS)
# The catalog's framing, as the seed shows it: `[Tool result: completed]`.
_FRAMING = re.compile(rf"\[\s*tool\s+result\s*:\s*({_ANY_STATUS})\s*\]", re.IGNORECASE)
# A status phrase: the word "status" (maybe quoted, maybe "status of this call") then
# `:`, `=`, "is" or "was", then the status: `Status: unknown`, `"status": "denied"`,
# `status=failed`, "The status of this call is unknown".
_PHRASE = re.compile(
    rf"(?<![\w-])status[\"'`]?(?:\s+of\s+[^\n.:;=]{{1,60}}?)?\s*(?:[:=]|\bis\b|\bwas\b)\s*"
    rf"[\"'`]?({_ANY_STATUS})(?![\w-])",
    re.IGNORECASE,
)


def stated_status(output: Any) -> str | None:
    """The status an output tells the model, or None when it states none.

    Only a statement counts: the catalog's framing (`[Tool result: STATUS]`), a structured
    field (a JSON object output whose `status` is one), or a status phrase (`Status: X`,
    `"status": "X"`, "the status of this call is X"). A bare word anywhere (a Rust
    backtrace's `<unknown>` frames, "failed to parse") states nothing. The first statement
    in the output decides."""
    if isinstance(output, dict):
        structured = output.get("status")
        if isinstance(structured, str) and structured.lower() in STATUS_WORDS:
            return structured.lower()
    text = output_text(output)
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("status"), str):
        if parsed["status"].lower() in STATUS_WORDS:
            return str(parsed["status"]).lower()
    found = [m for m in (_FRAMING.search(text), _PHRASE.search(text)) if m is not None]
    if not found:
        return None
    return min(found, key=lambda m: m.start()).group(1).lower()


def shows_status(text: Any, status: str) -> bool:
    """Whether an output states this status (see `stated_status`)."""
    return stated_status(text) == status


def reply_calls(model: Any) -> list[list[dict[str, Any]]]:
    """For each model request (in order, as `model_requests`), the function calls the mock
    model answered it with: `{"call_id", "name", "arguments"}` each."""
    replies = []
    for entry in model.journal.entries(kind="http"):
        body = entry.extra.get("body")
        if (
            entry.http_method == "POST"
            and (entry.path or "").endswith("/responses")
            and isinstance(body, dict)
        ):
            replies.append(list(entry.extra.get("reply_calls") or []))
    return replies


def paired_outputs(body: Any, call_id: str) -> list[Any]:
    """Every `function_call_output` for `call_id` in a request's input (RES-11: exactly one)."""
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return []
    return [
        i.get("output")
        for i in items
        if isinstance(i, dict)
        and i.get("type") == "function_call_output"
        and i.get("call_id") == call_id
    ]


def user_texts(body: Any) -> list[str]:
    """The text of every user message in a request's input (a string input counts as one)."""
    items = body.get("input") if isinstance(body, dict) else None
    if isinstance(items, str):
        return [items]
    texts = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.append(
                "\n".join(
                    str(p.get("text")) for p in content if isinstance(p, dict) and "text" in p
                )
            )
    return texts


def call_outputs(model: Any) -> list[tuple[dict[str, Any], list[Any]]]:
    """Every call the mock model made, with the outputs paired to it (same `call_id`) in the
    next model request: `[]` if there was no next request or no output for it."""
    bodies = model_requests(model)
    replies = reply_calls(model)
    pairs = []
    for k, calls in enumerate(replies):
        following = bodies[k + 1] if k + 1 < len(bodies) else None
        for call in calls:
            pairs.append((call, paired_outputs(following, call["call_id"])))
    return pairs


def status_problem(model: Any, turn: Any, status: str, call: int = -1) -> str | None:
    """Why the model journal and the adapter's Turn do not both give call number `call` (of
    every call the model made, default the last) this status; None if they do. The model
    journal is the primary evidence: the paired output must exist, be unique, and state it."""
    pairs = call_outputs(model)
    if not pairs:
        return "the model made no call (or the client never asked the model)"
    try:
        made, outputs = pairs[call]
    except IndexError:
        return f"the model made {len(pairs)} call(s), no call number {call}"
    if not outputs:
        return f"no function_call_output for call {made['call_id']} in the next model request"
    if len(outputs) > 1:
        return f"{len(outputs)} outputs for call {made['call_id']} in the next model request"
    text = output_text(outputs[0])
    stated = stated_status(outputs[0])
    if stated is None:
        return (
            f"the model received {text[:200]!r}, which states no status (expected {status}: "
            f"`[Tool result: {status}]`, a `status` field, or `Status: {status}`)"
        )
    if stated != status:
        return f"the model received {text[:200]!r}, stating status {stated}, not {status}"
    reported = [c.status for c in getattr(turn, "calls", [])]
    if turn is not None and status not in reported:
        return f"the model received {status}, but the client reported statuses {reported}"
    return None
