"""Reading what the client sent to the model service, the way a case needs it.

Strategy: cases check rules, not the reference client's way of meeting them, so an MCP
tool is found in a model request by its label `[MCP server S, tool T]` (EXP-4), never by
assuming the exposed name. These are pure functions of the mock Responses service's
journal entries and request bodies (see `mcp_host_conformance.mocks.model_script` for
the body readers).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from mcp_host_conformance.harness.adapter import STATUSES, CallStatus, ServerStatus, Turn
from mcp_host_conformance.harness.mock_contract import Journal, ModelService
from mcp_host_conformance.mocks.journal import Entry, JournalTimeout
from mcp_host_conformance.mocks.model_script import (
    function_call_outputs,
    function_calls,
    label,
    offered_tools,
)

# A request body or an item of one, as parsed JSON: the shape is the client's to get right,
# so every reader here checks what it uses.
Body = dict[str, Any]
Tool = dict[str, Any]

__all__ = [
    "builtin_tools",
    "call_outputs",
    "exposed_name",
    "function_call_outputs",
    "function_calls",
    "label",
    "last_request",
    "mcp_tool",
    "mcp_tools",
    "model_requests",
    "offered_names",
    "offered_tools",
    "output_text",
    "paired_outputs",
    "reply_calls",
    "shows_status",
    "status_problem",
    "status_text",
    "stays_quiet",
    "user_texts",
    "STATUS_WORDS",
]


def model_requests(model: ModelService) -> list[Body]:
    """The JSON bodies the client POSTed to the model service (`.../responses`), in order."""
    bodies: list[Body] = []
    for entry in model.journal.entries(kind="http"):
        body = entry.extra.get("body")
        if (
            entry.http_method == "POST"
            and (entry.path or "").endswith("/responses")
            and isinstance(body, dict)
        ):
            bodies.append(body)
    return bodies


def offered_names(body: object) -> list[str]:
    return [str(t.get("name")) for t in offered_tools(body)]


def mcp_tools(body: object) -> list[Tool]:
    """Offered functions whose description starts with an MCP label."""
    return [
        t for t in offered_tools(body) if str(t.get("description") or "").startswith("[MCP server ")
    ]


def builtin_tools(body: object) -> list[Tool]:
    """Offered tools that are not MCP tools (the client's own), of any type."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return []
    return [
        t
        for t in tools
        if isinstance(t, dict) and not str(t.get("description") or "").startswith("[MCP server ")
    ]


def mcp_tool(body: object, server: str, tool: str) -> Tool | None:
    """The offered function labelled `[MCP server SERVER, tool TOOL]`, or None."""
    wanted = label(server, tool)
    return next(
        (t for t in offered_tools(body) if str(t.get("description") or "").startswith(wanted)), None
    )


def exposed_name(body: object, server: str, tool: str) -> str | None:
    found = mcp_tool(body, server, tool)
    return None if found is None else str(found.get("name"))


def last_request(model: ModelService) -> Body:
    """The last body the client sent to the model; AssertionError if it sent none."""
    bodies = model_requests(model)
    if not bodies:
        raise AssertionError("the client sent no request to the model service")
    return bodies[-1]


def status_text(status: ServerStatus | None) -> str:
    """A server's reported status as the user saw it (its line), for a check's `actual`."""
    if status is None:
        return "no status line"
    return status.line or f"connected={status.connected} reason={status.reason!r}"


def stays_quiet(
    journal: Journal, within: float, method: str | None = None, *, kind: str | None = None
) -> list[Entry]:
    """Watch `journal` for `within` seconds; the matching entries (empty if none came).

    For rules about what must NOT happen: it returns as soon as something does."""
    try:
        return journal.wait_for(method, kind=kind, timeout=within)
    except JournalTimeout:
        return []


# ---- tool outputs as the model receives them (RES, RETRY, TURN) ----------------------------


def output_text(output: object) -> str:
    """A `function_call_output`'s output as text: a string as is, a list of content parts
    (`{"type": "input_text", "text": ...}`) joined by newlines, anything else as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = [
            str(p["text"]) for p in output if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "\n".join(parts)
    return "" if output is None else json.dumps(output, ensure_ascii=False)


_STATUS_LABEL = re.compile(r"\bstatus\b[\"']?\s*[:=]?\s*[\"']?([a-z_]+)", re.IGNORECASE)


def shows_status(text: str, status: str) -> bool:
    """Whether an output text tells the model this status. A labelled status
    (`Status: unknown`, `"status": "unknown"`) must be this one; without a label the
    status word must appear as a word."""
    labelled = _STATUS_LABEL.search(text)
    if labelled and labelled.group(1).lower() in STATUS_WORDS:
        return labelled.group(1).lower() == status
    return re.search(rf"(?<![a-z_]){re.escape(status)}(?![a-z_])", text, re.IGNORECASE) is not None


STATUS_WORDS: Final[tuple[CallStatus, ...]] = STATUSES


def reply_calls(model: ModelService) -> list[list[dict[str, Any]]]:
    """For each model request (in order, as `model_requests`), the function calls the mock
    model answered it with: `{"call_id", "name", "arguments"}` each."""
    replies: list[list[dict[str, Any]]] = []
    for entry in model.journal.entries(kind="http"):
        body = entry.extra.get("body")
        if (
            entry.http_method == "POST"
            and (entry.path or "").endswith("/responses")
            and isinstance(body, dict)
        ):
            replies.append(list(entry.extra.get("reply_calls") or []))
    return replies


def paired_outputs(body: object, call_id: str) -> list[object]:
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


def user_texts(body: object) -> list[str]:
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


def call_outputs(model: ModelService) -> list[tuple[dict[str, Any], list[object]]]:
    """Every call the mock model made, with the outputs paired to it (same `call_id`) in the
    next model request: `[]` if there was no next request or no output for it."""
    bodies = model_requests(model)
    replies = reply_calls(model)
    pairs: list[tuple[dict[str, Any], list[object]]] = []
    for k, calls in enumerate(replies):
        following = bodies[k + 1] if k + 1 < len(bodies) else None
        for call in calls:
            pairs.append((call, paired_outputs(following, call["call_id"])))
    return pairs


def status_problem(
    model: ModelService, turn: Turn | None, status: str, call: int = -1
) -> str | None:
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
    if not shows_status(text, status):
        return f"the model received {text[:200]!r}, not status {status}"
    reported = [c.status for c in turn.calls] if turn is not None else []
    if turn is not None and status not in reported:
        return f"the model received {status}, but the client reported statuses {reported}"
    return None
