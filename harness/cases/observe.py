"""Reading what the client sent to the model service, the way a case needs it.

Strategy: cases check rules, not the reference client's way of meeting them. An MCP tool
is found in a model request by its mock's marker (`offered_function`, `offered_for`), which
every mock serves in each tool's description and schema: it is there whatever name, label
or place (a top-level function, a function inside a Responses `namespace` tool) the host
chose. Only the EXP rules, whose subject is the naming and labelling, then check the name
and the label `[MCP server S, tool T]` of what was found. A call's status is read the way
the host states it (`stated_status`), never from a bare word. A stated status that
contradicts what happened (`status_contradiction`) fails every rule; an output that states
none fails only the rules that give a status (RES-1, RES-5 to RES-9: `status_not_conveyed`),
and every rule's substance is judged apart from it (the catalog's RES decision). These
are pure functions of the mock model's journal entries and request bodies (see
`mcp_host_conformance.mocks.responses.bodies` for the body readers). The mock model speaks
the Responses API, Chat Completions and Anthropic Messages; a request of any of them is
read in the Responses API's shape (`as_responses`), so each reader here works whichever
API the host chose.
"""

from __future__ import annotations

import json
import re
import select
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from mcp_host_conformance.harness.cases.mock_contract import Journal, MarkedMock, ModelService
from mcp_host_conformance.harness.contract.adapter import STATUSES, CallStatus, ServerStatus
from mcp_host_conformance.mocks.journal import Entry, JournalTimeout
from mcp_host_conformance.mocks.model_script import (
    function_call_outputs,
    function_calls,
    label,
    offered_tools,
)
from mcp_host_conformance.mocks.responses.bodies import api_outcome, as_responses
from mcp_host_conformance.mocks.responses.script import carries, offered_functions
from mcp_host_conformance.mocks.spec import MARKER_PREFIX, tool_marker

# A request body or an item of one, as parsed JSON: the shape is the client's to get right,
# so every reader here checks what it uses.
Body = dict[str, Any]
Tool = dict[str, Any]

__all__ = [
    "builtin_tools",
    "call_outputs",
    "declare_vocabulary",
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
    "is_model_request",
    "offered_names",
    "offered_tools",
    "offered_tools_of",
    "output_text",
    "paired_outputs",
    "request_body",
    "reply_calls",
    "same_json",
    "shows_status",
    "stated_status",
    "status_contradiction",
    "status_not_conveyed",
    "status_text",
    "stays_quiet",
    "user_texts",
    "wait_until",
    "STATUS_WORDS",
    "MAY_HAVE_ACTED",
    "NO_RETRY",
    "oauth_reason_problems",
]

# RES-12, matched loosely on meaning: the server may have acted...
MAY_HAVE_ACTED = re.compile(
    r"\b(may|might|could|possibly|perhaps|can't tell|cannot tell|unclear|not known whether|"
    r"unknown whether)\b[^.]{0,80}?"
    r"\b(acted|act|run|ran|executed|execute|processed|process|completed|applied|performed|"
    r"received|taken effect|happened|succeeded|gone through|carried out|changed)\b",
    re.IGNORECASE,
)
# ...and the call must not be retried automatically (retry, repeat, resend, call again).
_AGAIN = (
    r"(retr(y|ied|ies|ying)|repeat(ed|ing|s)?|re-?send(ing|s)?|re-?sent|re-?run(ning|s)?|"
    r"re-?issu(e|ed|ing)|(call|run|send|issue|invoke)(ing|s|ed)?\s+(it|this|the\s+\w+)?\s*again)"
)
NO_RETRY = re.compile(
    rf"(\b(not|never|no|don't|do not|must not|mustn't|should not|shouldn't|avoid)\b"
    rf"[^.]{{0,60}}?\b{_AGAIN})"
    rf"|(\b{_AGAIN}\b[^.]{{0,40}}?\b(not|never|forbidden|prohibited|unsafe|disabled)\b)",
    re.IGNORECASE,
)


def is_model_request(entry: Entry) -> bool:
    """A POST to the model: `.../responses`, or the Chat Completions or Messages endpoint."""
    return entry.http_method == "POST" and (
        (entry.path or "").split("?")[0].endswith("/responses")
        or entry.extra.get("api") in ("chat", "messages")
    )


def request_body(entry: Entry) -> Body | None:
    """The body of a model request (`is_model_request`) in the Responses API's shape."""
    body = entry.extra.get("body")
    if not isinstance(body, dict):
        return None
    view = as_responses(body, entry.extra.get("api", "responses"))
    return view if isinstance(view, dict) else None


def model_requests(model: ModelService) -> list[Body]:
    """The JSON bodies the client POSTed to the model service, in order, in the Responses
    API's shape (`as_responses`: a Responses body as sent, a Chat Completions or Messages
    body translated)."""
    bodies: list[Body] = []
    for entry in model.journal.entries(kind="http"):
        body = request_body(entry) if is_model_request(entry) else None
        if body is not None:
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
    """Offered tools that are not MCP tools (the client's own), of any type: neither
    labelled as an MCP tool nor carrying a mock's marker (a `namespace` tool holding MCP
    functions carries their markers)."""
    body = as_responses(body)
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


def mcp_tool(body: object, server: str, tool: str) -> Tool | None:
    """The offered function labelled `[MCP server SERVER, tool TOOL]`, or None."""
    wanted = label(server, tool)
    return next(
        (t for t in offered_tools(body) if str(t.get("description") or "").startswith(wanted)), None
    )


def _carrying(body: object, marker: str) -> Tool | None:
    return next((f for f, _ in offered_functions(body) if carries(f, marker)), None)


def offered_function(body: object, mock: MarkedMock, tool: str) -> Tool | None:
    """The function the host offered for `mock`'s tool `tool`, found by the tool's marker
    anywhere in it, at the top level or inside a `namespace` tool; None if not offered."""
    return _carrying(body, tool_marker(mock.marker_token, tool))


def offered_for(body: object, model: ModelService, server: str, tool: str) -> Tool | None:
    """The function offered for tool `tool` of the server configured as `server`: by the
    marker of the mock the model knows under that name (`Host.add_http`/`add_stdio` tell
    it), else, for a server no mock stands behind, by its label."""
    marker = model.marker_for(server, tool)
    return mcp_tool(body, server, tool) if marker is None else _carrying(body, marker)


def mcp_functions(body: object) -> list[Tool]:
    """Every offered function for an MCP tool (carrying a mock's marker, or labelled), at the
    top level or inside `namespace` tools."""
    return [
        f
        for f, _ in offered_functions(body)
        if carries(f, MARKER_PREFIX) or str(f.get("description") or "").startswith("[MCP server ")
    ]


def offered_tools_of(body: object, mock: MarkedMock, tools: list[str] | None = None) -> list[str]:
    """Which of `mock`'s tools (default: every tool it serves or changes to) the request
    offers, by their markers, in the mock's order."""
    if tools is None:
        spec = mock.spec
        tools = [t.name for t in [*spec.tools, *spec.misbehaviour.changed_tools]]
    return [name for name in dict.fromkeys(tools) if offered_function(body, mock, name)]


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


def shows_status(output: object, status: str) -> bool:
    """Whether an output states this status (see `stated_status`)."""
    return stated_status(output) == status


STATUS_WORDS: Final[tuple[CallStatus, ...]] = STATUSES
_ANY_STATUS = "|".join(STATUS_WORDS)
# The catalog's framing, as the seed shows it: `[Tool result: completed]`.
_FRAMING = re.compile(rf"\[\s*tool\s+result\s*:\s*({_ANY_STATUS})\s*\]", re.IGNORECASE)
# A status phrase: the word "status" or "outcome" (maybe quoted, maybe "status of this
# call") then `:`, `=`, "is" or "was", then the status: `Status: unknown`, `"status":
# "denied"`, `status=failed`, "The status of this call is unknown", "The outcome of this
# call is unknown" (a status in words, as the RES decision counts it).
_PHRASE = re.compile(
    rf"(?<![\w-])(?:status|outcome)[\"'`]?(?:\s+of\s+[^\n.:;=]{{1,60}}?)?\s*(?:[:=]|\bis\b|\bwas\b)\s*"
    rf"[\"'`]?({_ANY_STATUS})(?![\w-])",
    re.IGNORECASE,
)


# The host's own words for statuses (`Description.status_vocabulary`), for this run.
_VOCABULARY: list[tuple[str, re.Pattern[str]]] = []


def declare_vocabulary(vocabulary: Mapping[str, str]) -> None:
    """Read statuses in the host's own words too (the adapter's declaration): status -> a
    regular expression an output matches when it means that status. ValueError for a status
    outside the catalog's or a pattern that does not compile."""
    found = []
    for status, pattern in vocabulary.items():
        if status not in STATUS_WORDS:
            raise ValueError(f"status_vocabulary: {status!r} is not one of {STATUS_WORDS}")
        try:
            found.append((status, re.compile(pattern)))
        except re.error as exc:
            raise ValueError(f"status_vocabulary[{status!r}]: {exc}") from None
    _VOCABULARY[:] = found


def stated_status(output: object) -> str | None:
    """The status an output tells the model, or None when it states none.

    Only a statement counts: the catalog's framing (`[Tool result: STATUS]`), a structured
    field (a JSON object output whose `status` is one), or a status phrase (`Status: X`,
    `"status": "X"`, "the status of this call is X"). A bare word anywhere (a Rust
    backtrace's `<unknown>` frames, "failed to parse") states nothing. The first statement
    in the output decides."""
    structured: object = output.get("status") if isinstance(output, dict) else None
    text = output_text(output)
    if structured is None:
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        structured = parsed.get("status") if isinstance(parsed, dict) else None
    if isinstance(structured, str) and structured.lower() in STATUS_WORDS:
        return structured.lower()
    for status, pattern in _VOCABULARY:  # the host's own, declared by its adapter
        if pattern.search(text):
            return status
    found = [m for m in (_FRAMING.search(text), _PHRASE.search(text)) if m is not None]
    if not found:
        return None
    return min(found, key=lambda m: m.start()).group(1).lower()


def status_contradiction(output: object, *happened: str) -> str | None:
    """Why the status an output states contradicts what happened (one of `happened`); None
    when it states one of them, or none at all: a host that tells the model no status is
    judged on the rule's substance (the server's message kept, the text blocks in order,
    the truncation marked) and on what it showed the person, never on a missing word."""
    stated = stated_status(output)
    if stated is None or stated in happened:
        return None
    return (
        f"the model received {output_text(output)[:200]!r}, stating status {stated}, "
        f"not {' or '.join(happened)}"
    )


def status_not_conveyed(output: object, *happened: str) -> str | None:
    """Why an output does not convey the status of what happened (one of `happened`): it
    states none (no framing, field, phrase or the host's declared words) or another; None
    when it states one of them. The rules that give a status (RES-1, RES-5 to RES-9) fail
    when the model cannot tell it; the others never fail for the status alone (the catalog's
    RES decision). An output that states none in its text conveys what its API's own field
    says (the catalog's "in a field"): the Messages API's `is_error` set is failed, not set
    is completed. It never conveys unknown or denied (the field has no such value), and it
    contradicts no statement in the text (`status_contradiction` reads the text only)."""
    if stated_status(output) is None:
        if api_outcome(output) in happened:  # the Messages API's is_error, set or not
            return None
        return (
            f"the model received {output_text(output)[:200]!r}, which states no status: "
            f"{' or '.join(happened)} is not conveyed (the substance may hold; the status does "
            "not)"
        )
    return status_contradiction(output, *happened)


def reply_calls(model: ModelService) -> list[list[dict[str, Any]]]:
    """For each model request (in order, as `model_requests`), the function calls the mock
    model answered it with: `{"call_id", "name", "arguments"}` each."""
    replies: list[list[dict[str, Any]]] = []
    for entry in model.journal.entries(kind="http"):
        if is_model_request(entry) and isinstance(entry.extra.get("body"), dict):
            replies.append(list(entry.extra.get("reply_calls") or []))
    return replies


def paired_outputs(body: object, call_id: str) -> list[object]:
    """Every `function_call_output` for `call_id` in a request's input (RES-11: exactly one)."""
    body = as_responses(body)
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
    body = as_responses(body)
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


def same_json(a: Any, b: Any) -> bool:
    """JSON equality with types: `false` is not `0`, `1` is not `"1"`; numbers by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def wait_until(condition: Callable[[], bool], within: float) -> bool:
    """Poll `condition` (a /proc reading: there is no event for another process's exit)
    every 10 ms until it holds or `within` seconds pass."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return False
        select.select([], [], [], 0.01)
    return True


def oauth_reason_problems(reason: str) -> list[str]:
    """What a credential-rejection reason lacks: it must say OAuth is not supported and
    suggest a static header such as an API key."""
    text = reason.lower()
    problems = []
    if "oauth" not in text:
        problems.append("does not mention OAuth")
    elif "support" not in text:
        problems.append("does not say OAuth is not supported")
    if not any(word in text for word in ("header", "api key", "api-key", "apikey", "token")):
        problems.append("suggests no static header such as an API key")
    return problems
