"""Monitors of the `pinning` profile: no tool is called before a person approves it, a tool
whose definition changed is not called until a person approves it again, and a tool whose
definition did not change is not put to the person again.

Strategy: judged where the change is certain and the host could not have missed it. A
server whose tools change after its first answered call (its spec's misbehaviour, the
explorer's `tools-change` values) journals the moment it switched; its definitions before
and after are its spec's, compared as the profile's catalog says (docs/profiles.md: the
definition as listed, canonical JSON, so members in another order are no change). Each
tools/list it received is read as answered with the first or the changed definitions (a
stdio server's switch lives in its process: the next process lists the first ones again).
A call of a changed tool is judged when the host's last listing before it held the changed
definition and a question began between the two (the host had it in hand, whatever its
threads were doing): the person's last approval of that tool must then have come after a
listing of the changed definition. A host that never lists again knows nothing of the
change and is not judged here; nor is a server a case switched itself. An approval is an
answer of yes to the tool, by its configured server's name and its own name, in any review
before the call (`Host.tool_answers`). The same listings tell which definition a later
review's pending tool had: the same canonical JSON as when it was approved is no change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from mcp_host_conformance.harness.cases.timeline import Moment
from mcp_host_conformance.harness.contract.adapter import PendingTool
from mcp_host_conformance.harness.monitors.observed import Observed, Served
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.mocks.spec import Tool

__all__: list[str] = []

# the members of a listed definition the pin covers (docs/profiles.md, PIN-1's decisions)
PINNED = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _what_changed(before: Tool, after: Tool) -> str:
    """The pinned members whose canonical JSON differs ("" when none does)."""
    was, now = before.definition(), after.definition()
    return ", ".join(k for k in PINNED if _canonical(was.get(k)) != _canonical(now.get(k)))


def _changed_tools(served: Served) -> dict[str, str]:
    """The tools whose pinned definition the server's switch changed: name -> what changed
    (a tool that disappears or appears is no change of a definition)."""
    bad = served.mock.spec.misbehaviour
    if not bad.change_tools_after_call:
        return {}
    after = {t.name: t for t in bad.changed_tools}
    changes = {
        t.name: _what_changed(t, after[t.name]) for t in served.mock.spec.tools if t.name in after
    }
    return {name: what for name, what in changes.items() if what}


# a tools/list received: when, and whether it was answered with the changed definitions
Listing = tuple[float, bool]


def _listings(served: Served) -> list[Listing]:
    """Each tools/list the server received: when, and whether it answered with the changed
    definitions. A stdio server's switch lives in its process: a new process (the host
    started again) lists the first definitions until its own first call."""
    found: list[Listing] = []
    changed = False
    for entry in served.entries:
        if entry.kind == "process":
            changed = False
        elif entry.kind == "event" and entry.extra.get("event") == "tools-changed":
            changed = True
        elif (
            entry.kind == "rpc"
            and entry.method == "tools/list"
            and entry.extra.get("message_kind") == "request"
        ):
            found.append((entry.time, changed))
    return found


def _last_before(listings: Sequence[Listing], moment: float) -> Listing | None:
    return next((listed for listed in reversed(listings) if listed[0] < moment), None)


def _named_as_served(answers: Sequence[tuple[float, PendingTool, bool]], served: Served) -> bool:
    """Whether every tool a review showed of this server is named as the server names it: a
    host may show a name with control characters neutralized (HARD-1), and an approval the
    monitor cannot tie to its tool is no ground for a finding."""
    names = {t.name for t in served.tools()}
    return all(p.tool in names for _at, p, _ok in answers if p.server in served.names)


def _approvals(
    answers: Sequence[tuple[float, PendingTool, bool]], served: Served, tool: str, before: float
) -> list[float]:
    """When a person approved this server's `tool` in a review, before `before`."""
    return [
        at
        for at, pending, ok in answers
        if ok and pending.tool == tool and pending.server in served.names and at < before
    ]


@monitor(
    "changed-tool-called",
    "PIN-1",
    "a tool whose definition changed during the session (a server's tools switching after a "
    "call) reaching its server in a question asked after the host listed the change, with no "
    "approval of that tool since",
    only=("pinning",),
)
def _changed_tool_called(m: Monitor, observed: Observed) -> Iterator[Finding]:
    asked = [moment.began for moment in observed.of("ask")]
    answers = observed.tool_answers
    for served in observed.served:
        changed = _changed_tools(served) if _named_as_served(answers, served) else {}
        listings = _listings(served) if changed else []
        for call in served.requests("tools/call") if listings else ():
            name = served.tool_of(call)
            known = _last_before(listings, call.time)
            if name not in changed or known is None or not known[1]:
                continue  # the host last listed the definitions the person approved at first
            if not any(known[0] < began < call.time for began in asked):
                continue  # the call may have been on its way before the listing was read
            approved = _approvals(answers, served, name, call.time)
            if not approved:
                continue  # never approved at all: PIN-2's monitor
            pinned = _last_before(listings, approved[-1])
            if pinned is None or pinned[1]:
                continue  # the last approval was of the changed definition
            yield m.finding(
                "PIN-1",
                f"{served.label}'s tool {name!r}, whose {changed[name]} changed after the "
                "person approved it, not callable until a person approves it again",
                f"tools/call {name!r} reached {served.label} in a later question, after the "
                "host listed the changed definition; the last approval of it was of the "
                "definition before",
            )
            break


@monitor(
    "unapproved-tool-called",
    "PIN-2",
    "a tool reaching its server before a person approved it in a tool review (every tool "
    "starts disabled, a tool that appears later too)",
    only=("pinning",),
)
def _unapproved_tool_called(m: Monitor, observed: Observed) -> Iterator[Finding]:
    answers = observed.tool_answers
    for served in observed.served:
        if not _named_as_served(answers, served):
            continue
        for call in served.requests("tools/call"):
            name = served.tool_of(call)
            if name is None or _approvals(answers, served, name, call.time):
                continue
            yield m.finding(
                "PIN-2",
                f"{served.label}'s tool {name!r} disabled until a person approves it",
                f"tools/call {name!r} reached {served.label} with no approval of it in any "
                "tool review before",
            )
            break


def _definition_listed(served: Served, tool: str, listed: Listing) -> str | None:
    """The canonical JSON of `tool`'s definition as `listed` answered it (None: not listed)."""
    bad = served.mock.spec.misbehaviour
    tools = bad.changed_tools if listed[1] else served.mock.spec.tools
    found = next((t for t in tools if t.name == tool), None)
    return None if found is None else _canonical(found.definition())


@monitor(
    "unchanged-tool-asked-again",
    "PIN-1",
    "a tool a person approved shown for approval again in a later review while the host "
    "listed the same definition (canonical JSON: members in another order are no change), "
    "with the server neither removed nor added between",
    only=("pinning",),
)
def _unchanged_tool_asked_again(m: Monitor, observed: Observed) -> Iterator[Finding]:
    # each host's own answers (a restarted host keeps its original's): another host of the
    # case may keep its approvals apart
    lists = {id(h.tool_answers): h.tool_answers for h in observed.hosts if h.tool_answers}
    configured = observed.of("add", "remove")
    for answers in lists.values():
        for served in observed.served:
            if _named_as_served(answers, served):
                yield from _asked_again(m, answers, served, configured)


def _asked_again(
    m: Monitor,
    answers: Sequence[tuple[float, PendingTool, bool]],
    served: Served,
    configured: Sequence[Moment],
) -> Iterator[Finding]:
    listings = _listings(served)
    for at, pending, _ok in answers:
        if pending.server not in served.names:
            continue
        approved = _approvals(answers, served, pending.tool, at)
        if not approved or any(
            approved[-1] < c.began < at and c.text in served.names for c in configured
        ):
            continue  # never approved, or its server removed or added again since
        then, now = _last_before(listings, approved[-1]), _last_before(listings, at)
        if then is None or now is None or then[0] == now[0]:
            continue  # asked again about what one listing showed: not judged here
        definition = _definition_listed(served, pending.tool, now)
        if definition is None or definition != _definition_listed(served, pending.tool, then):
            continue
        yield m.finding(
            "PIN-1",
            f"{served.label}'s tool {pending.tool!r}, approved and unchanged since, keeps "
            "working without a new approval",
            f"a later review showed it pending ({pending.change}) although the host listed "
            "the same definition (its members in the same or another order)",
        )
        return
