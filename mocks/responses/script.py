"""What the mock model answers, one step per model request.

Strategy: a script is a list of `Step`s, plain data that round-trips through JSON (so a
person can write one in a file or POST it). Turning a step into output is a pure function
of the step, the request body and the bindings (`plan_reply`). A call names its tool as
server + tool: when the server name is bound to a mock's marker token, the function is the
offered one that carries that tool's marker anywhere in it (every mock serves a marker in
each tool's description and schema, `mocks.spec.with_markers`), whether it is a top-level
function or one inside a Responses `namespace` tool, whatever the host named or labelled
it; the reply calls it in the form it was offered (with its `namespace`). A server that is
not bound falls back to the label `[MCP server S, tool T]` at the start of a description;
a call may also name a function exactly. The body may be a request of any of the three
APIs the mock speaks: it is read through `bodies` (the Responses shape, which every reader
and this planner use), so a plan is the same whichever API a host chose, and the wire
modules render it in that API's form. The body readers are re-exported here for existing
imports. Nothing here does I/O; the service
(`mcp_host_conformance.mocks.responses.service`) keeps the state (which step is next, what
the autopilot has already called).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mcp_host_conformance.mocks.responses.bodies import (
    MCP_LABEL_PREFIX,
    carries,
    function_call_outputs,
    function_calls,
    input_items,
    label,
    offered_functions,
    offered_mcp_tools,
    offered_tools,
)
from mcp_host_conformance.mocks.spec import MARKER_PREFIX, tool_marker

__all__ = [
    "MCP_LABEL_PREFIX",
    "Bindings",
    "Call",
    "Plan",
    "Step",
    "arguments_for_schema",
    "carries",
    "encode_arguments",
    "fallback_tool",
    "find_tool",
    "function_call_outputs",
    "function_calls",
    "input_items",
    "is_mcp_function",
    "label",
    "not_offered",
    "offered_functions",
    "offered_mcp_tools",
    "offered_tools",
    "plan_autopilot",
    "plan_reply",
    "reads_as_error",
    "script_from_json",
    "value_for_schema",
]

# ---- steps -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One function call the model makes: by label (server + tool) or by exact name."""

    server: str | None = None
    tool: str | None = None
    name: str | None = None
    arguments: Any = None  # dict (JSON-encoded), str (sent verbatim), None (built from schema)
    # made by `name` even when no function of that name was offered: a model calling a
    # function it invented (real models do), which the host must answer as an error
    invented: bool = False
    # when the host offered no function for it, another MCP tool the host did offer is
    # called instead (`fallback_tool`), as a model calls only what it was given: a generated
    # session goes on through a server the host refused or a tool it withheld
    fallback: bool = False

    def wanted(self) -> str:
        return self.name if self.name is not None else label(str(self.server), str(self.tool))

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and v is not False}


@dataclass(frozen=True)
class Step:
    """One model reply. Build with `Step.call`, `Step.calls`, `Step.text`, `Step.error`."""

    kind: str  # "calls" | "text" | "error"
    tool_calls: tuple[Call, ...] = ()
    text_value: str = ""
    status: int = 0
    message: str = ""
    repeat: bool = False  # answer every later request with this step too
    # A call whose output reads as an error (`reads_as_error`) is made again, once, with the
    # same arguments, in the model's next reply (before the script's next step): the retry
    # a model makes when a tool failed and it was told to try again (an invited retry).
    retry_on_error: bool = False

    @classmethod
    def call(
        cls,
        server: str | None = None,
        tool: str | None = None,
        name: str | None = None,
        arguments: Any = None,
        repeat: bool = False,
        retry_on_error: bool = False,
        fallback: bool = False,
    ) -> Step:
        made = _make_call(server, tool, name, arguments)
        return cls(
            kind="calls",
            tool_calls=(replace(made, fallback=fallback),),
            repeat=repeat,
            retry_on_error=retry_on_error,
        )

    @classmethod
    def calls(cls, calls: list[Any], repeat: bool = False, retry_on_error: bool = False) -> Step:
        """Several calls in one reply; each item a `Step.call(...)`, a `Call` or a dict."""
        out: list[Call] = []
        for c in calls:
            if isinstance(c, Step):
                out.extend(c.tool_calls)
            elif isinstance(c, Call):
                out.append(c)
            elif isinstance(c, dict):
                made = _make_call(c.get("server"), c.get("tool"), c.get("name"), c.get("arguments"))
                out.append(
                    replace(
                        made,
                        invented=c.get("invented") is True and made.name is not None,
                        fallback=c.get("fallback") is True,
                    )
                )
            else:
                raise ValueError(f"Step.calls: cannot make a call of {type(c).__name__}")
        if not out:
            raise ValueError("Step.calls: needs at least one call")
        return cls(
            kind="calls", tool_calls=tuple(out), repeat=repeat, retry_on_error=retry_on_error
        )

    @classmethod
    def invented(cls, name: str, arguments: Any = None) -> Step:
        """A call of function `name` whether or not the host offered one of that name."""
        return cls(kind="calls", tool_calls=(Call(name=name, arguments=arguments, invented=True),))

    @classmethod
    def text(cls, text: str, repeat: bool = False) -> Step:
        return cls(kind="text", text_value=text, repeat=repeat)

    @classmethod
    def error(cls, status: int, message: str, repeat: bool = False) -> Step:
        if not 400 <= int(status) <= 599:
            raise ValueError(f"Step.error: status must be 4xx or 5xx, not {status}")
        return cls(kind="error", status=int(status), message=message, repeat=repeat)

    # JSON form ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any]
        if self.kind == "calls":
            d = {"type": "calls", "calls": [c.to_json() for c in self.tool_calls]}
        elif self.kind == "text":
            d = {"type": "text", "text": self.text_value}
        else:
            d = {"type": "error", "status": self.status, "message": self.message}
        if self.repeat:
            d["repeat"] = True
        if self.retry_on_error:
            d["retry_on_error"] = True
        return d

    @classmethod
    def from_json(cls, data: Any, where: str = "step") -> Step:
        """Read one step: {"type": "call", server/tool/name/arguments} | {"type": "calls",
        "calls": [...]} | {"type": "text", "text"} | {"type": "error", "status", "message"};
        each may carry "repeat": true, a call "retry_on_error": true. Raises ValueError naming
        the problem."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        kind = data.get("type")
        repeat = bool(data.get("repeat", False))
        again = bool(data.get("retry_on_error", False))
        try:
            if kind == "call" and data.get("invented") is True:
                if not isinstance(data.get("name"), str):
                    raise ValueError("an invented call needs its 'name'")
                return cls.invented(data["name"], data.get("arguments"))
            if kind == "call":
                return cls.call(
                    data.get("server"),
                    data.get("tool"),
                    data.get("name"),
                    data.get("arguments"),
                    repeat,
                    again,
                    data.get("fallback") is True,
                )
            if kind == "calls":
                if not isinstance(data.get("calls"), list):
                    raise ValueError("'calls' must be a list")
                return cls.calls(data["calls"], repeat, again)
            if kind == "text":
                if not isinstance(data.get("text"), str):
                    raise ValueError("'text' must be a string")
                return cls.text(data["text"], repeat)
            if kind == "error":
                return cls.error(
                    int(data.get("status", 500)), str(data.get("message", "mock error")), repeat
                )
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        raise ValueError(f"{where}: 'type' must be call, calls, text or error, not {kind!r}")


def _make_call(server: Any, tool: Any, name: Any, arguments: Any) -> Call:
    if name is not None:
        if not isinstance(name, str):
            raise ValueError("Step.call: name must be a string")
        return Call(name=name, arguments=arguments)
    if not isinstance(server, str) or not isinstance(tool, str):
        raise ValueError("Step.call: give name=, or both server= and tool=")
    return Call(server=server, tool=tool, arguments=arguments)


def script_from_json(data: Any) -> list[Step]:
    if not isinstance(data, list):
        raise ValueError(f"script: expected a list of steps, got {type(data).__name__}")
    return [Step.from_json(s, f"script[{i}]") for i, s in enumerate(data)]


# ---- planning a reply --------------------------------------------------------------------


@dataclass
class Plan:
    """What to answer: output items to build (function calls, text) or an HTTP error.

    `calls` holds (function name, arguments string, namespace or None); `problems` says why
    a scripted call could not be made (no offered function matched), for the journal.
    """

    calls: list[tuple[str, str, str | None]] = field(default_factory=list)
    text: str | None = None
    error_status: int | None = None
    error_message: str = ""
    problems: list[str] = field(default_factory=list)
    retry_on_error: bool = False  # the step's: its calls are made again after an error


Bindings = Mapping[str, str]  # configured server name -> its mock's marker token


def find_tool(
    call: Call, body: Any, bindings: Bindings | None = None
) -> tuple[dict[str, Any], str | None] | None:
    """The offered function `call` means, with its namespace; None if none was offered."""
    functions = offered_functions(body)
    if call.name is not None:
        return next(((t, ns) for t, ns in functions if t.get("name") == call.name), None)
    token = (bindings or {}).get(str(call.server))
    if token is not None:
        marker = tool_marker(token, str(call.tool))
        return next(((t, ns) for t, ns in functions if carries(t, marker)), None)
    wanted = label(str(call.server), str(call.tool))
    return next(
        (
            (t, ns)
            for t, ns in functions
            if isinstance(t.get("description"), str) and t["description"].startswith(wanted)
        ),
        None,
    )


def encode_arguments(arguments: Any, tool: dict[str, Any]) -> str:
    if isinstance(arguments, str):
        return arguments  # verbatim: lets a script send malformed arguments on purpose
    if arguments is None:
        arguments = arguments_for_schema(tool.get("parameters"))
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)


def not_offered(call: Call, body: Any) -> str:
    """Why a call could not be made, as a case states it: the host offered no function."""
    names = [
        f"{ns}/{t.get('name')}" if ns else str(t.get("name")) for t, ns in offered_functions(body)
    ]
    wanted = call.name if call.name is not None else f"{call.server}/{call.tool}"
    return f"the host offered no function for {wanted} (offered: {', '.join(names) or 'none'})"


def fallback_tool(call: Call, body: Any) -> tuple[dict[str, Any], str | None] | None:
    """The offered MCP function a `fallback` call makes instead of the one it names (not
    offered): one chosen by the name it wanted, the same for the same offer; None when the
    host offered no MCP function at all."""
    functions = [(t, ns) for t, ns in offered_functions(body) if is_mcp_function(t)]
    if not functions:
        return None
    return functions[zlib.crc32(call.wanted().encode()) % len(functions)]


def plan_reply(step: Step, body: Any, bindings: Bindings | None = None) -> Plan:
    if step.kind == "text":
        return Plan(text=step.text_value)
    if step.kind == "error":
        return Plan(error_status=step.status, error_message=step.message)
    plan = Plan(retry_on_error=step.retry_on_error)
    for call in step.tool_calls:
        found = find_tool(call, body, bindings)
        if found is None and call.fallback:
            found = fallback_tool(call, body)
        if found is None and call.invented and call.name is not None:
            plan.calls.append((call.name, encode_arguments(call.arguments, {}), None))
            continue
        if found is None:
            plan.problems.append(not_offered(call, body))
            continue
        tool, namespace = found
        plan.calls.append(
            (str(tool.get("name")), encode_arguments(call.arguments, tool), namespace)
        )
    if not plan.calls:
        plan.text = "mock model: " + "; ".join(plan.problems)
    return plan


_ERROR = re.compile(r"\b(error|errors|failed|failure|fail)\b", re.IGNORECASE)


def reads_as_error(output: str | None) -> bool:
    """Whether a tool's output, as the model received it, reads as a failure: the words a
    model acts on (error, failed, failure), however the host states it."""
    return output is not None and _ERROR.search(output) is not None


def is_mcp_function(tool: dict[str, Any]) -> bool:
    """An offered function for an MCP tool: it carries a mock's marker, or an MCP label."""
    description = tool.get("description")
    labelled = isinstance(description, str) and description.startswith(MCP_LABEL_PREFIX)
    return labelled or carries(tool, MARKER_PREFIX)


def plan_autopilot(body: Any, already_called: set[str]) -> Plan:
    """Call the first offered MCP tool not called yet (by this service or in `input`), else
    answer text. One call per request keeps every call individually approvable."""
    done = already_called | {str(c.get("name")) for c in function_calls(body)}
    tools = [(t, ns) for t, ns in offered_functions(body) if is_mcp_function(t)]
    for tool, namespace in tools:
        name = str(tool.get("name"))
        if name not in done:
            return Plan(calls=[(name, encode_arguments(None, tool), namespace)])
    return Plan(text=f"autopilot: called {len(tools)} MCP tool(s); nothing left to call.")


# ---- arguments from a schema -----------------------------------------------------------

_SIMPLE = {"string": "test", "integer": 1, "number": 1, "boolean": True, "null": None}


def arguments_for_schema(schema: Any) -> dict[str, Any]:
    """An object satisfying the schema's required properties with simple values."""
    value = value_for_schema(schema, depth=0)
    return value if isinstance(value, dict) else {}


def value_for_schema(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 8:
        return {}
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None and "properties" in schema:
        kind = "object"
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        return []
    if kind == "object":
        found_props = schema.get("properties")
        found_required = schema.get("required")
        props: dict[str, Any] = found_props if isinstance(found_props, dict) else {}
        required: list[Any] = found_required if isinstance(found_required, list) else []
        return {
            r: value_for_schema(props.get(r), depth + 1) for r in required if isinstance(r, str)
        }
    return "test"
