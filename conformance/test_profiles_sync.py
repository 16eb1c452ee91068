"""SYNC: adding a server verifies it (optional profile `verified-add`).

A host that claims verified-add connects when a server is added and lists its tools at
once; if that first sync fails, nothing is saved. "Nothing" is observed three ways, since a
host can half-save in any of them: the host's own list does not name the server, a start
shows no status for it (and the server hears nothing more), and no file under HOME names
its URL (not the configuration, not a cache, not a pins file). Every way the sync can fail
is tried (a closed port, a rejected token, each discovery limit broken, a private address
when the host also refuses those), and each limit's accepted side is saved, so a host that
refuses too much is caught as well as one that saves too much. The name rule (SYNC-2) is
checked at add the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_host_conformance.harness.cases.specs import closed_port_url
from mcp_host_conformance.harness.contract.adapter import HttpServer
from mcp_host_conformance.harness.sandbox.remote import RemoteListener
from mcp_host_conformance.harness.verdicts.outcomes import check
from mcp_host_conformance.mocks.named import (
    KIB,
    definitions_spec,
    many_tools_spec,
    pages_spec,
    schema_spec,
)
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

pytestmark = pytest.mark.mcphc_profile("verified-add")


def _add(host, server) -> tuple[bool, str]:
    """(saved without error, what the user saw or the error said)."""
    try:
        return True, host.add(server).text or ""
    except AssertionError:  # the harness's bound: the client hangs
        raise
    except Exception as exc:  # noqa: BLE001 - the adapter's way of saying "refused"
        return False, str(exc) or type(exc).__name__


def _add_mock(host, name: str, mock) -> tuple[bool, str]:
    host.bind(name, mock)
    return _add(host, HttpServer(name=name, url=mock.url))


def _files_naming(home: Path, needle: str) -> list[str]:
    found = []
    for path in sorted(home.rglob("*")):
        if path.is_file():
            try:
                if needle.encode() in path.read_bytes():
                    found.append(str(path.relative_to(home)))
            except OSError:
                continue
    return found


def _listed(host, names) -> list[str]:
    """Which of `names` the host's list of servers names (one listing)."""
    lines = (host.list().text or "").splitlines()
    return [
        name
        for name in names
        if any(name in line.split() or line.strip().startswith(name) for line in lines)
    ]


@pytest.mark.mcphc_requirements("SYNC-1")
def test_adding_a_server_lists_its_tools_at_once(host, http_mock, stdio_mock):
    """Adding a server lists its tools at once."""
    docs = http_mock(
        ServerSpec(tools=[Tool("alpha", "First."), Tool("beta", "Second.")], page_size=1)
    )
    local = stdio_mock(ServerSpec(tools=[Tool("gamma", "Third.")]))
    shown_http = host.add_http("docs", docs).text or ""
    lists_http = docs.journal.count("tools/list")
    shown_stdio = host.add_stdio("local", local).text or ""
    lists_stdio = local.journal.count("tools/list")

    check(
        lists_http >= 2,
        ids="SYNC-1",
        expected="the HTTP server received its tools/list (both pages) before add_server returned",
        actual=f"{lists_http} tools/list during the add (methods {docs.journal.methods()})",
    )
    check(
        lists_stdio >= 1,
        ids="SYNC-1",
        expected="the stdio server was started and listed before add_server returned",
        actual=f"{lists_stdio} tools/list during the add (methods {local.journal.methods()})",
    )
    missing = [t for t in ("alpha", "beta") if t not in shown_http]
    missing += ["gamma"] if "gamma" not in shown_stdio else []
    check(
        not missing,
        ids="SYNC-1",
        expected="what the add showed names the tools it listed",
        actual=f"not named: {missing}; shown {shown_http[:200]!r} / {shown_stdio[:200]!r}",
    )
    check(
        _listed(host, ["docs", "local"]) == ["docs", "local"],
        ids="SYNC-1",
        expected="both servers saved (the host's list names them)",
        actual=f"listing {host.list().text[:300]!r}",
    )


FAILING = {
    "closed-port": None,  # no server at all
    "rejected-token": ServerSpec(tools=[Tool("t")], misbehaviour=Misbehaviour(reject_status=401)),
    "pages-17": pages_spec(17),
    "tools-129": many_tools_spec(129),
    "tools-129-paged": ServerSpec(tools=many_tools_spec(129).tools, page_size=50),
    "schema-17k": schema_spec(17 * KIB),
    "defs-65k": definitions_spec(65 * KIB),
}
ACCEPTED = {
    "pages-16": pages_spec(16),
    "tools-128": many_tools_spec(128),
    "schema-15k": schema_spec(15 * KIB),
    "defs-63k": definitions_spec(63 * KIB),
}


@pytest.mark.mcphc_requirements("SYNC-1")
def test_a_failed_first_sync_saves_nothing(host, http_mock, case, network, description):
    """If the first sync fails (wrong URL, private address, rejected token, a broken discovery
    limit) nothing is saved."""
    urls: dict[str, str] = {}
    mocks = {}
    for name, spec in FAILING.items():
        if spec is None:
            urls[name] = closed_port_url()
        else:
            mocks[name] = http_mock(spec)
            urls[name] = mocks[name].url
    if network.isolated and "private-address-refusal" in description.profiles:
        private = RemoteListener(network.private_addresses[0])
        case.mocks.append(private)
        urls["private"] = f"https://{private.address}:{private.port}/mcp"

    outcomes = {name: _add(host, HttpServer(name=name, url=url)) for name, url in urls.items()}
    tried = {name: mock.journal.count("initialize") for name, mock in mocks.items()}
    check(
        all(tried.values()),
        ids="SYNC-1",
        expected="each server was connected to during its add (the first sync happened)",
        actual=f"initialize received per server: {tried}",
    )
    saved = [name for name, (ok, _text) in outcomes.items() if ok]
    check(
        not saved,
        ids="SYNC-1",
        expected="every add whose first sync fails is refused",
        actual=f"accepted without error: {saved}",
    )
    listed = _listed(host, urls)
    check(
        not listed,
        ids="SYNC-1",
        expected="the host's list names none of the servers whose first sync failed",
        actual=f"listed: {listed}",
    )
    running = host.start()
    running.stop()
    statuses = [s.name for s in running.statuses if s.name in urls]
    check(
        not statuses,
        ids="SYNC-1",
        expected="a start shows no status for a server that was never saved",
        actual=f"status lines for {statuses}",
    )
    after = {name: mock.journal.count("initialize") - tried[name] for name, mock in mocks.items()}
    check(
        not any(after.values()),
        ids="SYNC-1",
        expected="no server that was never saved is connected to at start",
        actual=f"initialize at start per server: {after}",
    )
    files = {name: _files_naming(host.home, urls[name]) for name in urls}
    named = {name: found for name, found in files.items() if found}
    check(
        not named,
        ids="SYNC-1",
        expected="no file under HOME names the URL of a server whose first sync failed",
        actual=f"named in {named}",
    )


@pytest.mark.mcphc_requirements("SYNC-1")
def test_a_server_at_each_limit_is_saved(host, http_mock):
    """A first sync within every discovery limit succeeds: the server is saved and listed."""
    refused = {}
    for name, spec in ACCEPTED.items():
        ok, text = _add_mock(host, name, http_mock(spec))
        if not ok:
            refused[name] = text[:200]
    check(
        not refused,
        ids="SYNC-1",
        expected="16 pages, 128 tools, a 15 KiB schema and 63 KiB of definitions are saved",
        actual=f"refused: {refused}",
    )
    listed = _listed(host, ACCEPTED)
    check(
        len(listed) == len(ACCEPTED),
        ids="SYNC-1",
        expected="each of them in the host's list",
        actual=f"listed: {listed}",
    )


REFUSED_NAMES = ("Docs", "my_docs", "a.b", "my docs", "dócs", "x" * 65)
ACCEPTED_NAMES = ("a-1", "x", "n" * 64)


@pytest.mark.mcphc_requirements("SYNC-2")
def test_only_short_lowercase_names_are_saved(host, http_mock):
    """A server's name is a short lowercase name: lowercase letters, digits and `-` (at most
    64); any other name is refused when the server is added, and nothing is saved."""
    server = http_mock(ServerSpec(tools=[Tool("t", "A tool.", reply=Reply.text("ok"))]))
    refused = {name: _add(host, HttpServer(name=name, url=server.url)) for name in REFUSED_NAMES}
    accepted = {name: _add(host, HttpServer(name=name, url=server.url)) for name in ACCEPTED_NAMES}
    wrongly_saved = [name for name, (ok, _t) in refused.items() if ok]
    check(
        not wrongly_saved,
        ids="SYNC-2",
        expected="names with capitals, _, ., a space, a non-ASCII letter or 65 characters refused",
        actual=f"saved: {wrongly_saved}",
    )
    wrongly_refused = {name: text[:160] for name, (ok, text) in accepted.items() if not ok}
    check(
        not wrongly_refused,
        ids="SYNC-2",
        expected="a-1, x and a 64-character name saved (control)",
        actual=f"refused: {wrongly_refused}",
    )
    running = host.start()
    running.stop()
    shown = {s.name for s in running.statuses}
    check(
        not shown & set(REFUSED_NAMES) and set(ACCEPTED_NAMES) <= shown,
        ids="SYNC-2",
        expected="a start shows the three accepted servers and none of the refused names",
        actual=f"status lines for {sorted(shown)}",
    )
