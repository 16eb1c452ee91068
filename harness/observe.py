"""Reading what the client sent to the model service, the way a case needs it.

Strategy: cases check rules, not the reference client's way of meeting them, so an MCP
tool is found in a model request by its label `[MCP server S, tool T]` (EXP-4), never by
assuming the exposed name. These are pure functions of the mock Responses service's
journal entries and request bodies (see `mocks.model_script` for the body readers).
"""

from __future__ import annotations

from typing import Any

from mocks.model_script import function_call_outputs, function_calls, label, offered_tools

__all__ = [
    "builtin_tools",
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
    "stays_quiet",
]


def model_requests(model: Any) -> list[dict[str, Any]]:
    """The JSON bodies the client POSTed to the model service (`.../responses`), in order."""
    bodies = []
    for entry in model.journal.entries(kind="http"):
        body = entry.extra.get("body")
        if entry.http_method == "POST" and (entry.path or "").endswith("/responses") and isinstance(body, dict):
            bodies.append(body)
    return bodies


def offered_names(body: Any) -> list[str]:
    return [str(t.get("name")) for t in offered_tools(body)]


def mcp_tools(body: Any) -> list[dict[str, Any]]:
    """Offered functions whose description starts with an MCP label."""
    return [t for t in offered_tools(body) if str(t.get("description") or "").startswith("[MCP server ")]


def builtin_tools(body: Any) -> list[dict[str, Any]]:
    """Offered tools that are not MCP tools (the client's own), of any type."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return []
    return [
        t
        for t in tools
        if isinstance(t, dict) and not str(t.get("description") or "").startswith("[MCP server ")
    ]


def mcp_tool(body: Any, server: str, tool: str) -> dict[str, Any] | None:
    """The offered function labelled `[MCP server SERVER, tool TOOL]`, or None."""
    wanted = label(server, tool)
    return next((t for t in offered_tools(body) if str(t.get("description") or "").startswith(wanted)), None)


def exposed_name(body: Any, server: str, tool: str) -> str | None:
    found = mcp_tool(body, server, tool)
    return None if found is None else str(found.get("name"))


def last_request(model: Any) -> dict[str, Any]:
    """The last body the client sent to the model; AssertionError if it sent none."""
    bodies = model_requests(model)
    if not bodies:
        raise AssertionError("the client sent no request to the model service")
    return bodies[-1]


def stays_quiet(journal: Any, within: float, method: str | None = None, *, kind: str | None = None) -> list[Any]:
    """Watch `journal` for `within` seconds; the matching entries (empty if none came).

    For rules about what must NOT happen: it returns as soon as something does."""
    from mocks.journal import JournalTimeout

    try:
        return journal.wait_for(method, kind=kind, timeout=within)
    except JournalTimeout:
        return []
