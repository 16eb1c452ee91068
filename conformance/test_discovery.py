"""DISC: connection and discovery.

Strategy: each limit is checked by a pair of servers started together, one just inside the
limit and one just past it (16 vs 17 pages, 128 vs 129 tools, 15 vs 17 KiB schemas, 63 vs
65 KiB of definitions), so one client start per case checks both sides. Whether a server
"registered" is read from its status and, for DISC-10, from the tools the model was offered
(found by their `[MCP server S, ...]` label, never by an assumed name). Timing rules are read
from the mocks' journals (arrival times), with scaled timeouts; the real default is checked
by a slow case.
"""

from __future__ import annotations

import socket
import time

import pytest

from mcp_host_conformance.harness.observe import (
    model_requests,
    offered_function,
    offered_functions,
    offered_tools_of,
)
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.named import (
    bad_schema_spec,
    definitions_size,
    definitions_spec,
    json_size,
    many_tools_spec,
    pages_spec,
    schema_of_size,
    schema_spec,
)
from mcp_host_conformance.mocks.spec import MISSING, Misbehaviour, Reply, ServerSpec, Tool

KIB = 1024


def healthy(name: str = "docs", tools: tuple[str, ...] = ("query",)) -> ServerSpec:
    return ServerSpec(
        name=name, tools=[Tool(t, f"Tool {t}.", reply=Reply.text(f"{t} ok")) for t in tools]
    )


def stalling(name: str, method: str = "initialize") -> ServerSpec:
    return ServerSpec(name=name, tools=[Tool("query")], misbehaviour=Misbehaviour(stall=[method]))


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was just released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def describe_status(status) -> str:
    if status is None:
        return "no status reported"
    if status.connected:
        return f"connected with {status.tools} tools ({status.line!r})"
    return f"unavailable: {status.reason!r}"


def expect_available(running, name: str, ids: str, why: str, tools: int | None = None) -> None:
    status = running.status(name)
    ok = status is not None and status.connected and (tools is None or status.tools == tools)
    want = f"server {name} ({why}) connected" + (
        f" with {tools} tools" if tools is not None else ""
    )
    check(ok, ids=ids, expected=want, actual=describe_status(status))


def expect_unavailable(running, name: str, ids: str, why: str) -> None:
    status = running.status(name)
    ok = status is not None and not status.connected and bool(status.reason)
    check(
        ok,
        ids=ids,
        expected=f"server {name} ({why}) reported unavailable with a reason",
        actual=describe_status(status),
    )
    line = f"MCP server {name} unavailable: "
    check(
        line in running.text,
        ids=ids,
        expected=f"a status line starting {line!r}",
        actual=f"start showed: {running.text[-400:]!r}",
    )


@pytest.mark.requirements("DISC-1")
def test_start_connects_and_lists_every_server_once(host, http_mock, stdio_mock, model):
    """At start, every configured server is connected and its tools listed, once, without
    asking the user; a status line reports `MCP server NAME: N tools from DESTINATION`
    before the first question."""
    remote = http_mock(healthy("remote", ("query", "fetch")))
    local = stdio_mock(healthy("local", ("run",)))
    host.add_http("remote", remote)
    host.add_stdio("local", local)

    running = host.start()
    check(
        not host.confirmations and not host.acknowledgements,
        ids="DISC-1",
        expected="no question to the user during start",
        actual=(
            f"{len(host.confirmations)} confirmation(s), "
            f"{len(host.acknowledgements)} acknowledgement(s)"
        ),
    )
    for name, mock, count in (("remote", remote, 2), ("local", local, 1)):
        expect_available(running, name, "DISC-1", "healthy", tools=count)
        methods = mock.journal.methods()
        check(
            methods.count("initialize") == 1 and methods.count("tools/list") == 1,
            ids="DISC-1",
            expected=f"{name}: one initialize and one tools/list at start",
            actual=f"methods received: {methods}",
        )
    check(
        f"MCP server remote: 2 tools from {remote.url}" in running.text
        and "MCP server local: 1 tools from " in running.text,
        ids="DISC-1",
        expected=(
            f"status lines 'MCP server remote: 2 tools from {remote.url}' "
            "and 'MCP server local: 1 tools from ...'"
        ),
        actual=f"start showed: {running.text!r}",
    )
    check(
        not model_requests(model),
        ids="DISC-1",
        expected="no model request before the first question",
        actual=f"{len(model_requests(model))} model request(s) during start",
    )
    listed = max(e.time for m in (remote, local) for e in m.journal.entries("tools/list"))
    model.script([Step.text("hi")])
    running.ask("hello")
    bodies = model.journal.entries(kind="http")
    check(
        bool(bodies),
        ids="DISC-1",
        expected="the question sent to the model",
        actual="no model request",
    )
    first_model = bodies[0].time
    check(
        listed <= first_model,
        ids="DISC-1",
        expected="discovery finished before the first model request",
        actual=f"last tools/list {listed - first_model:+.3f}s after the first model request",
    )


@pytest.mark.requirements("DISC-2")
def test_servers_connect_in_parallel(host, http_mock, timeouts):
    """Servers connect in parallel."""
    delay = timeouts.connect / 2.5
    mocks = [
        http_mock(
            ServerSpec(
                name=f"slow{i}",
                tools=[Tool("query")],
                misbehaviour=Misbehaviour(delays={"initialize": delay}),
            )
        )
        for i in range(3)
    ]
    for i, mock in enumerate(mocks):
        host.add_http(f"slow{i}", mock)
    running = host.start()
    for i in range(3):
        expect_available(running, f"slow{i}", "DISC-2", f"initialize delayed {delay:.2f}s")
    received = [m.journal.entries("initialize") for m in mocks]
    check(
        all(received),
        ids="DISC-2",
        expected="each of the three servers received initialize",
        actual=f"initialize counts {[len(r) for r in received]}",
    )
    arrivals = sorted(r[0].time for r in received)
    spread = arrivals[-1] - arrivals[0]
    check(
        spread < delay and running.elapsed < 2 * delay + timeouts.connect,
        ids="DISC-2",
        expected=(
            "all three initialize requests sent before the first answer "
            f"(within {delay:.2f}s of each other)"
        ),
        actual=f"initialize requests spread over {spread:.2f}s; start took {running.elapsed:.2f}s",
    )


def _stalled_start(host, http_mock, **overrides):
    host.add_http("stalled", http_mock(stalling("stalled", "initialize")))
    host.add_http("slowlist", http_mock(stalling("slowlist", "tools/list")))
    host.add_http("docs", http_mock(healthy()))
    return host.start(**overrides)


@pytest.mark.requirements("DISC-3")
def test_stalling_server_is_skipped_after_the_connect_timeout(host, http_mock, timeouts):
    """Each connection (initialize + discovery) is limited (10 s by default; scaled here); a
    server that does not answer in time is reported `MCP server NAME unavailable: REASON`
    and skipped."""
    running = _stalled_start(host, http_mock)
    expect_unavailable(running, "stalled", "DISC-3", "initialize never answered")
    expect_unavailable(running, "slowlist", "DISC-3", "tools/list never answered")
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


@pytest.mark.slow
@pytest.mark.requirements("DISC-3")
def test_default_connect_timeout_is_ten_seconds(host, http_mock, description):
    """Each connection (initialize + discovery) is limited to 10 s by default."""
    check(
        description.connect_timeout == 10.0,
        ids="DISC-3",
        expected="a default connect timeout of 10 s",
        actual=f"describe() says {description.connect_timeout} s",
    )
    running = _stalled_start(host, http_mock, connect_timeout=description.connect_timeout)
    expect_unavailable(running, "stalled", "DISC-3", "initialize never answered")
    check(
        9.0 <= running.elapsed < 15.0,
        ids="DISC-3",
        expected="the stalled server given up on after about 10 s",
        actual=f"start took {running.elapsed:.2f}s",
    )


@pytest.mark.requirements("DISC-4")
def test_failed_servers_never_stop_the_others(host, http_mock, stdio_mock, model):
    """A failed server never stops chat or the other servers."""
    docs = http_mock(healthy())
    host.add_http("offline", docs, url=closed_port_url())
    host.add_http("stalled", http_mock(stalling("stalled")))
    host.add_stdio(
        "garbage", stdio_mock(ServerSpec(name="garbage", misbehaviour=Misbehaviour(garbage=True)))
    )
    host.add_http("docs", docs)

    running = host.start()
    for name in ("offline", "stalled", "garbage"):
        expect_unavailable(running, name, "DISC-4", "broken")
    expect_available(running, "docs", "DISC-4", "healthy")
    model.script([Step.call(server="docs", tool="query", arguments={}), Step.text("done")])
    turn = running.ask("use the docs", offer_rule="DISC-4")
    calls = docs.journal.count("tools/call")
    statuses = [c.status for c in turn.calls]
    check(
        calls == 1 and statuses == ["completed"],
        ids="DISC-4",
        expected="the healthy server's tool offered and called (one completed call)",
        actual=f"{calls} tools/call received; call statuses {statuses}; answer {turn.answer!r}",
    )


@pytest.mark.requirements("DISC-5")
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
        all(o == ["query"] for o in offered),
        ids="DISC-5",
        expected="every model request offers the tools discovered at start (docs/query only)",
        actual=f"offered per request: {offered}",
    )
    lists = docs.journal.count("tools/list")
    check(
        lists == 1,
        ids="DISC-5",
        expected="one tools/list in the session (no re-discovery per turn or on list_changed)",
        actual=f"{lists} tools/list received: {docs.journal.methods()}",
    )


@pytest.mark.requirements("DISC-6")
def test_at_most_sixteen_pages(host, http_mock):
    """At most 16 pages of `tools/list`. A server that needs a 17th page is unavailable."""
    host.add_http("pages16", http_mock(pages_spec(16)))
    host.add_http("pages17", http_mock(pages_spec(17)))
    running = host.start()
    expect_available(running, "pages16", "DISC-6", "16 pages", tools=32)
    expect_unavailable(running, "pages17", "DISC-6", "17 pages")


@pytest.mark.requirements("DISC-7")
def test_at_most_128_tools(host, http_mock):
    """At most 128 tools per server; 129 makes the server unavailable."""
    host.add_http("tools128", http_mock(many_tools_spec(128)))
    host.add_http("tools129", http_mock(many_tools_spec(129)))
    running = host.start()
    expect_available(running, "tools128", "DISC-7", "128 tools", tools=128)
    expect_unavailable(running, "tools129", "DISC-7", "129 tools")


@pytest.mark.requirements("DISC-8")
def test_input_schema_must_be_an_object_of_at_most_16_kib(host, http_mock):
    """Each `inputSchema` must be a JSON object of at most 16 KiB; otherwise the server is
    unavailable (size: UTF-8 length of the compact JSON; 15 KiB vs 17 KiB)."""
    host.add_http("array", http_mock(bad_schema_spec([{"type": "object"}], "an array")))
    host.add_http("string", http_mock(bad_schema_spec("object", "a string")))
    host.add_http("missing", http_mock(bad_schema_spec(MISSING, "missing")))
    host.add_http("kib15", http_mock(schema_spec(15 * KIB)))
    host.add_http("kib17", http_mock(schema_spec(17 * KIB)))
    running = host.start()
    expect_available(running, "kib15", "DISC-8", "a 15 KiB schema", tools=2)
    for name, why in (
        ("array", "array schema"),
        ("string", "string schema"),
        ("missing", "no schema"),
        ("kib17", "a 17 KiB schema"),
    ):
        expect_unavailable(running, name, "DISC-8", why)


@pytest.mark.requirements("DISC-8")
def test_schema_size_at_the_exact_boundary_is_reported(host, http_mock, record_property):
    """INFO: how the client treats a schema of exactly 16 KiB and of 16 KiB + 1 byte."""
    host.add_http("exact", http_mock(schema_spec(16 * KIB)))
    host.add_http("over", http_mock(schema_spec(16 * KIB + 1)))
    running = host.start()
    for name in ("exact", "over"):
        status = running.status(name)
        record_property(f"schema_{name}_accepted", bool(status and status.connected))


@pytest.mark.requirements("DISC-9")
def test_tool_definitions_total_at_most_64_kib(host, http_mock):
    """One server's tool definitions (names, descriptions, schemas) total at most 64 KiB; over
    that the server is unavailable (63 KiB vs 65 KiB)."""
    host.add_http("defs63", http_mock(definitions_spec(63 * KIB)))
    host.add_http("defs65", http_mock(definitions_spec(65 * KIB)))
    host.add_http("schemas65", http_mock(schema_bulk_spec(65 * KIB)))
    running = host.start()
    expect_available(running, "defs63", "DISC-9", "63 KiB of definitions")
    expect_unavailable(running, "defs65", "DISC-9", "65 KiB of definitions")
    expect_unavailable(
        running, "schemas65", "DISC-9", "65 KiB of definitions, most of it in schemas"
    )


def schema_bulk_spec(total_bytes: int, count: int = 6) -> ServerSpec:
    """Tools with one-word descriptions whose schemas (each well under DISC-8's 16 KiB)
    carry the bulk of a `total_bytes` definitions total: the schemas count too."""
    probe = [Tool(f"bulky_{i}", "Bulky.", input_schema=schema_of_size(100)) for i in range(count)]
    missing = total_bytes - definitions_size(probe)
    tools = [
        Tool(
            f"bulky_{i}",
            "Bulky.",
            input_schema=schema_of_size(100 + missing // count + (1 if i < missing % count else 0)),
        )
        for i in range(count)
    ]
    assert definitions_size(tools) == total_bytes
    assert all(json_size(t.input_schema) < 15 * KIB for t in tools)
    return ServerSpec(name="schemas", tools=tools)


@pytest.mark.requirements("DISC-10")
def test_over_limit_server_tools_never_reach_the_model(host, http_mock, model):
    """A server that breaks any discovery limit is registered not at all: none of its tools
    reaches the model."""
    breakers = {
        "pages17": pages_spec(17),
        "tools129": many_tools_spec(129),
        "kib17": schema_spec(17 * KIB),
        "defs65": definitions_spec(65 * KIB),
        "array": bad_schema_spec([], "an array"),
    }
    breaking = {name: http_mock(spec) for name, spec in breakers.items()}
    for name, mock in breaking.items():
        host.add_http(name, mock)
    docs = http_mock(healthy())
    host.add_http("docs", docs)
    running = host.start()
    model.script([Step.text("hi")])
    running.ask("hello")

    bodies = model_requests(model)
    check(
        bool(bodies),
        ids="DISC-10",
        expected="the question sent to the model",
        actual="no model request",
    )
    body = bodies[-1]
    leaked = sorted(
        f"{name}/{tool}" for name, mock in breaking.items() for tool in offered_tools_of(body, mock)
    )
    check(
        not leaked,
        ids="DISC-10",
        expected=(
            "no tool of an over-limit server offered to the model (their ordinary tools included)"
        ),
        actual=f"offered: {leaked}",
    )
    check(
        offered_function(body, docs, "query") is not None,
        ids="DISC-10",
        expected="the healthy server's tool still offered",
        actual=f"offered functions: {[f.get('name') for f, _ in offered_functions(body)]}",
    )


@pytest.mark.requirements("DISC-11")
def test_time_to_ready_with_five_servers(host, http_mock, record_property):
    """INFO: time from start to ready with N healthy servers."""
    for i in range(5):
        host.add_http(f"s{i}", http_mock(healthy(f"s{i}")))
    began = time.monotonic()
    running = host.start()
    record_property("servers", 5)
    record_property("ready_seconds", round(time.monotonic() - began, 3))
    record_property("connected", sum(1 for s in running.statuses if s.connected))
