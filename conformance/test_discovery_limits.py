"""DISC-6..10: the discovery limits (pages, tools, schema size, definitions size) and that
a server over any of them registers nothing.

Strategy: each limit is checked on both sides of its bound in one client start, with the
servers a host that counts wrongly would get wrong: tools counted per page (128 and 129
tools spread over pages), per server and not across servers (two servers each at the
limit, both fine), sizes in UTF-8 bytes of the compact JSON with multi-byte content ("€"
is one character and three bytes: a schema of 6,144 of them is 18 KiB, a host measuring
characters sees 6 K; escaped as `\\u20ac` it would be 6 bytes each, so a 15 KiB schema
measured that way looks like 30 KiB), 16 pages also with a single tool per page, and
schemas that are not objects (an array, a string, `null`, `true`, none). The catalog's
margins decide the MUST cases (15 / 17 KiB, 63 / 65 KiB); the exact boundary is recorded
by an INFO case. DISC-10 puts a server over each limit on each transport (HTTP and stdio)
beside healthy ones and reads the model request: none of their tools, found by marker,
may be offered.
"""

from __future__ import annotations

import pytest

from mcp_host_conformance.conformance.server_status import expect_available, expect_unavailable
from mcp_host_conformance.harness.cases.observe import (
    model_requests,
    offered_function,
    offered_functions,
    offered_tools_of,
)
from mcp_host_conformance.harness.verdicts.outcomes import check
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
from mcp_host_conformance.mocks.spec import MISSING, Reply, ServerSpec, Tool

KIB = 1024
WIDE = "€"  # one character, three UTF-8 bytes (and six as a JSON `\u20ac` escape)


def healthy(name: str) -> ServerSpec:
    return ServerSpec(name=name, tools=[Tool("query", "Tool query.", reply=Reply.text("ok"))])


# ---- DISC-6 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("DISC-6")
def test_at_most_sixteen_pages(host, http_mock):
    """At most 16 pages of `tools/list`. A server that needs a 17th page is unavailable
    (two tools a page, and one tool a page; two servers of 16 pages each both register)."""
    host.add_http("pages16", http_mock(pages_spec(16)))
    host.add_http("pages17", http_mock(pages_spec(17)))
    host.add_http("single16", http_mock(pages_spec(16, page_size=1)))
    host.add_http("single17", http_mock(pages_spec(17, page_size=1)))
    running = host.start()
    expect_available(running, "pages16", "DISC-6", "16 pages of 2 tools", tools=32)
    expect_available(running, "single16", "DISC-6", "16 pages of 1 tool", tools=16)
    expect_unavailable(running, "pages17", "DISC-6", "17 pages of 2 tools")
    expect_unavailable(running, "single17", "DISC-6", "17 pages of 1 tool")


# ---- DISC-7 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("DISC-7")
def test_at_most_128_tools(host, http_mock):
    """At most 128 tools per server; 129 makes the server unavailable: in one page and over
    several pages (16 a page); two servers of 128 tools each both register."""
    host.add_http("tools128", http_mock(many_tools_spec(128)))
    host.add_http("tools129", http_mock(many_tools_spec(129)))
    host.add_http("paged128", http_mock(many_tools_spec(128, page_size=16)))
    host.add_http("paged129", http_mock(many_tools_spec(129, page_size=16)))
    running = host.start()
    expect_available(running, "tools128", "DISC-7", "128 tools in one page", tools=128)
    expect_available(running, "paged128", "DISC-7", "128 tools in 8 pages of 16", tools=128)
    expect_unavailable(running, "tools129", "DISC-7", "129 tools in one page")
    expect_unavailable(running, "paged129", "DISC-7", "129 tools in 9 pages of up to 16")


# ---- DISC-8 ----------------------------------------------------------------------------------


def wide_schema_spec(n_bytes: int) -> ServerSpec:
    """A tool whose schema is `n_bytes` UTF-8 bytes, nearly all of them "€" (n_bytes / 3
    characters), beside an ordinary tool."""
    return schema_spec(n_bytes, fill=WIDE)


@pytest.mark.mcphc_requirements("DISC-8")
def test_input_schema_must_be_an_object_of_at_most_16_kib(host, http_mock):
    """Each `inputSchema` must be a JSON object of at most 16 KiB; otherwise the server is
    unavailable (size: UTF-8 length of the compact JSON; 15 KiB vs 17 KiB, also with
    multi-byte text: 15 KiB accepted, 18 KiB in 6,144 characters refused)."""
    for name, schema, label in (
        ("array", [{"type": "object"}], "an array"),
        ("string", "object", "a string"),
        ("null", None, "null"),
        ("boolean", True, "true"),
        ("missing", MISSING, "missing"),
    ):
        host.add_http(name, http_mock(bad_schema_spec(schema, label)))
    host.add_http("kib15", http_mock(schema_spec(15 * KIB)))
    host.add_http("kib17", http_mock(schema_spec(17 * KIB)))
    host.add_http("wide15", http_mock(wide_schema_spec(15 * KIB)))
    host.add_http("wide18", http_mock(wide_schema_spec(18 * KIB)))
    running = host.start()
    expect_available(running, "kib15", "DISC-8", "a 15 KiB schema", tools=2)
    expect_available(
        running,
        "wide15",
        "DISC-8",
        "a 15 KiB schema of 3-byte characters (30 KiB escaped)",
        tools=2,
    )
    for name, why in (
        ("array", "array schema"),
        ("string", "string schema"),
        ("null", "null schema"),
        ("boolean", "the schema `true`"),
        ("missing", "no schema"),
        ("kib17", "a 17 KiB schema"),
        ("wide18", "an 18 KiB schema of 6,144 characters"),
    ):
        expect_unavailable(running, name, "DISC-8", why)


@pytest.mark.mcphc_requirements("DISC-8")
def test_schema_size_at_the_exact_boundary_is_reported(host, http_mock, record_property):
    """INFO: how the client treats a schema of exactly 16 KiB and of 16 KiB + 1 byte, in
    ASCII and in 3-byte characters."""
    host.add_http("exact", http_mock(schema_spec(16 * KIB)))
    host.add_http("over", http_mock(schema_spec(16 * KIB + 1)))
    host.add_http("wide-exact", http_mock(wide_schema_spec(16 * KIB)))
    host.add_http("wide-over", http_mock(wide_schema_spec(16 * KIB + 1)))
    running = host.start()
    for name in ("exact", "over", "wide-exact", "wide-over"):
        status = running.status(name)
        record_property(
            f"schema_{name.replace('-', '_')}_accepted", bool(status and status.connected)
        )


# ---- DISC-9 ----------------------------------------------------------------------------------


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


def name_bulk_spec(total_bytes: int, name_bytes: int = 2 * KIB) -> ServerSpec:
    """Tools whose long names carry the bulk of a `total_bytes` definitions total: the names
    count too."""
    per_tool = definitions_size([Tool("000_" + "n" * name_bytes, "Named.")])
    count = total_bytes // per_tool
    tools = [Tool(f"{i:03d}_" + "n" * name_bytes, "Named.") for i in range(count)]
    missing = total_bytes - definitions_size(tools)
    assert missing >= 0
    tools[0].description += "d" * missing
    assert definitions_size(tools) == total_bytes
    return ServerSpec(name="names", tools=tools)


@pytest.mark.mcphc_requirements("DISC-9")
def test_tool_definitions_total_at_most_64_kib(host, http_mock):
    """One server's tool definitions (names, descriptions, schemas) total at most 64 KiB; over
    that the server is unavailable (63 KiB vs 65 KiB, in ASCII and in 3-byte characters; the
    bulk in descriptions, in schemas or in names; two servers of 63 KiB both register)."""
    host.add_http("defs63", http_mock(definitions_spec(63 * KIB)))
    host.add_http("wide63", http_mock(definitions_spec(63 * KIB, fill=WIDE)))
    host.add_http("defs65", http_mock(definitions_spec(65 * KIB)))
    host.add_http("wide65", http_mock(definitions_spec(65 * KIB, fill=WIDE)))
    host.add_http("schemas65", http_mock(schema_bulk_spec(65 * KIB)))
    host.add_http("names65", http_mock(name_bulk_spec(65 * KIB)))
    running = host.start()
    expect_available(running, "defs63", "DISC-9", "63 KiB of definitions")
    expect_available(
        running, "wide63", "DISC-9", "63 KiB of definitions in 3-byte characters (126 KiB escaped)"
    )
    for name, why in (
        ("defs65", "65 KiB of definitions"),
        ("wide65", "65 KiB of definitions in 22,000 characters"),
        ("schemas65", "65 KiB of definitions, most of it in schemas"),
        ("names65", "65 KiB of definitions, most of it in tool names"),
    ):
        expect_unavailable(running, name, "DISC-9", why)


@pytest.mark.mcphc_requirements("DISC-9")
def test_definitions_size_at_the_exact_boundary_is_reported(host, http_mock, record_property):
    """INFO: how the client treats definitions of exactly 64 KiB and of 64 KiB + 1 byte, in
    ASCII and in 3-byte characters."""
    host.add_http("exact", http_mock(definitions_spec(64 * KIB)))
    host.add_http("over", http_mock(definitions_spec(64 * KIB + 1)))
    host.add_http("wide-exact", http_mock(definitions_spec(64 * KIB, fill=WIDE)))
    host.add_http("wide-over", http_mock(definitions_spec(64 * KIB + 1, fill=WIDE)))
    running = host.start()
    for name in ("exact", "over", "wide-exact", "wide-over"):
        status = running.status(name)
        record_property(
            f"definitions_{name.replace('-', '_')}_accepted", bool(status and status.connected)
        )


# ---- DISC-10 ---------------------------------------------------------------------------------


def breakers() -> dict[str, ServerSpec]:
    """One server over each discovery limit (each also has ordinary tools)."""
    return {
        "pages17": pages_spec(17),
        "tools129": many_tools_spec(129),
        "kib17": schema_spec(17 * KIB),
        "defs65": definitions_spec(65 * KIB),
        "array": bad_schema_spec([], "an array"),
    }


@pytest.mark.mcphc_requirements("DISC-10")
def test_over_limit_server_tools_never_reach_the_model(host, http_mock, stdio_mock, model):
    """A server that breaks any discovery limit is registered not at all: none of its tools
    reaches the model (each limit broken over HTTP and over stdio)."""
    breaking = {}
    for name, spec in breakers().items():
        breaking[f"http-{name}"] = http_mock(spec)
        breaking[f"stdio-{name}"] = stdio_mock(spec)
    for name, mock in breaking.items():
        if name.startswith("http-"):
            host.add_http(name, mock)
        else:
            host.add_stdio(name, mock)
    docs = http_mock(healthy("docs"))
    local = stdio_mock(healthy("local"))
    host.add_http("docs", docs)
    host.add_stdio("local", local)
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
            "no tool of an over-limit server offered to the model (their ordinary tools "
            "included), over HTTP or stdio"
        ),
        actual=f"offered: {leaked[:12]}{' ...' if len(leaked) > 12 else ''} ({len(leaked)})",
    )
    absent = [
        name
        for name, mock in (("docs", docs), ("local", local))
        if not offered_function(body, mock, "query")
    ]
    check(
        not absent,
        ids="DISC-10",
        expected="the healthy servers' tools still offered (HTTP and stdio)",
        actual=(
            f"not offered: {absent}; offered functions: "
            f"{[f.get('name') for f, _ in offered_functions(body)][:20]}"
        ),
    )
