"""The named mocks exist, measure what their names say, and start with a journal."""

from __future__ import annotations

import ssl

import httpx
import pytest

from mcp_host_conformance.mocks.named import (
    CATALOG,
    KIB,
    definitions_size,
    definitions_spec,
    json_size,
    many_tools_spec,
    pages_spec,
    schema_spec,
    start,
)
from mcp_host_conformance.mocks.spec import MISSING, with_markers
from tests.mocks.conftest import Raw

ISSUE_NAMES = [
    "pages-16",
    "pages-17",
    "tools-128",
    "tools-129",
    "schema-array",
    "schema-string",
    "schema-missing",
    "schema-15k",
    "schema-17k",
    "defs-under-64k",
    "defs-over-64k",
    *[f"redirect-{s}-{at}" for s in (301, 302, 307, 308) for at in ("init", "call")],
    "oversize-list-json",
    "oversize-list-sse",
    "oversize-call-json",
    "oversize-call-sse",
    "flaky-reset",
    "flaky-close",
    "flaky-stall",
    "stall-initialize",
    "reject-401",
    "reject-403",
    "token-check",
    "healthy",
    "healthy-json",
    "tls",
    "tls-untrusted",
    "changing-tools",
    "rich-results",
    "stdio",
    "stdio-flood",
    "stdio-exit",
    "stdio-garbage",
    "stdio-oversize",
    "responses",
]


def test_every_named_mock_of_the_issue_is_in_the_catalog():
    assert sorted(set(ISSUE_NAMES) - set(CATALOG)) == []
    for entry in CATALOG.values():
        assert entry.summary and "\n" not in entry.summary
        assert entry.kind in ("http", "tls", "stdio", "responses")


def test_limit_builders_measure_exactly():
    """Sizes as served: every running mock adds its markers to descriptions and schemas."""
    for n in (15 * KIB, 16 * KIB, 17 * KIB):
        served = with_markers(schema_spec(n), "token").tools[0].definition()["inputSchema"]
        assert json_size(served) == n
    for total in (63 * KIB, 64 * KIB, 65 * KIB):
        spec = definitions_spec(total)
        assert definitions_size(spec.tools) == total
        assert definitions_size(with_markers(spec, "token").tools) == total
        assert all(json_size(t.input_schema) < 16 * KIB for t in spec.tools)
    assert len(many_tools_spec(129).tools) == 129
    spec = pages_spec(17)
    assert -(-len(spec.tools) // spec.page_size) == 17


def test_catalog_sizes_are_what_the_names_say():
    def schema_size(name):  # as served by a running (marking) mock
        served = with_markers(CATALOG[name].build(), "token")
        return json_size(served.tools[0].definition()["inputSchema"])

    assert schema_size("schema-15k") == 15 * KIB and schema_size("schema-17k") == 17 * KIB
    assert definitions_size(CATALOG["defs-under-64k"].build().tools) < 64 * KIB
    assert definitions_size(CATALOG["defs-over-64k"].build().tools) > 64 * KIB
    assert CATALOG["schema-missing"].build().tools[0].input_schema == MISSING
    assert len(CATALOG["tools-128"].build().tools) == 128


def test_definitions_size_counts_name_description_and_schema_only():
    spec = with_markers(many_tools_spec(1), "token")
    tool = spec.tools[0]
    tool.annotations = {"readOnlyHint": True}
    served = tool.definition()
    expected = json_size({k: served[k] for k in ("name", "description", "inputSchema")})
    assert definitions_size([tool]) == expected


def _pages(mock) -> int:
    client = Raw(mock)
    try:
        client.initialize()
        pages, cursor = 0, None
        while True:
            reply = client.request("tools/list", {"cursor": cursor} if cursor else None)
            pages += 1
            cursor = reply["result"].get("nextCursor")
            if not cursor:
                return pages
    finally:
        client.close()


@pytest.mark.parametrize("name, pages", [("pages-16", 16), ("pages-17", 17)])
def test_paging_mocks_page(name, pages):
    with start(name) as running:
        assert _pages(running.server) == pages


def test_redirect_mock_brings_its_own_target(tmp_path):
    with start("redirect-307-init") as running:
        response = httpx.post(running.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        assert response.status_code == 307
        assert (
            response.headers["location"] == running.target.url == running.describe()["redirect_to"]
        )
        assert running.target.journal.is_empty()
        assert running.describe()["target_journal"].endswith("/__journal")


def test_tls_entries_expose_the_trusted_ca():
    with start("tls") as trusted, start("tls-untrusted") as untrusted:
        assert trusted.url.startswith("https://") and trusted.ca_file
        assert untrusted.ca_file == trusted.ca_file
        context = ssl.create_default_context(cafile=trusted.ca_file)
        assert httpx.get(trusted.describe()["journal"], verify=context).json() == []
        with pytest.raises(httpx.ConnectError):
            httpx.get(untrusted.describe()["journal"], verify=context)


def test_stdio_entry_gives_a_command_and_a_journal_file(tmp_path):
    with start("stdio", tmp_path) as running:
        described = running.describe()
        assert (
            described["command"][0].endswith(("python", "python3"))
            or "python" in described["command"][0]
        )
        assert described["journal"].startswith(str(tmp_path))
    with pytest.raises(ValueError):
        start("stdio")


def test_responses_entry_serves_a_model():
    with start("responses") as running:
        described = running.describe()
        assert described["url"].endswith("/v1") and described["journal"].endswith("/__journal")


def test_unknown_name_is_a_clear_error():
    with pytest.raises(KeyError, match="python -m mcp_host_conformance.mocks list"):
        start("no-such-mock")


def test_every_http_entry_starts_and_answers_initialize():
    with httpx.Client(timeout=10) as client:
        _check_entries(client)


def _check_entries(client: httpx.Client) -> None:
    for entry in CATALOG.values():
        if entry.kind != "http" or entry.redirect_target or entry.name == "stall-initialize":
            continue
        with start(entry) as running:
            reply = client.post(
                running.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize"}
            )
            assert reply.status_code in (200, 401, 403), entry.name


@pytest.mark.parametrize(
    "name, variant",
    [
        ("sse-poll", "deliver"),
        ("sse-poll-stall", "stall"),
        ("sse-poll-error", "error"),
        ("sse-poll-close-again", "close-again"),
    ],
)
def test_polling_mocks_prime_and_close_each_call(name, variant):
    with start(name) as running, httpx.Client(timeout=5) as client:
        assert running.server.spec.misbehaviour.poll_call == variant
        accept = {"accept": "application/json, text/event-stream"}
        init = client.post(
            running.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize"}, headers=accept
        )
        session = {**accept, "mcp-session-id": init.headers["mcp-session-id"]}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hello"}}
        streamed = client.post(running.url, json=call, headers=session)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert streamed.text.startswith("id: ") and "retry: " in streamed.text
        assert '"id":2' not in streamed.text  # the answer waits for the resumption
