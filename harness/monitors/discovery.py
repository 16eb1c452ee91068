"""Monitors of when a host talks to its servers: connects and lists at start, once, never
at an add (CFG-1), never again for a removed server (CFG-5), never lists again once the
session asks the model (DISC-5).

Strategy: each request a server received is placed among the harness's steps by its time:
during a start, a question, a stop, an add, or between them. A step another session of the
same case was taking at the time (a second start beside a first) makes a request ambiguous,
and an ambiguous request is never judged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from mcp_host_conformance.harness.cases.timeline import Moment
from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.mocks.spec import Misbehaviour

MAX_PAGES = 16


def _during(moments: list[Moment], time: float) -> list[Moment]:
    return [m for m in moments if m.began <= time <= m.ended]


@monitor(
    "connected-once-at-start",
    "DISC-1",
    "each start initializes each server at most once; a server is connected at start, not "
    "first during a question; a healthy server is never initialized again during a question",
)
def connected_once_at_start(self: Monitor, observed: Observed) -> Iterator[Finding]:
    starts = observed.of("start")
    asks = observed.of("ask")
    for served in observed.served:
        if not served.names:
            continue
        initializes = served.requests("initialize")
        for start in starts:
            inside = [e for e in initializes if start.began <= e.time <= start.ended]
            if len(inside) > 1 and len(_during(starts, inside[0].time)) == 1:
                yield self.finding(
                    "DISC-1",
                    f"{served.label} connected once per start",
                    f"{len(inside)} initialize requests during one start",
                )
                return
        during = [e for e in initializes if _during(asks, e.time) and not _during(starts, e.time)]
        if not during:
            continue
        question = _during(asks, during[0].time)[0]
        first_of_session = next(
            (
                e
                for e in initializes
                if e.time >= next((s.began for s in starts if s.run == question.run), 0.0)
            ),
            None,
        )
        # A server that gave the host no reason to connect again (it misbehaves in no way,
        # so never dropped or refused a session) is connected once, at start.
        healthy = served.mock.spec.misbehaviour == Misbehaviour()
        if first_of_session is during[0] or healthy:
            yield self.finding(
                "DISC-1",
                f"{served.label} connected and listed at start, once",
                f"it received initialize during the question {question.text!r}"
                + ("" if first_of_session is during[0] else " (again: it was connected at start)"),
            )


@monitor(
    "no-listing-while-asking",
    "DISC-5",
    "no server received tools/list while a question was being answered (the list is fixed "
    "once discovery finishes; not repeated per turn)",
)
def no_listing_while_asking(self: Monitor, observed: Observed) -> Iterator[Finding]:
    busy = observed.of("start", "review", "add", "stop")
    for served in observed.served:
        for entry in served.requests("tools/list"):
            asks = _during(observed.of("ask"), entry.time)
            if asks and not _during(busy, entry.time):
                yield self.finding(
                    "DISC-5",
                    "tools/list is not repeated once discovery finished",
                    f"{served.label} received tools/list during the question {asks[0].text!r}",
                )
                break


@monitor(
    "adding-does-not-connect",
    "CFG-1",
    "no server received anything before the first start of a host that had it configured",
    unless=("verified-add",),
)
def adding_does_not_connect(self: Monitor, observed: Observed) -> Iterator[Finding]:
    starts = observed.of("start")
    first_start = min((m.began for m in starts), default=None)
    for served in observed.served:
        if not served.names or not served.reached:
            continue
        early = [e for e in served.reached if first_start is None or e.time < first_start]
        adds = [m for m in observed.of("add") if m.text in served.names]
        if early and adds and early[0].time >= adds[0].began:
            yield self.finding(
                "CFG-1",
                f"adding {served.label} does not connect to it",
                f"it received {early[0].method or early[0].http_method} "
                f"{'before any start' if first_start is None else 'before the first start'}",
            )


@monitor(
    "removed-stays-away",
    "CFG-5",
    "a server removed from the configuration received nothing at any later start (unless "
    "it was added again)",
)
def removed_stays_away(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for removal in observed.of("remove"):
        served = observed.served_as(removal.text)
        if served is None or len(served.names) != 1:
            continue
        again = [
            m for m in observed.of("add") if m.text == removal.text and m.began > removal.ended
        ]
        until = again[0].began if again else float("inf")
        later_starts = [m for m in observed.of("start") if removal.ended < m.began < until]
        for start in later_starts:
            reached = [e for e in served.reached if start.began <= e.time <= start.ended]
            if reached:
                yield self.finding(
                    "CFG-5",
                    f"{served.label}, removed, is not connected at the next start",
                    f"it received {reached[0].method or reached[0].http_method} during a start "
                    "after its removal",
                )
                return


@monitor(
    "sixteen-pages",
    "DISC-6",
    "during one start, no server received more than 16 tools/list requests (at most 16 "
    "pages; a server that needs a 17th is unavailable)",
)
def sixteen_pages(self: Monitor, observed: Observed) -> Iterator[Finding]:
    starts = observed.of("start")
    for served in observed.served:
        lists = served.requests("tools/list")
        for start in starts:
            inside = [e for e in lists if start.began <= e.time <= start.ended]
            # pages, not requests: a page asked for twice (a retry) is one page
            pages = {json.dumps(e.params, sort_keys=True, default=str) for e in inside}
            # two starts at once (two sessions of one case) cannot tell whose pages are whose
            if len(pages) > MAX_PAGES and len(_during(starts, inside[0].time)) == 1:
                yield self.finding(
                    "DISC-6",
                    f"at most {MAX_PAGES} pages of {served.label}'s tools are listed",
                    f"{len(pages)} different pages asked for during one start",
                )
                return
