"""Reading a model request, whichever of the three APIs the host speaks.

Strategy: a host reaches the mock model through the OpenAI Responses API, OpenAI Chat
Completions or the Anthropic Messages API. Rather than three sets of readers, a request is
read in one shape, the Responses API's: `as_responses(body)` gives a Chat Completions or
Messages body as the Responses request that says the same, and a Responses body as it is.
Offered functions become `{"type": "function", "name", "description", "parameters", ...}`
(Chat's `function` object lifted to the top, Anthropic's `input_schema` named
`parameters`; every other field kept, since a mock's marker may be anywhere in a tool);
assistant tool calls become `function_call` items (`arguments` a JSON string: Anthropic's
`input` encoded), tool results `function_call_output` items (`output` as sent), the other
messages message items in order, and Anthropic's `system` the `instructions`. Every reader
here reads that shape, so each works on a body of any API, and the planner
(`mcp_host_conformance.mocks.responses.script`) finds the function offered for a tool in
one place. A body is told apart by its `messages` (Chat and Anthropic) against `input`
(Responses); Chat's and Anthropic's own forms never collide (`tool_calls` and role "tool"
against `tool_use`/`tool_result` blocks; a `function` object against a top-level `name`),
so one translation reads both. The translation is linear in the body, which
`json_input.read_json` has already bounded (size, depth), checks the type of everything it
touches and never raises; it does not judge a body: the wire modules reject what the real
services reject.
"""

from __future__ import annotations

import json
from typing import Any, Literal

API = Literal["responses", "chat", "messages"]
APIS: tuple[API, ...] = ("responses", "chat", "messages")
MCP_LABEL_PREFIX = "[MCP server "


def label(server: str, tool: str) -> str:
    """The label a host puts at the start of an MCP tool's description (EXP-4)."""
    return f"[MCP server {server}, tool {tool}]"


# ---- one shape ---------------------------------------------------------------------------


class FlaggedText(str):
    """An Anthropic tool result's text, with the API's own outcome field beside it."""

    is_error: bool = False


class FlaggedParts(list[Any]):
    """An Anthropic tool result's content blocks, with the API's own outcome field."""

    is_error: bool = False


def flagged(content: Any, is_error: bool) -> Any:
    """A tool result's content as its Responses output, still a str or a list (every reader
    reads it as one), carrying `is_error`: in the Messages API the field, not the text, tells
    the model that a call failed, and its absence that it succeeded. Other content as is."""
    kind = FlaggedText if isinstance(content, str) else FlaggedParts
    if not isinstance(content, str | list):
        return content
    output = kind(content)
    output.is_error = is_error
    return output


def api_outcome(output: Any) -> str | None:
    """What the API's own field says of a tool result (the Messages API's `is_error`):
    "failed" when set, "completed" when not; None for an output of an API with no such
    field (Responses, Chat Completions)."""
    if isinstance(output, FlaggedText | FlaggedParts):
        return "failed" if output.is_error else "completed"
    return None


def is_conversation(body: Any) -> bool:
    """Whether `body` is a Chat Completions or Messages request (`messages`, no `input`)."""
    return isinstance(body, dict) and "messages" in body and "input" not in body


def as_responses(body: Any, api: API | None = None) -> Any:
    """`body` as a Responses request: a Chat Completions or Messages body translated, a
    Responses body (or anything else) as it is. `api` says which API the body was sent to;
    without it the body's own fields tell."""
    if api == "responses" or (api is None and not is_conversation(body)):
        return body
    if not isinstance(body, dict):
        return body
    view = {k: v for k, v in body.items() if k not in ("messages", "system", "tools")}
    view["input"] = [item for m in _list(body.get("messages")) for item in _items_of(m)]
    if "system" in body:
        view["instructions"] = _system_text(body["system"])
    if "tools" in body:
        tools = body["tools"]
        view["tools"] = [_as_function(t) for t in tools] if isinstance(tools, list) else tools
    return view


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _as_function(tool: Any) -> Any:
    """An offered Chat function or Anthropic custom tool as a Responses function; any other
    tool (Chat `custom`, Anthropic server tools such as `web_search_20250305`) as it is."""
    if not isinstance(tool, dict):
        return tool
    function = tool.get("function")
    if tool.get("type") == "function" and isinstance(function, dict):  # Chat Completions
        rest = {k: v for k, v in tool.items() if k not in ("type", "function")}
        return {**rest, **function, "type": "function"}
    if tool.get("type", "custom") == "custom" and "function" not in tool and "custom" not in tool:
        if isinstance(tool.get("name"), str):  # an Anthropic custom (client) tool
            rest = {k: v for k, v in tool.items() if k not in ("type", "input_schema")}
            found = {**rest, "type": "function"}
            if "input_schema" in tool:
                found["parameters"] = tool["input_schema"]
            return found
    return tool


def _system_text(system: Any) -> Any:
    """Anthropic's `system`: a string as is, text blocks joined by newlines."""
    if isinstance(system, list):
        return "\n".join(
            b["text"] for b in system if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return system


def encode_input(value: Any) -> str:
    """An Anthropic `tool_use` input as the JSON text of a function call's arguments."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _items_of(message: Any) -> list[dict[str, Any]]:
    """One Chat or Anthropic message as Responses input items, in order."""
    if not isinstance(message, dict):
        return []
    role = message.get("role")
    content = message.get("content")
    if role == "tool":  # Chat: the result of one call
        return [
            {
                "type": "function_call_output",
                "call_id": message.get("tool_call_id"),
                "output": content,
            }
        ]
    items: list[dict[str, Any]] = []
    parts: list[Any] = []

    def flush() -> None:
        if parts:
            items.append({"type": "message", "role": role, "content": list(parts)})
            parts.clear()

    if isinstance(content, list):
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use" and isinstance(block, dict):  # Anthropic: a call
                flush()
                items.append(
                    {
                        "type": "function_call",
                        "call_id": block.get("id"),
                        "name": block.get("name"),
                        "arguments": encode_input(block.get("input")),
                    }
                )
            elif kind == "tool_result" and isinstance(block, dict):  # Anthropic: a result
                flush()
                result = {
                    "type": "function_call_output",
                    "call_id": block.get("tool_use_id"),
                    "output": flagged(block.get("content"), block.get("is_error") is True),
                }
                if "is_error" in block:
                    result["is_error"] = block["is_error"]
                items.append(result)
            else:
                parts.append(block)
        flush()
    elif content is not None:
        items.append({"type": "message", "role": role, "content": content})
    for call in _list(message.get("tool_calls")):  # Chat: the assistant's calls
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return items


# ---- readers (any API) ---------------------------------------------------------------------


def offered_tools(body: Any) -> list[dict[str, Any]]:
    """The top-level function tools offered (Responses `tools[]` of type "function"; every
    Chat function and Anthropic custom tool, in the Responses shape)."""
    view = as_responses(body)
    if not isinstance(view, dict) or not isinstance(view.get("tools"), list):
        return []
    return [t for t in view["tools"] if isinstance(t, dict) and t.get("type") == "function"]


def offered_functions(body: Any) -> list[tuple[dict[str, Any], str | None]]:
    """Every function offered, with the name of the Responses `namespace` tool holding it
    (None for a top-level function), top-level ones first."""
    view = as_responses(body)
    if not isinstance(view, dict) or not isinstance(view.get("tools"), list):
        return []
    found: list[tuple[dict[str, Any], str | None]] = [(t, None) for t in offered_tools(view)]
    for tool in view["tools"]:
        if not isinstance(tool, dict) or tool.get("type") != "namespace":
            continue
        inner = tool.get("tools")
        for t in inner if isinstance(inner, list) else []:
            if isinstance(t, dict) and t.get("type") == "function":
                found.append((t, str(tool.get("name"))))
    return found


def carries(tool: dict[str, Any], marker: str) -> bool:
    """Whether `marker` appears anywhere in an offered function (name, description,
    parameters, at any depth)."""
    return marker in json.dumps(tool, ensure_ascii=False)


def offered_mcp_tools(body: Any) -> list[dict[str, Any]]:
    """Offered functions whose description carries an MCP label."""
    return [
        t
        for t in offered_tools(body)
        if isinstance(t.get("description"), str) and t["description"].startswith(MCP_LABEL_PREFIX)
    ]


def input_items(body: Any) -> list[dict[str, Any]]:
    """The conversation as Responses input items (a plain string input has none)."""
    view = as_responses(body)
    if not isinstance(view, dict) or not isinstance(view.get("input"), list):
        return []
    return [i for i in view["input"] if isinstance(i, dict)]


def function_calls(body: Any) -> list[dict[str, Any]]:
    """The calls the client replays in the conversation (earlier model calls), as
    `function_call` items."""
    return [i for i in input_items(body) if i.get("type") == "function_call"]


def function_call_outputs(body: Any) -> dict[Any, Any]:
    """call_id -> output of every tool result in the conversation, as sent (a call_id is
    whatever the client sent: usually a string, None if it sent none)."""
    return {
        i.get("call_id"): i.get("output")
        for i in input_items(body)
        if i.get("type") == "function_call_output"
    }


def output_text(output: Any) -> str:
    """A tool result as text: a string as is, a list of content parts (`input_text`, Chat
    and Anthropic `text`) joined by newlines, anything else as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(
            str(p["text"]) for p in output if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return "" if output is None else json.dumps(output, ensure_ascii=False)


def tool_outputs(body: Any) -> dict[Any, str]:
    """call_id -> the text of its result, for every tool result in the conversation."""
    return {k: output_text(v) for k, v in function_call_outputs(body).items()}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        str(p.get("text")) for p in _list(content) if isinstance(p, dict) and "text" in p
    )


def user_texts(body: Any) -> list[str]:
    """The text of every user message (a string input counts as one; an Anthropic user
    message carrying only tool results is not one)."""
    view = as_responses(body)
    if isinstance(view, dict) and isinstance(view.get("input"), str):
        return [view["input"]]
    return [_content_text(i.get("content")) for i in input_items(view) if i.get("role") == "user"]


def instructions(body: Any) -> list[str]:
    """The standing instructions: Responses `instructions`, Anthropic `system`, then every
    system or developer message (Chat's, or in a Responses input), in order."""
    view = as_responses(body)
    found = []
    if isinstance(view, dict) and isinstance(view.get("instructions"), str):
        found.append(view["instructions"])
    found.extend(
        _content_text(i.get("content"))
        for i in input_items(view)
        if i.get("role") in ("system", "developer")
    )
    return found
