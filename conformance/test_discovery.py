"""DISC: connection and discovery (DISC-1..5, DISC-11; the limits are in
test_discovery_limits.py).

Strategy: every rule is read from the mocks' journals (what each server received, in
order) and the status records, over HTTP and stdio together. "Once" and "without asking"
are watched across two questions, not only during start. Parallelism is checked with a
barrier (`mocks.barrier`): every server holds its answer to `initialize` until all of them
have been contacted, so a serial start can never connect the first one, however long it
waits, and a parallel start always connects them all, however loaded the machine: no
verdict depends on a delay. The connection limit covers initialize and the whole
discovery: servers whose requests each answer in time but together exceed it are
unavailable, with the limit scaled; the real 10 s default is checked by a slow case
(without `--run-slow` DISC-3 is reported `partial`, never passed).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_host_conformance.conformance.server_status import (
    expect_available,
    expect_unavailable,
    stdio_destinations,
    tools_line_pattern,
)
from mcp_host_conformance.harness.cases.observe import model_requests, offered_tools_of
from mcp_host_conformance.harness.cases.specs import gone_after_add
from mcp_host_conformance.harness.verdicts.outcomes import check
from mcp_host_conformance.mocks.barrier import Barrier
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool


def healthy(name: str = "docs", tools: tuple[str, ...] = ("query",)) -> ServerSpec:
    return ServerSpec(
        name=name, tools=[Tool(t, f"Tool {t}.", reply=Reply.text(f"{t} ok")) for t in tools]
    )


def misbehaving(name: str, **misbehaviour) -> ServerSpec:
    return ServerSpec(
        name=name,
        tools=[Tool("query", reply=Reply.text("ok"))],
        misbehaviour=Misbehaviour(**misbehaviour),
    )


def discovery_counts(mocks: dict) -> dict[str, tuple[int, int]]:
    """server -> (initialize, tools/list requests) its mock received."""
    return {
        name: (mock.journal.count("initialize"), mock.journal.count("tools/list"))
        for name, mock in mocks.items()
    }


# ---- DISC-1 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("DISC-1")
def test_start_connects_and_lists_every_server_once(host, http_mock, stdio_mock, model):
    """At start, every configured server is connected and its tools listed, once, without
    asking the user; a status line reports `MCP server NAME: N tools from DESTINATION`
    before the first question (`1 tool` and `1 tools` both accepted)."""
    remote = http_mock(healthy("remote", ("query", "fetch")))
    single = http_mock(healthy("single", ("only",)))
    local = stdio_mock(healthy("local", ("run",)))
    host.add_http("remote", remote)
    host.add_http("single", single)
    host.add_stdio("local", local)
    mocks = {"remote": remote, "single": single, "local": local}

    running = host.start()  # time is not the rule here: the unhurried default
    check(
        not host.confirmations and not host.acknowledgements,
        ids="DISC-1",
        expected="no question to the user during start",
        actual=(
            f"{len(host.confirmations)} confirmation(s), "
            f"{len(host.acknowledgements)} acknowledgement(s)"
        ),
    )
    for name, count in (("remote", 2), ("single", 1), ("local", 1)):
        expect_available(running, name, "DISC-1", "healthy", tools=count)
    at_start = discovery_counts(mocks)
    check(
        all(counts == (1, 1) for counts in at_start.values()),
        ids="DISC-1",
        expected="each server: one initialize and one tools/list at start",
        actual=f"(initialize, tools/list) per server: {at_start}",
    )
    lines = {
        "remote": tools_line_pattern("remote", 2, [str(remote.url)]),
        "single": tools_line_pattern("single", 1, [str(single.url)]),
        "local": tools_line_pattern("local", 1, stdio_destinations(list(local.command))),
    }
    missing = [name for name, pattern in lines.items() if not pattern.search(running.text)]
    check(
        not missing,
        ids="DISC-1",
        expected=(
            "a status line `MCP server NAME: N tools from DESTINATION` per server "
            "(`1 tool` or `1 tools`; the URL, or the stdio command)"
        ),
        actual=f"none for {missing}; start showed: {running.text[-600:]!r}",
    )
    check(
        not model_requests(model),
        ids="DISC-1",
        expected="no model request before the first question",
        actual=f"{len(model_requests(model))} model request(s) during start",
    )
    listed = max(e.time for m in mocks.values() for e in m.journal.entries("tools/list"))

    for question in ("hello", "and again"):
        model.script([Step.text("hi")])
        running.ask(question)
    bodies = model.journal.entries(kind="http")
    check(
        len(bodies) >= 2,
        ids="DISC-1",
        expected="both questions sent to the model",
        actual=f"{len(bodies)} model request(s)",
    )
    check(
        listed <= bodies[0].time,
        ids="DISC-1",
        expected="discovery finished before the first model request",
        actual=f"last tools/list {listed - bodies[0].time:+.3f}s after the first model request",
    )
    check(
        not host.confirmations and not host.acknowledgements,
        ids="DISC-1",
        expected="no question to the user in two turns without a tool call (no consent to connect)",
        actual=(
            f"{len(host.confirmations)} confirmation(s), "
            f"{len(host.acknowledgements)} acknowledgement(s)"
        ),
    )
    after = discovery_counts(mocks)
    check(
        after == at_start,
        ids="DISC-1",
        expected="no further initialize or tools/list after start, across two questions (once)",
        actual=f"(initialize, tools/list) per server: at start {at_start}, after {after}",
    )


# ---- DISC-2 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("DISC-2")
def test_servers_connect_in_parallel(host, http_mock, stdio_mock, case, timeouts):
    """Servers connect in parallel: three HTTP and three stdio servers each hold their
    answer to `initialize` until all six have received one (a barrier), so a host that
    contacts a server only after the previous one answered never connects the first, and a
    host that contacts them all at once connects all six."""
    meeting = Barrier(parties=6).start()
    case.mocks.append(meeting)
    names = [f"remote{i}" for i in range(3)] + [f"local{i}" for i in range(3)]
    for name in names:
        spec = misbehaving(name, barrier=meeting.address)
        if name.startswith("remote"):
            host.add_http(name, http_mock(spec))
        else:
            host.add_stdio(name, stdio_mock(spec))
    # A generous limit: a parallel host is answered as soon as the last server is
    # contacted, so this costs nothing; it only gives a loaded machine time to spawn.
    running = host.start(connect_timeout=2 * timeouts.connect)

    arrived = meeting.arrived()
    check(
        meeting.released,
        ids="DISC-2",
        expected="all six servers contacted while the first still waited for its answer",
        actual=(
            f"only {len(arrived)} of 6 contacted ({', '.join(arrived) or 'none'}): "
            "the host waited for one server before contacting the next"
        ),
    )
    for name in names:
        expect_available(running, name, "DISC-2", "answers once all six are contacted")


# ---- DISC-3 ----------------------------------------------------------------------------------


def _slow_servers(host, http_mock, stdio_mock, limit: float) -> list[tuple[str, str]]:
    """Servers that each break a connection limit of `limit` seconds in their own way,
    beside a healthy one; (name, why) of the ones that must be unavailable."""
    slow: dict[str, tuple[str, dict[str, Any], str]] = {
        "stalled": ("http", {"stall": ["initialize"]}, "initialize never answered"),
        "slowlist": ("http", {"stall": ["tools/list"]}, "tools/list never answered"),
        "stalled-stdio": ("stdio", {"stall": ["initialize"]}, "stdio: initialize never answered"),
        "summed": (
            "http",
            {"delays": {"initialize": 0.6 * limit, "tools/list": 0.6 * limit}},
            "initialize and tools/list each answered within the limit, together past it",
        ),
    }
    for name, (kind, misbehaviour, _why) in slow.items():
        spec = misbehaving(name, **misbehaviour)
        if kind == "http":
            host.add_http(name, http_mock(spec))
        else:
            host.add_stdio(name, stdio_mock(spec))
    paged = ServerSpec(
        name="slowpages",
        tools=[Tool(f"page_{i}") for i in range(3)],
        page_size=1,
        misbehaviour=Misbehaviour(delays={"tools/list": 0.45 * limit}),
    )
    host.add_http("slowpages", http_mock(paged))
    host.add_http("docs", http_mock(healthy()))
    return [(name, why) for name, (_k, _m, why) in slow.items()] + [
        ("slowpages", "three pages each answered within the limit, together past it")
    ]


@pytest.mark.mcphc_requirements("DISC-3")
def test_connection_limit_covers_initialize_and_discovery(host, http_mock, stdio_mock, timeouts):
    """Each connection (initialize + discovery) is limited (10 s by default; scaled here); a
    server that does not answer in time is reported `MCP server NAME unavailable: REASON`
    and skipped: a stalled initialize or tools/list, over HTTP and stdio, and requests that
    each answer in time but together take longer than the limit."""
    late = _slow_servers(host, http_mock, stdio_mock, timeouts.connect)
    running = host.start(connect_timeout=timeouts.connect)
    for name, why in late:
        expect_unavailable(running, name, "DISC-3", why)
    expect_available(running, "docs", "DISC-3", "healthy")
    limit = timeouts.connect + 1.5 * timeouts.scale
    check(
        running.elapsed < limit,
        ids="DISC-3",
        expected=(
            f"start done within the {timeouts.connect:.1f}s connect timeout "
            f"(+ slack, < {limit:.1f}s)"
        ),
        actual=f"start took {running.elapsed:.2f}s",
    )


@pytest.mark.mcphc_slow
@pytest.mark.mcphc_requirements("DISC-3")
def test_default_connect_timeout_is_ten_seconds(host, http_mock, stdio_mock):
    """Each connection (initialize + discovery) is limited to 10 s by default: observed on a
    host started with no timeout at all (its own default), never read from its description."""
    late = _slow_servers(host, http_mock, stdio_mock, 10.0)
    running = host.start(connect_timeout=None, call_timeout=None)
    for name, why in late:
        expect_unavailable(running, name, "DISC-3", why)
    check(
        9.0 <= running.elapsed < 15.0,
        ids="DISC-3",
        expected="the late servers given up on after about 10 s (the host's own default)",
        actual=f"start took {running.elapsed:.2f}s",
    )


# ---- DISC-4 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("DISC-4")
def test_failed_servers_never_stop_the_others(host, http_mock, stdio_mock, model, case, timeouts):
    """A failed server never stops chat or the other servers: offline, stalled, failing with
    an HTTP server error, a missing command and a garbage-speaking stdio server beside a
    healthy HTTP and a healthy stdio server, both still offered and callable."""
    docs = http_mock(healthy())
    local = stdio_mock(healthy("local"))
    # Servers gone after they were configured (a host that syncs at add saves them too):
    # nothing listens on the offline one's port, the missing one's command is removed.
    offline = http_mock(healthy("offline"))
    host.add_http("offline", offline)
    offline.close()
    host.add_http("stalled", http_mock(misbehaving("stalled", stall=["initialize"])))
    host.add_http("failing", http_mock(misbehaving("failing", reject_status=500)))
    host.add_stdio("garbage", stdio_mock(misbehaving("garbage", garbage=True)))
    gone_after_add(
        host, "missing", stdio_mock(healthy("missing")), case.root / "gone", ("--serve",)
    )
    host.add_http("docs", docs)
    host.add_stdio("local", local)

    # the stalled server costs the whole connect timeout: twice the short one, not `wait`
    running = host.start(connect_timeout=2 * timeouts.connect)
    for name in ("offline", "stalled", "failing", "garbage", "missing"):
        expect_unavailable(running, name, "DISC-4", "broken")
    expect_available(running, "docs", "DISC-4", "healthy, HTTP")
    expect_available(running, "local", "DISC-4", "healthy, stdio")
    both = [
        Step.call(server="docs", tool="query", arguments={}),
        Step.call(server="local", tool="query", arguments={}),
    ]
    model.script([Step.calls(both), Step.text("done")])
    turn = running.ask("use both", offer_rule="DISC-4")
    calls = (docs.journal.count("tools/call"), local.journal.count("tools/call"))
    statuses = [c.status for c in turn.calls]
    check(
        calls == (1, 1) and statuses == ["completed", "completed"],
        ids="DISC-4",
        expected="both healthy servers' tools offered and called (two completed calls)",
        actual=(
            f"tools/call received: docs {calls[0]}, local {calls[1]}; call statuses {statuses}; "
            f"answer {turn.answer!r}"
        ),
    )


# ---- DISC-5 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("DISC-5")
def test_tool_list_is_fixed_after_discovery(host, http_mock, model, timeouts):
    """The tool list is fixed once discovery finishes: `notifications/tools/list_changed` or a
    changed `tools/list` later has no effect until restart;
    `tools/list` is not repeated per turn."""
    docs = http_mock(healthy("docs", ("query",)))
    host.add_http("docs", docs)
    running = host.start()
    model.script([Step.text("one")])
    running.ask("first")
    docs.change_tools([Tool("query", "Changed."), Tool("added", "Appeared later.")])
    model.script([Step.call(server="docs", tool="query", arguments={}), Step.text("two")])
    running.ask("second")
    model.script([Step.text("three")])
    running.ask("third")

    offered = [offered_tools_of(b, docs) for b in model_requests(model)]
    check(
        len(offered) >= 4 and all(o == ["query"] for o in offered),
        ids="DISC-5",
        expected="every model request (four or more) offers the tools discovered at start "
        "(docs/query only)",
        actual=f"offered per request: {offered}",
    )
    lists = docs.journal.count("tools/list")
    check(
        lists == 1,
        ids="DISC-5",
        expected="one tools/list in the session (no re-discovery per turn or on list_changed)",
        actual=f"{lists} tools/list received: {docs.journal.methods()}",
    )


# ---- DISC-11 ---------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("DISC-11")
def test_time_to_ready_with_five_servers(host, http_mock, record_property):
    """INFO: time from start to ready with N healthy servers."""
    for i in range(5):
        host.add_http(f"s{i}", http_mock(healthy(f"s{i}")))
    began = time.monotonic()
    running = host.start()
    record_property("servers", 5)
    record_property("ready_seconds", round(time.monotonic() - began, 3))
    record_property("connected", sum(1 for s in running.statuses if s.connected))
