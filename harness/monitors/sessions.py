"""Monitors of a reopened session: its next model request carries the earlier calls and
their paired outputs (SESS-3), also the calls of tools that no longer exist (SESS-4).

Strategy: a start with `resume` names the session an earlier start's stop returned; the
calls that session's own questions made, and whose outputs its requests carried, are what
the first request after reopening must carry again, with the same call_id and the same
output. A session that itself reopened another is judged on its own calls only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from mcp_host_conformance.harness.cases.observe import function_call_outputs, function_calls
from mcp_host_conformance.harness.monitors.observed import Called, Observed
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding


def _decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _gone(observed: Observed, call: Called, since: float) -> bool:
    """Whether the call's tool was no longer served, or its server no longer configured,
    when the session reopened."""
    served = call.served
    if served is None:
        return True
    removed = [m for m in observed.of("remove") if m.text in served.names and m.began < since]
    bad = served.mock.spec.misbehaviour
    changed = bad.change_tools_after_call and all(t.name != call.tool for t in bad.changed_tools)
    switched = any(
        e.kind == "event" and e.extra.get("event") == "tools-changed" and e.time < since
        for e in served.entries
    )
    return bool(removed) or changed or switched


@monitor(
    "reopened-carries-history",
    "SESS-3 SESS-4",
    "the first model request after a session reopened carries each call the session made "
    "and its paired output, with the same call_id and output (SESS-4 when its tool is gone)",
)
def reopened_carries_history(self: Monitor, observed: Observed) -> Iterator[Finding]:
    runs = observed.runs
    asks = observed.of("ask")
    for run in runs:
        resume = getattr(run.options, "resume", None)
        if not resume:
            continue
        earlier = next(
            (
                r
                for r in runs
                if r is not run and r.stopped is not None and r.stopped.session_id == resume
            ),
            None,
        )
        if earlier is None:
            continue
        before = [a for a in asks if a.run == earlier.number]
        after = [a for a in asks if a.run == run.number]
        if not before or not after:
            continue
        first = next(
            (r for r in observed.requests if after[0].began <= r.time <= after[0].ended), None
        )
        if first is None:
            continue
        # what the earlier session made and told the model (the output as it was sent)
        during = [r for r in observed.requests if any(a.began <= r.time <= a.ended for a in before)]
        own = [c for r in during for c in r.calls]  # not what it replayed of an older one
        made: dict[str, tuple[Called, Any]] = {}
        for request in during:
            outputs = function_call_outputs(request.body)
            for called in own:
                if called.call_id in outputs and called.call_id not in made:
                    made[called.call_id] = (called, outputs[called.call_id])
        if not made:
            continue
        replayed = {str(c.get("call_id")) for c in function_calls(first.body)}
        outputs = function_call_outputs(first.body)
        for call_id, (called, output) in made.items():
            if call_id in replayed and outputs.get(call_id) == output:
                continue
            if not isinstance(_decoded(called.arguments), dict):
                continue  # the one check a host may make of a recorded call: its arguments' shape
            gone = _gone(observed, called, after[0].began)
            lacks = "the call" if call_id not in replayed else "its output as it was sent"
            yield self.finding(
                "SESS-4" if gone else "SESS-3",
                "after reopening, the next model request carries the earlier call "
                f"{called.name} and its paired output"
                + (
                    " (its tool is gone: a recorded call is kept whatever it names)" if gone else ""
                ),
                f"the first request after reopening lacks {lacks}",
            )
            return
