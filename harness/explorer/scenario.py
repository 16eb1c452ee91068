"""A scenario: the servers a host is configured with, how each behaves, and the steps the
person and the model take. Plain data: generated (`generate`), run (`world`), shrunk
(`shrink`), written to a file and read back to replay (`to_json`, `from_json`).

Every field holds a value of the dimension catalogue (`dimensions`), not a mock's settings:
the world turns values into mocks, so a scenario file stays readable and stays valid when
the mocks grow. A file is input from a person: `from_json` checks every field against the
catalogue and bounds every list, and says in one line what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

from mcp_host_conformance.harness.cases.timeline import approves
from mcp_host_conformance.harness.explorer.dimensions import dimension

__all__ = [
    "FORMAT",
    "CallPlan",
    "Scenario",
    "ScenarioError",
    "ServerPlan",
    "StepPlan",
    "ToolPlan",
    "from_json",
    "load",
    "to_json",
    "without_server",
]

FORMAT = "mcp-host-conformance-scenario/1"
MAX_SERVERS = 4
MAX_TOOLS = 8  # listed one by one; `filler` adds plain ones up to the limits
MAX_FILLER = 140
MAX_STEPS = 12
MAX_CALLS = 24  # a model that keeps calling asks for 24, one a reply
MAX_FILE = 1024 * 1024
STEP_KINDS = ("start", "ask", "stop", "restart-resume", "restart-fresh", "remove", "list")


class ScenarioError(ValueError):
    """A scenario file that cannot be read: one line saying where and why."""


@dataclass(frozen=True)
class ToolPlan:
    name: str
    name_kind: str = "plain"
    description: str = "short"
    schema: str = "default"
    annotations: str = "none"
    reply: str = "text"


@dataclass(frozen=True)
class ServerPlan:
    name: str
    name_kind: str = "plain"
    transport: str = "http"
    address: str = "127.0.0.1"  # plain HTTP: how its URL names the loopback host
    http_answers: str = "sse"
    credential: str = "none"
    secret_shape: str = "plain"
    arguments: str = "none"  # stdio: the arguments it is configured with
    ending: str = "at-end-of-input"  # stdio: how it ends when the host stops it
    calls_itself: str = "its-configured-name"
    tools: tuple[ToolPlan, ...] = (ToolPlan("query"),)
    filler: int = 0  # plain tools added after `tools` (t001, t002, ...)
    page_size: int | None = None  # tools/list page size; None: one page
    definitions: str = "as-planned"  # or the filler's descriptions grown to a total size
    timing: str = "at-once"
    failure: str = "none"
    tools_change: str = "never"

    @property
    def tool_count(self) -> int:
        return len(self.tools) + self.filler

    @property
    def pages(self) -> int:
        if not self.page_size:
            return 1
        return max(1, -(-self.tool_count // self.page_size))


@dataclass(frozen=True)
class CallPlan:
    """A call the model makes: of `tool` at `server`, or (both None) of a function the host
    never offered."""

    server: str | None
    tool: str | None
    arguments: str = "from-the-schema"


@dataclass(frozen=True)
class StepPlan:
    do: str
    turn: str = "one-call"  # ask: the model-turn value
    calls: tuple[CallPlan, ...] = ()
    answers: tuple[str, ...] = ()  # ask: the answer values, in order
    acknowledgement: str = "accept"
    server: str | None = None  # remove: which


@dataclass(frozen=True)
class Scenario:
    servers: tuple[ServerPlan, ...]
    steps: tuple[StepPlan, ...]
    umask: str = "022"
    locale: str = "inherited"
    configuration: str = "the-servers"  # or none configured, or all removed before the start
    connecting: str = "at-once"  # or each server answers initialize once all are contacted
    tool_review: str = "approve-every-time"  # a pinning host's review after each start
    first_sync: str = "while-healthy"  # a verified-add host's add: healthy, or as it is
    private_address: str = "none"  # a server configured at a URL reaching a private address

    def server(self, name: str | None) -> ServerPlan | None:
        return next((s for s in self.servers if s.name == name), None)

    def visits(self) -> Iterator[tuple[str, str]]:
        """The (dimension, value) pairs this scenario visits."""
        yield "servers", str(len(self.servers))
        tool_names: dict[str, int] = {}
        for server in self.servers:
            for tool in server.tools:
                tool_names[tool.name] = tool_names.get(tool.name, 0) + 1
        for server in self.servers:
            yield "transport", server.transport
            if server.transport == "http":
                yield "address", server.address
            if server.transport != "stdio":
                yield "http-answers", server.http_answers
            yield "credential", server.credential
            if server.transport == "stdio":
                yield "stdio-arguments", server.arguments
                yield "stdio-ending", server.ending
            if server.credential != "none":
                yield "secret-shape", server.secret_shape
            yield "server-name", server.name_kind
            yield "calls-itself", server.calls_itself
            count = server.tool_count
            yield "tool-count", {1: "1", 128: "128", 129: "129"}.get(count, "several")
            pages = server.pages
            yield "pages", {1: "one", 16: "16", 17: "17"}.get(pages, "several")
            yield "definitions", server.definitions
            yield "tools-change", server.tools_change
            yield "timing", server.timing
            yield "failure", server.failure
            for tool in server.tools:
                yield "description", tool.description
                yield "schema", tool.schema
                shared = tool_names.get(tool.name, 0) > 1
                yield "tool-name", "shared-by-two-servers" if shared else tool.name_kind
                yield "annotations", tool.annotations
                yield "reply", tool.reply
        for step in self.steps:
            if step.do == "ask":
                yield "model-turn", step.turn
                for call in step.calls:
                    yield "arguments", call.arguments
                for answer in step.answers:
                    yield "answer", answer
                if len(step.answers) > 1:
                    every = all(approves(a) for a in step.answers)
                    yield "answer-sequence", "yes-to-every-call" if every else "one-by-one"
                yield "acknowledgement", step.acknowledgement
            elif step.do == "restart-resume":
                yield "session", "restarted-and-resumed"
            elif step.do == "restart-fresh":
                yield "session", "restarted-fresh"
            elif step.do == "list":
                yield "session", "listed"
            elif step.do == "remove":
                yield "session", "server-removed-then-resumed"
        if not any(
            s.do in ("restart-resume", "restart-fresh", "list", "remove") for s in self.steps
        ):
            yield "session", "continues"
        yield "umask", self.umask
        yield "locale", self.locale
        yield "configuration", self.configuration
        yield "connecting", self.connecting
        yield "tool-review", self.tool_review
        yield "first-sync", self.first_sync
        yield "private-address", self.private_address

    def describe(self) -> list[str]:
        """The scenario as lines a person reads: the servers, then the steps."""
        lines = []
        for s in self.servers:
            tools = ", ".join(
                f"{t.name} ({t.reply}"
                + (f", {t.annotations}" if t.annotations != "none" else "")
                + (f", schema {t.schema}" if t.schema != "default" else "")
                + (f", description {t.description}" if t.description != "short" else "")
                + ")"
                for t in s.tools
            )
            extra = [
                f"{s.filler} more tools" if s.filler else "",
                f"pages of {s.page_size}" if s.page_size else "",
                f"definitions {s.definitions} in all" if s.definitions != "as-planned" else "",
                f"credential {s.credential} ({s.secret_shape})" if s.credential != "none" else "",
                "arguments a shell would change" if s.arguments != "none" else "",
                f"ends: {s.ending}"
                if s.transport == "stdio" and s.ending != "at-end-of-input"
                else "",
                f"calls itself {s.calls_itself}" if s.calls_itself != "its-configured-name" else "",
                f"answers {s.timing}" if s.timing != "at-once" else "",
                f"failure {s.failure}" if s.failure != "none" else "",
                f"tools change {s.tools_change}" if s.tools_change != "never" else "",
                s.http_answers if s.transport != "stdio" and s.http_answers != "sse" else "",
                f"at {s.address}" if s.transport == "http" and s.address != "127.0.0.1" else "",
            ]
            more = "; ".join(e for e in extra if e)
            lines.append(
                f"server {s.name} over {s.transport}: {tools}" + (f"; {more}" if more else "")
            )
        if self.configuration != "the-servers":
            lines.append(f"host configuration: {self.configuration.replace('-', ' ')}")
        if self.connecting != "at-once":
            lines.append("servers answer initialize only once every one is contacted")
        if self.first_sync != "while-healthy":
            lines.append("a host that connects at add meets each server as it is")
        if self.private_address != "none":
            lines.append(f"a server configured at a private address: {self.private_address}")
        if self.tool_review != "approve-every-time":
            lines.append("tool review: yes to every tool at the first start only, no after it")
        if self.umask != "022" or self.locale != "inherited":
            lines.append(f"host environment: umask {self.umask}, locale {self.locale}")
        for n, step in enumerate(self.steps, start=1):
            lines.append(f"{n}. {_step_text(step)}")
        return lines


def _step_text(step: StepPlan) -> str:
    if step.do == "ask":
        calls = ", ".join(
            (f"{c.server}/{c.tool}" if c.server else "a function never offered")
            + (f" ({c.arguments})" if c.arguments != "from-the-schema" else "")
            for c in step.calls
        )
        answers = ", ".join(repr(a) for a in step.answers) or "none"
        return (
            f"ask: the model {step.turn}"
            + (f" [{calls}]" if calls else "")
            + f"; answers {answers}"
            + ("; declines the acknowledgement first" if step.acknowledgement != "accept" else "")
        )
    if step.do == "remove":
        return f"remove server {step.server}"
    return step.do


# ---- the file -------------------------------------------------------------------------------


def to_json(scenario: Scenario, **about: Any) -> dict[str, Any]:
    """The scenario as a file's JSON, with `about` (what it shows, the seed, ...) beside it."""
    return {"format": FORMAT, **about, "scenario": _plain(asdict(scenario))}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def load(text: str | bytes) -> tuple[Scenario, dict[str, Any]]:
    """A scenario file's scenario and what else it says; ScenarioError if it is not one."""
    if len(text) > MAX_FILE:
        raise ScenarioError(f"a scenario file is at most {MAX_FILE} bytes, this one {len(text)}")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ScenarioError(f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ScenarioError(f"not a scenario file (its 'format' must be {FORMAT!r})")
    about = {k: v for k, v in data.items() if k not in ("format", "scenario")}
    return from_json(data.get("scenario")), about


def from_json(data: Any) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError("scenario: expected an object")
    servers = tuple(
        _server(s, f"servers[{i}]") for i, s in enumerate(_list(data, "servers", MAX_SERVERS))
    )
    if not servers:
        raise ScenarioError("scenario.servers: at least one server")
    names = [s.name for s in servers]
    if len(set(names)) != len(names):
        raise ScenarioError("scenario.servers: two servers of one name")
    steps = tuple(
        _step(s, f"steps[{i}]", set(names)) for i, s in enumerate(_list(data, "steps", MAX_STEPS))
    )
    return Scenario(
        servers=servers,
        steps=steps,
        umask=_value(data, "umask", "umask", "022"),
        locale=_value(data, "locale", "locale", "inherited"),
        configuration=_value(data, "configuration", "configuration", "the-servers"),
        connecting=_value(data, "connecting", "connecting", "at-once"),
        tool_review=_value(data, "tool_review", "tool-review", "approve-every-time"),
        first_sync=_value(data, "first_sync", "first-sync", "while-healthy"),
        private_address=_value(data, "private_address", "private-address", "none"),
    )


def _list(data: dict[str, Any], key: str, limit: int) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list) or len(value) > limit:
        raise ScenarioError(f"{key}: a list of at most {limit}")
    return value


def _value(data: dict[str, Any], key: str, dim: str, default: str, where: str = "") -> str:
    value = data.get(key, default)
    if value not in dimension(dim).values:
        raise ScenarioError(
            f"{where or 'scenario'}.{key}: {str(value)[:60]!r} is not one of "
            f"{', '.join(dimension(dim).values)}"
        )
    return str(value)


def _name(value: Any, where: str, limit: int = 80) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= limit or not value.isprintable():
        raise ScenarioError(f"{where}: a printable name of 1 to {limit} characters")
    return value


def _count(value: Any, where: str, limit: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
        raise ScenarioError(f"{where}: a whole number from 0 to {limit}")
    return value


def _tool(data: Any, where: str) -> ToolPlan:
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected an object")
    return ToolPlan(
        name=_name(data.get("name"), f"{where}.name"),
        name_kind=_value(data, "name_kind", "tool-name", "plain", where),
        description=_value(data, "description", "description", "short", where),
        schema=_value(data, "schema", "schema", "default", where),
        annotations=_value(data, "annotations", "annotations", "none", where),
        reply=_value(data, "reply", "reply", "text", where),
    )


def _server(data: Any, where: str) -> ServerPlan:
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected an object")
    tools = tuple(
        _tool(t, f"{where}.tools[{i}]") for i, t in enumerate(_list(data, "tools", MAX_TOOLS))
    )
    page = data.get("page_size")
    return ServerPlan(
        name=_name(data.get("name"), f"{where}.name", 64),
        name_kind=_value(data, "name_kind", "server-name", "plain", where),
        transport=_value(data, "transport", "transport", "http", where),
        address=_value(data, "address", "address", "127.0.0.1", where),
        http_answers=_value(data, "http_answers", "http-answers", "sse", where),
        credential=_value(data, "credential", "credential", "none", where),
        secret_shape=_value(data, "secret_shape", "secret-shape", "plain", where),
        arguments=_value(data, "arguments", "stdio-arguments", "none", where),
        ending=_value(data, "ending", "stdio-ending", "at-end-of-input", where),
        calls_itself=_value(data, "calls_itself", "calls-itself", "its-configured-name", where),
        tools=tools,
        filler=_count(data.get("filler", 0), f"{where}.filler", MAX_FILLER),
        page_size=None if page is None else max(1, _count(page, f"{where}.page_size", 200)),
        definitions=_value(data, "definitions", "definitions", "as-planned", where),
        timing=_value(data, "timing", "timing", "at-once", where),
        failure=_value(data, "failure", "failure", "none", where),
        tools_change=_value(data, "tools_change", "tools-change", "never", where),
    )


def _step(data: Any, where: str, servers: set[str]) -> StepPlan:
    if not isinstance(data, dict) or data.get("do") not in STEP_KINDS:
        raise ScenarioError(f"{where}: an object whose 'do' is one of {', '.join(STEP_KINDS)}")
    calls = []
    for i, c in enumerate(_list(data, "calls", MAX_CALLS)):
        at = f"{where}.calls[{i}]"
        if not isinstance(c, dict):
            raise ScenarioError(f"{at}: expected an object")
        server, tool = c.get("server"), c.get("tool")
        if (server is None) != (tool is None):
            raise ScenarioError(f"{at}: give both server and tool, or neither")
        if server is not None and server not in servers:
            raise ScenarioError(f"{at}.server: {str(server)[:60]!r} is not a server of it")
        calls.append(
            CallPlan(
                server=None if server is None else str(server),
                tool=None if tool is None else _name(tool, f"{at}.tool"),
                arguments=_value(c, "arguments", "arguments", "from-the-schema", at),
            )
        )
    answers = _list(data, "answers", MAX_CALLS)
    for i, answer in enumerate(answers):
        if answer not in dimension("answer").values:
            raise ScenarioError(f"{where}.answers[{i}]: not one of the catalogue's answers")
    server = data.get("server")
    if data["do"] == "remove" and server not in servers:
        raise ScenarioError(f"{where}.server: the server to remove")
    return StepPlan(
        do=str(data["do"]),
        turn=_value(data, "turn", "model-turn", "one-call", where),
        calls=tuple(calls),
        answers=tuple(str(a) for a in answers),
        acknowledgement=_value(data, "acknowledgement", "acknowledgement", "accept", where),
        server=str(server) if server is not None else None,
    )


def without_server(scenario: Scenario, name: str) -> Scenario:
    """The scenario with server `name` gone, and every step that names it."""
    servers = tuple(s for s in scenario.servers if s.name != name)
    steps = []
    for step in scenario.steps:
        if step.do == "remove" and step.server == name:
            continue
        calls = tuple(c for c in step.calls if c.server != name)
        steps.append(replace(step, calls=calls) if calls != step.calls else step)
    return replace(scenario, servers=servers, steps=tuple(steps))
