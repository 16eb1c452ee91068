"""Monitors of what the model is offered: names (EXP-1, EXP-2), parameters (EXP-3),
descriptions (EXP-4), servers over a discovery limit kept out (DISC-6 to DISC-10, NET-4),
and the set of MCP tools fixed for a session (DISC-5).

Strategy: every offered function that carries a mock's marker is tied to its server and tool
(`Observed.target`), so each rule is judged for every MCP tool of every model request of
every case, with the configured name the host was given for that server. What the rule
leaves to the host (which hash suffix, where the note goes) is never judged; a server known
under two names in one case is skipped, since its label could rightly be either.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

from mcp_host_conformance.harness.cases.exposed_names import guessed, is_valid
from mcp_host_conformance.harness.cases.observe import same_json
from mcp_host_conformance.harness.monitors.observed import ModelRequest, Observed, Served
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.mocks.responses.script import offered_functions
from mcp_host_conformance.mocks.spec import MARKER_PREFIX, MISSING, Tool

KIB = 1024
MIB = 1024 * KIB
# The decisions of DISC-8 and DISC-9: sizes are the UTF-8 length of the compact JSON, and
# the MUST cases stand a kibibyte off the bound (the exact bound is an INFO case): a monitor
# judges no closer either.
SCHEMA_LIMIT = 16 * KIB
DEFINITIONS_LIMIT = 64 * KIB
MARGIN = KIB
MAX_PAGES = 16
MAX_TOOLS = 128
MESSAGE_LIMIT = MIB
MEGABYTE = 1_000_000  # what a host that reads "MB" for "MiB" takes for NET-4's limit


def _mcp_offers(
    observed: Observed, request: ModelRequest
) -> list[tuple[dict[str, Any], Served, str, str | None]]:
    found = []
    for function, namespace in offered_functions(request.body):
        served, tool = observed.target(function)
        if served is not None and tool is not None:
            found.append((function, served, tool, namespace))
    return found


def _one_name(served: Served) -> str | None:
    return served.names[0] if len(served.names) == 1 else None


@monitor(
    "exposed-names",
    "EXP-1 EXP-2",
    "every offered MCP function's name matches the pattern, starts with mcp_, is unique in "
    "its request, is mcp_<server>_<tool> whenever that is valid and unique, and is no guessed "
    "replacement of it when it is not (a hash suffix instead)",
)
def exposed_names(self: Monitor, observed: Observed) -> Iterator[Finding]:
    reported: set[tuple[str, str]] = set()
    for request in observed.requests:
        offers = _mcp_offers(observed, request)
        # Unique within its namespace: the model calls a namespaced function by both names.
        names = Counter((str(f.get("name")), ns) for f, ns in offered_functions(request.body))
        plain_counts: dict[str, int] = {}
        for _f, served, tool, _ns in offers:
            server = _one_name(served)
            if server is not None:
                plain = f"mcp_{server}_{tool}"
                plain_counts[plain] = plain_counts.get(plain, 0) + 1
        for function, served, tool, namespace in offers:
            name = str(function.get("name"))
            what = f"{served.label}/{tool}"
            twins = names[(name, namespace)]
            bad = not is_valid(name) or not name.startswith("mcp_") or twins > 1
            if bad and ("EXP-2", what) not in reported:
                reported.add(("EXP-2", what))
                yield self.finding(
                    "EXP-2",
                    "every offered name matches ^[A-Za-z0-9_-]{1,64}$, starts with mcp_ and is "
                    "unique in the request",
                    f"{what} offered as {name!r} in model request {request.index + 1}"
                    + (f" ({twins} functions of that name)" if twins > 1 else ""),
                )
            server = _one_name(served)
            if server is None:
                continue
            plain = f"mcp_{server}_{tool}"
            unique = plain_counts.get(plain) == 1 and plain not in {
                n for n, _ns in names if n != name
            }
            if not is_valid(plain) and guessed(name, server, tool):
                if ("EXP-2", what) not in reported:
                    reported.add(("EXP-2", what))
                    yield self.finding(
                        "EXP-2",
                        f"{what} (mcp_<server>_<tool> not a valid name) offered with a hash "
                        "suffix, not a guessed replacement",
                        f"offered as {name!r} in model request {request.index + 1}",
                    )
                continue
            if is_valid(plain) and unique and name != plain:
                if ("EXP-1", what) not in reported:
                    reported.add(("EXP-1", what))
                    yield self.finding(
                        "EXP-1",
                        f"{what} offered as {plain} (a valid, unique name)",
                        f"offered as {name!r} in model request {request.index + 1}",
                    )


@monitor(
    "parameters-as-served",
    "EXP-3",
    "every offered MCP function's parameters equal its tool's inputSchema as served, and "
    "strict is false",
)
def parameters_as_served(self: Monitor, observed: Observed) -> Iterator[Finding]:
    reported: set[str] = set()
    for request in observed.requests:
        for function, served, tool, _ns in _mcp_offers(observed, request):
            what = f"{served.label}/{tool}"
            if what in reported:
                continue
            schemas = [
                t.definition().get("inputSchema")
                for t in served.tools()
                if t.name == tool and isinstance(t.input_schema, dict)
            ]
            if not schemas or function.get("type") not in (None, "function"):
                continue  # no schema, or a malformed one: the host's answer is not judged here
            parameters = function.get("parameters")
            if not any(same_json(parameters, schema) for schema in schemas):
                reported.add(what)
                yield self.finding(
                    "EXP-3",
                    f"the parameters of {what} equal its inputSchema exactly",
                    f"offered {json.dumps(parameters)[:160]} for {json.dumps(schemas[0])[:160]}",
                )
            elif function.get("strict") is not False:
                reported.add(what)
                yield self.finding(
                    "EXP-3",
                    f"{what} offered with strict: false",
                    f"strict: {function.get('strict', '<absent>')!r}",
                )


@monitor(
    "labelled-descriptions",
    "EXP-4",
    "every offered MCP function's description starts with [MCP server S, tool T], holds the "
    "server's description text, and says `untrusted`",
)
def labelled_descriptions(self: Monitor, observed: Observed) -> Iterator[Finding]:
    reported: set[str] = set()
    for request in observed.requests:
        for function, served, tool, _ns in _mcp_offers(observed, request):
            server = _one_name(served)
            what = f"{served.label}/{tool}"
            if server is None or what in reported:
                continue
            texts = [t.description for t in served.tools() if t.name == tool]
            description = str(function.get("description") or "")
            label = f"[MCP server {server}, tool {tool}]"
            problems = []
            if not description.startswith(label):
                problems.append(f"starts {description[:80]!r}, not {label!r}")
            if texts and not any(text in description for text in texts):
                problems.append("the server's description is not in it whole")
            if "untrusted" not in description.lower():
                problems.append("no note with the word 'untrusted'")
            if problems:
                reported.add(what)
                yield self.finding(
                    "EXP-4",
                    "each description: the label, the server's text, and a note with 'untrusted'",
                    f"{what}: " + "; ".join(problems),
                )


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _sizes(served: Served, changed: bool = False) -> tuple[list[tuple[str, int | None]], int]:
    """Each definition's name and its schema's size in bytes (None: no object schema), and
    all the definitions' size: what both margins of `_broken_limits` are measured against,
    measured once per record (several monitors ask, for every server, in every case).
    `changed`: of the definitions the server switches to after its first call."""

    def measure() -> tuple[list[tuple[str, int | None]], int]:
        definitions = [t.definition() for t in _tools(served, changed)]
        schemas: list[tuple[str, int | None]] = []
        for definition in definitions:
            schema = definition.get("inputSchema", MISSING)
            if schema is MISSING or not isinstance(schema, dict):
                schemas.append((definition["name"], None))
                break  # the first without one is what is said
            schemas.append((definition["name"], _size(schema)))
        return schemas, sum(_size(d) for d in definitions)

    return served.once(("definition-sizes", changed), measure)


def _pages(tools: int, page_size: int | None) -> int:
    return -(-tools // page_size) if page_size else 1


def _tools(served: Served, changed: bool = False) -> list[Tool]:
    spec = served.mock.spec
    tools: list[Tool] = spec.misbehaviour.changed_tools if changed else spec.tools
    return tools


def _broken_limits(
    served: Served, near: bool = False, changed: bool = False
) -> list[tuple[str, str]]:
    """(rule, why) for each discovery limit the server's spec breaks by a clear margin (half
    a KiB over a size bound); with `near`, also each size within that margin of its bound,
    where the decision makes the verdict INFO only. `changed`: as the server lists its tools
    once they changed after its first call."""
    spec = served.mock.spec
    tools = _tools(served, changed)
    broken = []
    pages = _pages(len(tools), spec.page_size)
    if pages > MAX_PAGES:
        broken.append(("DISC-6", f"its tools/list takes {pages} pages"))
    if len(tools) > MAX_TOOLS:
        broken.append(("DISC-7", f"it lists {len(tools)} tools"))
    low = -MARGIN // 2 if near else MARGIN // 2
    schemas, total = _sizes(served, changed)
    for name, size in schemas:
        if size is None:
            broken.append(("DISC-8", f"tool {name!r} has no object inputSchema"))
            break
        if size > SCHEMA_LIMIT + low:
            broken.append(("DISC-8", f"tool {name!r}'s schema is {size} B"))
            break
    if total > DEFINITIONS_LIMIT + low:
        broken.append(("DISC-9", f"its definitions total {total} B"))
    bad = spec.misbehaviour
    if bad.oversize_at in ("initialize", "tools/list") and bad.oversize_bytes > MESSAGE_LIMIT + (
        -MARGIN if near else 0
    ):
        broken.append(("NET-4", f"its {bad.oversize_at} answer is {bad.oversize_bytes} B"))
    return broken


@monitor(
    "over-limit-kept-out",
    "DISC-10",
    "no tool of a server over a discovery limit (pages, tools, schema, definitions, message "
    "size) is offered to the model",
)
def over_limit_kept_out(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for served in observed.served:
        if not served.names:
            continue
        broken = _broken_limits(served)
        if not broken:
            continue
        offered = sorted(
            {
                tool
                for r in observed.requests
                for _f, s, tool, _ns in _mcp_offers(observed, r)
                if s is served
            }
        )
        if not offered:
            continue
        # DISC-10's own: the limit rules say the server is unavailable, which the status
        # shows (their cases judge it); that none of its tools reaches the model is DISC-10
        rule, why = broken[0]
        yield self.finding(
            "DISC-10",
            f"{served.label} is unavailable ({why}, {rule}): none of its tools reaches the model",
            f"the model was offered {', '.join(offered[:5])}",
        )


@monitor(
    "offers-fixed-per-session",
    "DISC-5",
    "within one session every model request offers the same MCP tools (a list_changed or a "
    "new tools/list has no effect until restart)",
    unless=("pinning", "instruction-flagging"),
)
def offers_fixed_per_session(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for run in {m.run for m in observed.of("ask")}:
        windows = [m for m in observed.of("ask") if m.run == run]
        offers = []
        for request in observed.requests:
            if any(w.began <= request.time <= w.ended for w in windows):
                tools = {(id(s), t) for _f, s, t, _ns in _mcp_offers(observed, request)}
                offers.append((request, tools))
        for (first, tools), (later, changed) in zip(offers, offers[1:], strict=False):
            if changed != tools:
                yield self.finding(
                    "DISC-5",
                    "the MCP tools offered stay those of the session's discovery",
                    f"model request {later.index + 1} offers {len(changed)} MCP tool(s), "
                    f"request {first.index + 1} of the same session {len(tools)}",
                )
                break


def _sessions(observed: Observed) -> dict[int, list[ModelRequest]]:
    """The model requests sent during each session's questions, by session number."""
    found: dict[int, list[ModelRequest]] = {}
    asks = observed.of("ask")
    for request in observed.requests:
        for ask in asks:
            if ask.began <= request.time <= ask.ended:
                found.setdefault(ask.run, []).append(request)
                break
    return found


def _failing_at_discovery(served: Served) -> bool:
    bad = served.mock.spec.misbehaviour
    return bool(
        bad.exit_at_once is not None
        or bad.garbage
        or bad.reject_status
        or bad.redirect_status
        or {"initialize", "tools/list"} & set(bad.stall)
        or bad.fail_at in ("initialize", "tools/list")
        or bad.exit_at in ("initialize", "tools/list")
        or _broken_limits(served)
    )


def _healthy(served: Served, held: bool = False) -> bool:
    """Nothing keeps the server from being offered; `held`: but a barrier it waits at."""
    bad = served.mock.spec.misbehaviour
    return (
        not _failing_at_discovery(served)
        and _within_limits_all_along(served)
        and not (bad.delays or bad.stall or (bad.barrier and not held))
    )


def _within_limits_all_along(served: Served) -> bool:
    """Within every limit by the margin, and so are the definitions it switches to after its
    first call (a later start lists those: 63 KiB of definitions, each schema one argument
    wider, is over the 64 KiB)."""
    changes = served.mock.spec.misbehaviour.change_tools_after_call
    return not _broken_limits(served, near=True) and not (
        changes and _broken_limits(served, near=True, changed=True)
    )


def _emptied(served: Served) -> float:
    """From when a server may list no tools at all (its tools change to none after its first
    call): from then on, that none of its tools is offered is no failure's doing."""
    bad = served.mock.spec.misbehaviour
    if not bad.change_tools_after_call or bad.changed_tools:
        return math.inf
    return min((e.time for e in served.requests("tools/call")), default=math.inf)


def _not_offering(
    observed: Observed, served: Served, requests: list[ModelRequest]
) -> list[ModelRequest]:
    """The model requests, of those given, that offer none of `served`'s tools while it
    still lists some."""
    emptied = _emptied(served)
    return [
        r
        for r in requests
        if r.time < emptied and not any(s is served for _f, s, _t, _ns in _mcp_offers(observed, r))
    ]


@monitor(
    "healthy-beside-failed",
    "DISC-4 STDIO-6",
    "in a session where a configured server failed at discovery (or answered it only after "
    "the start's connect timeout), every healthy server that was listed has its tools "
    "offered in each model request (STDIO-6 when the failed one is a stdio server)",
    unless=("pinning", "instruction-flagging"),
)
def healthy_beside_failed(self: Monitor, observed: Observed) -> Iterator[Finding]:
    configured = [s for s in observed.served if s.names]
    failing = [s for s in configured if _failing_at_discovery(s)]
    healthy = [s for s in configured if _healthy(s) and s.requests("tools/list") and s.tools()]
    if not healthy:
        return
    timeouts = {run.number: run.options.connect_timeout for run in observed.runs}
    for run, requests in _sessions(observed).items():
        # a server that answers after the start's connect timeout failed in that session
        failed = failing + [s for s in configured if _late(s, timeouts.get(run))]
        if not failed:
            continue
        rule = "STDIO-6" if all(s.stdio for s in failed) else "DISC-4"
        listed = _listed_at(observed, run)
        for served in healthy:
            if served not in listed:
                continue
            missing = _not_offering(observed, served, requests)
            if not missing or _specific(served, listed, _offered_in(observed, missing[0])):
                continue  # offered, or kept out by a limit misapplied: listed-servers-offered's
            yield self.finding(
                rule,
                f"{served.label} keeps working beside the failed "
                f"{', '.join(s.label for s in failed[:3])}",
                f"none of its tools offered in model request {missing[0].index + 1}",
            )
            return


def _specific(
    served: Served, listed: list[Served], offered: list[Served] | None = None
) -> list[tuple[str, str]]:
    """The (rule, why) of each limit's own rule that a host keeping `served` (within every
    discovery limit) from the model may have broken: by applying the limit to what servers
    list together, or by reading 1 MiB as a million bytes. Together: `served` and the
    servers `offered` beside it in the request that left it out, when known (a host that
    counts over its servers keeps them under the limit and leaves out the one that would
    pass it; one that offers nothing at all misapplied no limit), else every server
    `listed` (none failing at discovery). More than one: not told apart."""
    bad = served.mock.spec.misbehaviour
    if bad.oversize_at in ("initialize", "tools/list") and bad.oversize_bytes > MEGABYTE:
        return [("NET-4", f"its {bad.oversize_at} answer is {bad.oversize_bytes} B, under 1 MiB")]
    if len(listed) < 2:
        return []
    together = listed if offered is None else [*(s for s in offered if s is not served), served]
    found = []
    tools = sum(len(s.mock.spec.tools) for s in together)
    if tools > MAX_TOOLS:
        found.append(
            ("DISC-7", f"the servers list {tools} tools together, each at most {MAX_TOOLS}")
        )
    pages = sum(_pages(len(s.mock.spec.tools), s.mock.spec.page_size) for s in together)
    if pages > MAX_PAGES:
        found.append(("DISC-6", f"the servers' tools/list take {pages} pages together"))
    total = sum(_sizes(s)[1] for s in together)
    if total > DEFINITIONS_LIMIT + MARGIN // 2:
        found.append(
            ("DISC-9", f"the servers' definitions total {total} B together, each under 64 KiB")
        )
    return found


def _offered_in(observed: Observed, request: ModelRequest) -> list[Served]:
    found: list[Served] = []
    for _f, served, _t, _ns in _mcp_offers(observed, request):
        if not any(s is served for s in found):
            found.append(served)
    return found


def _listed_at(observed: Observed, run: int) -> list[Served]:
    """The configured servers listed at session `run`'s start that did not fail there."""
    start = next((m for m in observed.of("start") if m.run == run), None)
    if start is None:
        return []
    return [
        s
        for s in observed.served
        if s.names
        and not _failing_at_discovery(s)
        and any(start.began <= e.time <= start.ended for e in s.requests("tools/list"))
    ]


def _offerable(served: Served) -> bool:
    """Within every limit by the margin, answering discovery at once, at no barrier, and
    never leaving a call unanswered (a host may give up on such a server's session: DISC-5's
    monitor judges what it then offers); a slow call is no reason to hide a server."""
    bad = served.mock.spec.misbehaviour
    return (
        not _failing_at_discovery(served)
        and _within_limits_all_along(served)
        and not (bad.delays.get("initialize") or bad.delays.get("tools/list"))
        and not {"initialize", "tools/list", "tools/call"} & set(bad.stall)
        and bad.drop_call != "stall"
        and not bad.poll_tools  # a listing on a stream to resume: its own cases judge it
        and not bad.barrier
        and bool(served.tools())
    )


@monitor(
    "listed-servers-offered",
    "EXP-1 DISC-6 DISC-7 DISC-9 NET-4",
    "every server within every discovery limit that was listed at a start has its tools "
    "offered in each model request of that session: the limit's rule when the servers break "
    "it only together, or the server's discovery answer is over a megabyte and under 1 MiB; "
    "otherwise EXP-1, in a case where no configured server failed at discovery",
    unless=("pinning", "instruction-flagging"),
)
def listed_servers_offered(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # Beside a server that failed, a server kept out for no reason of its own is
    # healthy-beside-failed's (DISC-4, STDIO-6).
    configured = [s for s in observed.served if s.names]
    failing = any(_failing_at_discovery(s) for s in configured)
    timeouts = {run.number: run.options.connect_timeout for run in observed.runs}
    for run, requests in _sessions(observed).items():
        failed = failing or any(_late(s, timeouts.get(run)) for s in configured)
        listed = _listed_at(observed, run)
        for served in listed:
            if not _offerable(served):
                continue
            missing = _not_offering(observed, served, requests)
            if not missing:
                continue
            specific = _specific(served, listed, _offered_in(observed, missing[0]))
            if len(specific) > 1 or (not specific and failed):
                continue
            rule, why = specific[0] if specific else ("EXP-1", "nothing kept it out")
            yield self.finding(
                rule,
                f"{served.label}, within every discovery limit and listed at the start, "
                "has its tools offered",
                f"none of its tools offered in model request {missing[0].index + 1} ({why})",
            )
            return


def _barriers(observed: Observed) -> list[Any]:
    """The barriers (`mocks.barrier.Barrier`) the case's servers met at."""
    return [m for m in observed.other_mocks if hasattr(m, "parties") and hasattr(m, "address")]


def _released_at(meeting: Any) -> float:
    times = [
        e.time
        for e in meeting.journal.entries(kind="event")
        if (e.extra or {}).get("event") == "barrier-released"
    ]
    return min(times, default=math.inf)


@monitor(
    "connected-in-parallel",
    "DISC-2",
    "where the servers answer initialize only once every one of them is contacted (a "
    "barrier), each otherwise healthy server contacted at a start has its tools offered in "
    "that session's model requests",
    unless=("pinning", "instruction-flagging"),
)
def connected_in_parallel(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # A host that waits for one server's answer before contacting the next is never
    # answered by the first: the first is given up on, and the barrier lets go only when
    # the host reaches the last. Judged on what reached the model, not on time.
    sessions = None
    for meeting in _barriers(observed):
        parties = [
            s
            for s in observed.served
            if s.names and s.mock.spec.misbehaviour.barrier == meeting.address
        ]
        if len(parties) < 2:
            continue
        released = _released_at(meeting)
        sessions = sessions if sessions is not None else _sessions(observed)
        for start in observed.of("start"):
            if released < start.began:
                continue  # let go at an earlier start: this one was not held
            for served in parties:
                contacted = any(
                    start.began <= e.time <= start.ended for e in served.requests("initialize")
                )
                if not contacted or not _healthy(served, held=True):
                    continue
                if _specific(served, _listed_at(observed, start.run)):
                    continue  # a misapplied limit would keep it out as well: not told apart
                missing = _not_offering(observed, served, sessions.get(start.run, []))
                if missing:
                    yield self.finding(
                        "DISC-2",
                        "servers connect in parallel",
                        f"{served.label} answers initialize only once "
                        f"{', '.join(s.label for s in parties if s is not served)} "
                        f"{'is' if len(parties) == 2 else 'are'} contacted too, and none of "
                        f"its tools was offered in model request {missing[0].index + 1}: the "
                        "host waited for its answer before contacting the others",
                    )
                    return


def _builtin_names(request: ModelRequest) -> frozenset[str]:
    tools = request.body.get("tools")
    return frozenset(
        str(t.get("name") or t.get("type"))
        for t in (tools if isinstance(tools, list) else [])
        if isinstance(t, dict)
        and MARKER_PREFIX not in json.dumps(t, ensure_ascii=False)
        and not str(t.get("description") or "").startswith("[MCP server ")
    )


@monitor(
    "offered-beside-builtins",
    "EXP-5",
    "in every model request of a session that offered MCP tools, MCP tools are offered, and "
    "with the same built-in tools as the session's first request",
    unless=("pinning", "instruction-flagging"),
)
def offered_beside_builtins(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for requests in _sessions(observed).values():
        first = next((r for r in requests if _mcp_offers(observed, r)), None)
        if first is None:
            continue
        builtins = _builtin_names(first)
        for request in requests[requests.index(first) + 1 :]:
            if not _mcp_offers(observed, request) or _builtin_names(request) != builtins:
                yield self.finding(
                    "EXP-5",
                    "MCP tools offered beside the built-in tools in every request of a session",
                    f"model request {request.index + 1} offers "
                    f"{len(_mcp_offers(observed, request))} MCP tool(s) and built-ins "
                    f"{sorted(_builtin_names(request))[:6]}; the session's first "
                    f"{len(_mcp_offers(observed, first))} and {sorted(builtins)[:6]}",
                )
                return


# The share of a start's connect timeout by which a server's held-back discovery answers
# must exceed it to be judged: the mock's delays are lower bounds on what the host waited
# (a loaded machine only adds), the tenth covers the two clocks' granularity.
LATE_MARGIN = 1.1


def _held_back(served: Served) -> float:
    """The seconds a connection to `served` waits at least for its answers to initialize and
    the first tools/list (the mock's delays)."""
    delays = served.mock.spec.misbehaviour.delays
    return float(delays.get("initialize", 0.0)) + float(delays.get("tools/list", 0.0))


def _late(served: Served, connect: float | None) -> bool:
    """Whether `served` answered its discovery after a start's connect timeout, whatever
    the machine's speed."""
    return connect is not None and _held_back(served) >= connect * LATE_MARGIN


@monitor(
    "late-server-skipped",
    "DISC-3",
    "a server whose answers to initialize and tools/list came, together, later than the "
    "connect timeout its start was given has none of its tools offered in that session",
)
def late_server_skipped(self: Monitor, observed: Observed) -> Iterator[Finding]:
    late = [s for s in observed.served if s.names and _held_back(s) > 0]
    if not late:
        return
    sessions = _sessions(observed)
    for run in observed.runs:
        connect = run.options.connect_timeout
        for served in late:
            if not _late(served, connect):
                continue
            held = _held_back(served)
            offering = [
                r
                for r in sessions.get(run.number, [])
                if any(s is served for _f, s, _t, _ns in _mcp_offers(observed, r))
            ]
            if offering:
                yield self.finding(
                    "DISC-3",
                    f"a server that does not answer within the connect timeout "
                    f"({connect:g} s) is skipped",
                    f"{served.label} answered initialize and tools/list only after "
                    f"{held:g} s in all, and its tools were offered in model request "
                    f"{offering[0].index + 1}",
                )
