"""CFG: configuration and consent.

Strategy: configuration is checked by its effects on live mocks (a server that must not be
contacted keeps an empty journal), by the files the client reported writing (their mode),
and by what the user saw (no secret in a listing). Nothing here reads the client's config
format: it is the client's own business.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from mcp_host_conformance.harness.observe import stays_quiet
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

COMMON_PROJECT_FILES = (".mcp.json", "mcp.json", ".vscode/mcp.json", ".cursor/mcp.json")


def lure_spec(name: str) -> ServerSpec:
    return ServerSpec(
        name=name, tools=[Tool("lure", "Must never be discovered.", reply=Reply.text("x"))]
    )


def ordinary_spec(name: str = "docs") -> ServerSpec:
    return ServerSpec(
        name=name, tools=[Tool("query", "Searches the docs.", reply=Reply.text("ok"))]
    )


@pytest.mark.requirements("CFG-1")
def test_adding_a_server_does_not_connect(host, http_mock, stdio_mock, description, timeouts):
    """Adding a server to the configuration does not connect to it."""
    if "verified-add" in description.profiles:
        pytest.skip("not applicable: the verified-add profile replaces CFG-1 (SYNC-1)")
    remote = http_mock(ordinary_spec("remote"))
    local = stdio_mock(ordinary_spec("local"))
    host.add_http("remote", remote)
    host.add_stdio("local", local)

    contacted = stays_quiet(remote.journal, timeouts.grace)
    check(
        not contacted,
        ids="CFG-1",
        expected="no request to the HTTP server after add_server",
        actual=f"{len(contacted)} request(s) arrived: {remote.journal.methods()}",
    )
    started = local.journal.entries()
    check(
        not started,
        ids="CFG-1",
        expected="the stdio server's command not run by add_server",
        actual=f"the stdio server ran and recorded {len(started)} journal entries",
    )


def _project_config(url: str, command: list[str]) -> str:
    # Both common shapes (mcpServers for Claude/Cursor style, servers for VS Code style),
    # with a remote and a local server, so that any reader of any of them takes the bait.
    servers = {
        "project-remote": {"type": "http", "url": url},
        "project-local": {"type": "stdio", "command": command[0], "args": command[1:]},
    }
    return json.dumps({"mcpServers": servers, "servers": servers}, indent=2)


@pytest.mark.requirements("CFG-2")
def test_project_configuration_is_never_read(
    host, project, http_mock, stdio_mock, model, description, timeouts
):
    """Servers are configured only in the user's home directory; MCP configuration found in
    the working directory (a project) is never read."""
    remote_lure = http_mock(lure_spec("project-remote"))
    local_lure = stdio_mock(lure_spec("project-local"))
    text = _project_config(remote_lure.url, local_lure.command)
    names = list(COMMON_PROJECT_FILES) + [
        n for n in description.project_config_files if n not in COMMON_PROJECT_FILES
    ]
    for name in names:
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    host.add_http("docs", http_mock(ordinary_spec()))

    running = host.start()
    model.script([Step.text("hello")])
    running.ask("hello")
    running.stop()

    contacted = stays_quiet(remote_lure.journal, timeouts.grace)
    check(
        not contacted,
        ids="CFG-2",
        expected=f"the server named only in project files ({', '.join(names)}) never contacted",
        actual=f"it received {len(contacted)} request(s): {remote_lure.journal.methods()}",
    )
    check(
        not local_lure.journal.entries(),
        ids="CFG-2",
        expected="the stdio server named only in project files never started",
        actual="its process started",
    )
    listed = sorted(s.name for s in running.statuses if s.name.startswith("project-"))
    check(
        not listed,
        ids="CFG-2",
        expected="no status for project servers",
        actual=f"statuses for {listed}",
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.requirements("CFG-3")
def test_credential_file_is_private(host, home, http_mock, stdio_mock, secrets):
    """The configuration file that holds credentials is private: mode 0600 (its directory not
    group/world writable)."""
    token = secrets.new("header")
    env_value = secrets.new("env")
    host.add_http(
        "remote", http_mock(ordinary_spec("remote")), headers={"Authorization": f"Bearer {token}"}
    )
    host.add_stdio("local", stdio_mock(ordinary_spec("local")), env={"API_KEY": env_value})

    reported = [p for p in host.config_paths if p.is_file()]
    holding = [Path(hit.split(": ", 1)[0]) for hit in secrets.found_in_files([home])]
    files = sorted(set(reported) | set(holding))
    check(
        bool(files),
        ids="CFG-3",
        expected=(
            "add_server reports the file(s) it wrote, or a file under HOME holds the credential"
        ),
        actual=(
            f"reported paths {[str(p) for p in host.config_paths]}; "
            "no file holding the credential found"
        ),
    )
    problems = []
    for path in files:
        mode = _mode(path)
        if mode & 0o077:
            problems.append(f"{path} has mode {mode:04o}")
        parent = _mode(path.parent)
        if parent & 0o022:
            problems.append(f"its directory {path.parent} has mode {parent:04o}")
    check(
        not problems,
        ids="CFG-3",
        expected=(
            "credential files mode 0600 (no group/other access), "
            "directories not group/world writable"
        ),
        actual="; ".join(problems),
    )


@pytest.mark.requirements("CFG-4")
def test_listing_shows_no_secret(host, http_mock, stdio_mock, secrets):
    """Listing servers shows names and destinations but never a header or environment value."""
    token = secrets.new("header", special=True)
    env_value = secrets.new("env")
    remote = http_mock(ordinary_spec("remote"))
    host.add_http("remote", remote, headers={"X-Api-Key": token})
    host.add_stdio("local", stdio_mock(ordinary_spec("local")), env={"API_KEY": env_value})

    listing = host.list().text
    leaks = secrets.found_in(listing, "listing")
    check(
        not leaks,
        ids="CFG-4",
        expected="no configured secret in the listing",
        actual="; ".join(leaks),
    )
    missing = [piece for piece in ("remote", "local", remote.url) if piece not in listing]
    check(
        not missing,
        ids="CFG-4",
        expected="the listing names each server and its destination",
        actual=f"missing from the listing: {missing}",
    )


@pytest.mark.requirements("CFG-5")
def test_removed_server_is_not_connected_at_next_start(host, http_mock, model, timeouts):
    """Removing a server stops it being connected at the next start."""
    gone = http_mock(ordinary_spec("gone"))
    kept = http_mock(ordinary_spec("kept"))
    host.add_http("gone", gone)
    host.add_http("kept", kept)
    first = host.start()
    first.stop()
    host.remove("gone")
    gone.journal.clear()
    kept.journal.clear()

    second = host.start()
    status = second.status("kept")
    check(
        status is not None and status.connected,
        ids="CFG-5",
        expected="the remaining server connected at the next start",
        actual=f"its status: {status}",
    )
    contacted = stays_quiet(gone.journal, timeouts.grace)
    check(
        not contacted,
        ids="CFG-5",
        expected="the removed server not contacted at the next start",
        actual=f"it received {len(contacted)} request(s): {gone.journal.methods()}",
    )
    check(
        second.status("gone") is None or not second.status("gone").connected,
        ids="CFG-5",
        expected="no connected status for the removed server",
        actual=f"{second.status('gone')}",
    )
