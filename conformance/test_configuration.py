"""CFG: configuration and consent.

Strategy: configuration is checked by its effects on live mocks (a server that must not be
contacted keeps an empty journal), by the files the client reported writing (their mode),
and by what the user saw (no secret in a listing). Nothing here reads the client's config
format: it is the client's own business. Each rule is also checked where a host written
elsewhere would slip: project files read only when HOME has no server, or found above the
working directory (CFG-2); modes after a server was removed, and every directory between
HOME and the file (CFG-3); values of headers and variables whose names do not look secret
(CFG-4); a removed stdio server, and a next start in a new host process (CFG-5). CFG-6 has
a module of its own (test_configuration_by_model.py).
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mcp_host_conformance.harness.cases.lures import host_project_files, lure_spec, plant
from mcp_host_conformance.harness.cases.observe import stays_quiet
from mcp_host_conformance.harness.run.fresh_process import restarted
from mcp_host_conformance.harness.verdicts.outcomes import check
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool


def ordinary_spec(name: str = "docs") -> ServerSpec:
    return ServerSpec(
        name=name, tools=[Tool("query", "Searches the docs.", reply=Reply.text("ok"))]
    )


@pytest.mark.mcphc_requirements("CFG-1")
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


def plant_lures(project: Path, adapter, description, remote_lure, local_lure, timeouts):
    """The case's own lures, in the suite's shapes and in the host's own (when its adapter
    can write it: `project_config`); the names written."""
    own = host_project_files(adapter, remote_lure.url, local_lure.command, timeouts.config_bound())
    return plant(
        project, description.project_config_files, remote_lure.url, local_lure.command, own
    )


@pytest.mark.mcphc_requirements("CFG-2")
def test_project_configuration_is_never_read(
    host, project, adapter, http_mock, stdio_mock, model, description, timeouts
):
    """Servers are configured only in the user's home directory; MCP configuration found in
    the working directory (a project) is never read: in the shapes common hosts read, and in
    the host's own (its adapter's `project_config`)."""
    remote_lure = http_mock(lure_spec("project-remote"))
    local_lure = stdio_mock(lure_spec("project-local"))
    names = plant_lures(project, adapter, description, remote_lure, local_lure, timeouts)
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


@pytest.mark.mcphc_requirements("CFG-2")
def test_project_configuration_is_never_read_even_without_home_servers(
    host, project, adapter, http_mock, stdio_mock, model, description, timeouts
):
    """Servers are configured only in the user's home directory; MCP configuration found in
    the working directory (a project) is never read: also when HOME configures no server at
    all, and with the project files in the working directory and in its parent."""
    remote_lure = http_mock(lure_spec("project-remote"))
    local_lure = stdio_mock(lure_spec("project-local"))
    cwd = project / "src"
    cwd.mkdir()
    for base in (cwd, project):
        plant_lures(base, adapter, description, remote_lure, local_lure, timeouts)

    running = host.start(cwd=cwd)
    model.script([Step.text("hello")])
    turn = running.ask("hello")
    running.stop()

    check(
        turn.question_sent,
        ids="CFG-2",
        expected="a host with no server configured still starts and sends the question",
        actual="the question was not sent",
    )
    contacted = stays_quiet(remote_lure.journal, timeouts.grace)
    check(
        not contacted,
        ids="CFG-2",
        expected=(
            "with no server in HOME, the server named only in project files (in the working "
            "directory and its parent) never contacted"
        ),
        actual=f"it received {len(contacted)} request(s): {remote_lure.journal.methods()}",
    )
    check(
        not local_lure.journal.entries(),
        ids="CFG-2",
        expected="the stdio server named only in project files never started",
        actual="its process started",
    )
    listed = sorted(s.name for s in running.statuses)
    check(
        not listed,
        ids="CFG-2",
        expected="no status line: no server is configured in HOME",
        actual=f"statuses for {listed}",
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _loose_modes(files: list[Path], home: Path) -> list[str]:
    """What is not private: a file readable or writable by group or others, or a directory
    between HOME and it (HOME included) that group or others can write to."""
    problems = []
    for path in files:
        mode = _mode(path)
        if mode & 0o077:
            problems.append(f"{path} has mode {mode:04o}")
        for parent in path.parents:
            if not parent.is_relative_to(home):
                break
            if _mode(parent) & 0o022:
                problems.append(f"its directory {parent} has mode {_mode(parent):04o}")
    return list(dict.fromkeys(problems))


@pytest.mark.mcphc_requirements("CFG-3")
def test_credential_file_is_private(host, home, http_mock, stdio_mock, secrets):
    """The configuration file that holds credentials is private: mode 0600 (its directory not
    group/world writable), also after another server was added and one removed (the file
    rewritten), with no directory between HOME and it open to others."""
    token = secrets.new("header")
    env_value = secrets.new("env")
    host.add_http(
        "remote", http_mock(ordinary_spec("remote")), headers={"Authorization": f"Bearer {token}"}
    )
    host.add_stdio("local", stdio_mock(ordinary_spec("local")), env={"API_KEY": env_value})
    host.add_http("spare", http_mock(ordinary_spec("spare")))
    host.remove("spare")

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
    problems = _loose_modes(files, home)
    check(
        not problems,
        ids="CFG-3",
        expected=(
            "credential files mode 0600 (no group/other access) after adding and removing "
            "servers, directories up to HOME not group/world writable"
        ),
        actual="; ".join(problems),
    )


@pytest.mark.mcphc_requirements("CFG-4")
def test_listing_shows_no_secret(host, http_mock, stdio_mock, secrets):
    """Listing servers shows names and destinations but never a header or environment value:
    whatever the header's or variable's name (an innocent-looking name holds a secret too),
    and a token after an auth scheme."""
    token = secrets.new("header", special=True)
    bearer = secrets.new("bearer")
    tenant = secrets.new("tenant")
    env_value = secrets.new("env")
    database = secrets.new("database")
    remote = http_mock(ordinary_spec("remote"))
    headers = {"X-Api-Key": token, "Authorization": f"Bearer {bearer}", "X-Tenant": tenant}
    host.add_http("remote", remote, headers=headers)
    env = {"API_KEY": env_value, "DATABASE_URL": f"postgres://app:{database}@db/app"}
    host.add_stdio("local", stdio_mock(ordinary_spec("local")), env=env)

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


def _check_next_start(second, gone, gone_local, when: str) -> None:
    status = second.status("kept")
    check(
        status is not None and status.connected,
        ids="CFG-5",
        expected=f"the remaining server connected at the next start ({when})",
        actual=f"its status: {status}",
    )
    contacted = gone.journal.entries()  # the start and its stop are over: nothing comes later
    check(
        not contacted,
        ids="CFG-5",
        expected=f"the removed HTTP server not contacted at the next start ({when})",
        actual=f"it received {len(contacted)} request(s): {gone.journal.methods()}",
    )
    started = gone_local.journal.entries(kind="process")
    check(
        not started,
        ids="CFG-5",
        expected=f"the removed stdio server not started at the next start ({when})",
        actual=f"its process started {len(started)} time(s)",
    )
    for name in ("gone", "gone-local"):
        status = second.status(name)
        check(
            status is None or not status.connected,
            ids="CFG-5",
            expected=f"no connected status for the removed server {name} ({when})",
            actual=f"{status}",
        )


@pytest.mark.mcphc_requirements("CFG-5")
def test_removed_server_is_not_connected_at_next_start(
    host, http_mock, stdio_mock, model, pytestconfig
):
    """Removing a server stops it being connected at the next start: an HTTP and a stdio
    server, at the next start of the same host process and of a new one."""
    gone = http_mock(ordinary_spec("gone"))
    kept = http_mock(ordinary_spec("kept"))
    gone_local = stdio_mock(ordinary_spec("gone-local"))
    host.add_http("gone", gone)
    host.add_http("kept", kept)
    host.add_stdio("gone-local", gone_local)
    first = host.start()
    first.stop()
    host.remove("gone")
    host.remove("gone-local")
    for mock in (gone, kept, gone_local):
        mock.journal.clear()

    second = host.start()
    second.stop()
    _check_next_start(second, gone, gone_local, "same host process")
    with restarted(host, pytestconfig) as fresh:
        third = fresh.start()
        third.stop()
        _check_next_start(third, gone, gone_local, "a new host process")
