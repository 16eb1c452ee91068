"""The shortest scenario that still shows a violation.

Strategy: greedy reduction over the scenario's own structure, biggest cuts first (drop the
steps after the one that showed it, a whole server, a step, a tool, a call), then each
field back to its plainest value (no failure, answers at once, no credential, the
default schema, "y"). A candidate is kept when a fresh run shows the same rule broken by
the same monitor; a pass starts over after each kept cut and the whole ends when a pass
keeps nothing or the budget of runs or seconds is spent. A violation the host shows only
now and then does not shrink far: the result is still one that showed it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from mcp_host_conformance.harness.explorer.scenario import (
    Scenario,
    ServerPlan,
    StepPlan,
    ToolPlan,
    without_server,
)

__all__ = ["candidates", "consistent", "shrink"]

PLAIN_SERVER: dict[str, Any] = {
    "failure": "none",
    "timing": "at-once",
    "tools_change": "never",
    "credential": "none",
    "arguments": "none",
    "ending": "at-end-of-input",
    "calls_itself": "its-configured-name",
    "http_answers": "sse",
    "transport": "http",
    "address": "127.0.0.1",
    "filler": 0,
    "page_size": None,
    "definitions": "as-planned",
}
PLAIN_TOOL: dict[str, Any] = {
    "description": "short",
    "schema": "default",
    "annotations": "none",
    "reply": "text",
}


def consistent(scenario: Scenario) -> Scenario:
    """`scenario` with every call of a tool it no longer lists, and every removal of a
    server it no longer has, taken out."""
    tools = {(s.name, t.name) for s in scenario.servers for t in s.tools}
    names = {s.name for s in scenario.servers}
    steps = []
    for step in scenario.steps:
        if step.do == "remove" and step.server not in names:
            continue
        calls = tuple(c for c in step.calls if c.server is None or (c.server, c.tool) in tools)
        if calls != step.calls:
            step = replace(step, calls=calls, answers=step.answers[: len(calls)])
        steps.append(step)
    return replace(scenario, steps=tuple(steps))


def _with_server(scenario: Scenario, index: int, server: ServerPlan) -> Scenario:
    servers = list(scenario.servers)
    servers[index] = server
    return consistent(replace(scenario, servers=tuple(servers)))


def _with_step(scenario: Scenario, index: int, step: StepPlan | None) -> Scenario:
    steps = list(scenario.steps)
    if step is None:
        del steps[index]
    else:
        steps[index] = step
    return replace(scenario, steps=tuple(steps))


PLAIN_SERVER_NAMES = ("docs", "notes", "files", "tickets")
PLAIN_TOOL_NAMES = ("query", "lookup", "read", "fetch", "write", "list", "find", "get")


def _renamed_server(scenario: Scenario, old: str, new: str) -> Scenario:
    servers = tuple(
        replace(s, name=new, name_kind="plain") if s.name == old else s for s in scenario.servers
    )
    steps = tuple(
        replace(
            step,
            server=new if step.server == old else step.server,
            calls=tuple(replace(c, server=new) if c.server == old else c for c in step.calls),
        )
        for step in scenario.steps
    )
    return replace(scenario, servers=servers, steps=steps)


def _renamed_tool(scenario: Scenario, server: str, old: str, new: str) -> Scenario:
    servers = tuple(
        replace(
            s,
            tools=tuple(
                replace(t, name=new, name_kind="plain") if t.name == old else t for t in s.tools
            ),
        )
        if s.name == server
        else s
        for s in scenario.servers
    )
    steps = tuple(
        replace(
            step,
            calls=tuple(
                replace(c, tool=new) if (c.server, c.tool) == (server, old) else c
                for c in step.calls
            ),
        )
        for step in scenario.steps
    )
    return replace(scenario, servers=servers, steps=steps)


def _plain_names(scenario: Scenario) -> Iterator[Scenario]:
    taken = {s.name for s in scenario.servers}
    for server in scenario.servers:
        if server.name_kind != "plain":
            free = next((n for n in PLAIN_SERVER_NAMES if n not in taken), None)
            if free is not None:
                yield _renamed_server(scenario, server.name, free)
        names = {t.name for t in server.tools}
        for tool in server.tools:
            if tool.name_kind != "plain":
                free = next((n for n in PLAIN_TOOL_NAMES if n not in names), None)
                if free is not None:
                    yield _renamed_tool(scenario, server.name, tool.name, free)


def candidates(scenario: Scenario) -> Iterator[Scenario]:
    """Smaller or plainer scenarios, biggest cuts first."""
    if len(scenario.servers) > 1:
        for server in scenario.servers:
            yield consistent(without_server(scenario, server.name))
    for index in range(len(scenario.steps)):
        yield _with_step(scenario, index, None)
    for index, server in enumerate(scenario.servers):
        for cut in range(len(server.tools) - 1, 0, -1):
            tools = server.tools[:cut] + server.tools[cut + 1 :]
            yield _with_server(scenario, index, replace(server, tools=tools))
        if server.filler:
            yield _with_server(scenario, index, replace(server, filler=0, page_size=None))
    for index, step in enumerate(scenario.steps):
        for cut in range(len(step.calls)):
            calls = step.calls[:cut] + step.calls[cut + 1 :]
            answers = step.answers[:cut] + step.answers[cut + 1 :]
            yield _with_step(scenario, index, replace(step, calls=calls, answers=answers))
    for index, server in enumerate(scenario.servers):
        for name, plain in PLAIN_SERVER.items():
            if getattr(server, name) != plain:
                yield _with_server(scenario, index, replace(server, **{name: plain}))
        for at, tool in enumerate(server.tools):
            for name, plain in PLAIN_TOOL.items():
                if getattr(tool, name) != plain:
                    simpler: ToolPlan = replace(tool, **{name: plain})
                    tools = server.tools[:at] + (simpler,) + server.tools[at + 1 :]
                    yield _with_server(scenario, index, replace(server, tools=tools))
    for index, step in enumerate(scenario.steps):
        if any(a != "y" for a in step.answers):
            yield _with_step(scenario, index, replace(step, answers=("y",) * len(step.answers)))
        if step.acknowledgement != "accept":
            yield _with_step(scenario, index, replace(step, acknowledgement="accept"))
        for cut, call in enumerate(step.calls):
            if call.arguments != "from-the-schema":
                plain_call = replace(call, arguments="from-the-schema")
                calls = step.calls[:cut] + (plain_call,) + step.calls[cut + 1 :]
                yield _with_step(scenario, index, replace(step, calls=calls))
    yield from _plain_names(scenario)
    if scenario.umask != "022":
        yield replace(scenario, umask="022")
    if scenario.locale != "inherited":
        yield replace(scenario, locale="inherited")
    if scenario.configuration != "the-servers":
        yield replace(scenario, configuration="the-servers")
    if scenario.connecting != "at-once":
        yield replace(scenario, connecting="at-once")
    if scenario.tool_review != "approve-every-time":
        yield replace(scenario, tool_review="approve-every-time")
    if scenario.first_sync != "while-healthy":
        yield replace(scenario, first_sync="while-healthy")
    if scenario.private_address != "none":
        yield replace(scenario, private_address="none")


def shrink(
    scenario: Scenario,
    shows: Callable[[Scenario], bool],
    runs: int,
    seconds: float | None = None,
) -> tuple[Scenario, int]:
    """The smallest scenario found within `runs` runs (and `seconds`) for which `shows` is
    still true, starting from `scenario` (which showed it); with the runs spent."""
    deadline = None if seconds is None else time.monotonic() + seconds
    spent = 0
    best = scenario
    progress = True
    while progress:
        progress = False
        for candidate in candidates(best):
            if spent >= runs or (deadline is not None and time.monotonic() >= deadline):
                return best, spent
            if candidate == best or not candidate.servers:
                continue
            spent += 1
            if shows(candidate):
                best = candidate
                progress = True
                break
    return best, spent
