"""The fixtures a conformance case uses (imported by the plugin; see docs/writing-cases.md).

Strategy: one `Case` object per test owns everything the test starts (the temp HOME and
project, the mock model, the HTTP and stdio mocks, the client) and tears it all down in a
fixed order whatever the test did: the client first (so it can still talk to its mocks
while stopping), then any stdio process the client left behind (harness cleanup, not a
check: STDIO-5 is checked by its case before teardown), then the mocks and the model,
then the temp dirs. Case dirs live under the process's run root and files the mocks keep
for the whole process (a TLS CA) are tracked, so SIGTERM or a crash leaves nothing behind
either (`mcp_host_conformance.harness.run.cleanup`). Mock classes are imported lazily, so
loading the plugin in an unrelated pytest run costs nothing; cases see them through the
protocols of `mcp_host_conformance.harness.cases.mock_contract`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mcp_host_conformance.harness.cases.canaries import REGISTRY, Secrets
from mcp_host_conformance.harness.cases.hostrun import Host, Timeouts
from mcp_host_conformance.harness.cases.items import MARK_PROFILE
from mcp_host_conformance.harness.cases.lures import host_project_files, lure_spec, plant
from mcp_host_conformance.harness.cases.mock_contract import (
    Closable,
    HttpServerMock,
    ModelService,
    StdioServerMock,
)
from mcp_host_conformance.harness.contract.adapter import Adapter, Description
from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.oauth.browser_watch import browser_watch
from mcp_host_conformance.harness.run.cleanup import RESOURCES
from mcp_host_conformance.harness.run.client_under_test import (
    client_adapter,
    client_description,
    timeout_scale,
)
from mcp_host_conformance.harness.run.orphans import become_subreaper, reap_if_ours
from mcp_host_conformance.harness.run.starvation import clock_boost
from mcp_host_conformance.harness.sandbox.network import Network
from mcp_host_conformance.harness.sandbox.network import observe as observe_network

if TYPE_CHECKING:
    from mcp_host_conformance.mocks.http_server import HttpMock
    from mcp_host_conformance.mocks.responses import MockResponses
    from mcp_host_conformance.mocks.spec import ServerSpec
    from mcp_host_conformance.mocks.stdio_server import StdioMock

__all__ = [  # what the plugin registers: the fixtures (and the Case type they share)
    "Case",
    "Lures",
    "_lures",
    "_second_process",
    "adapter",
    "case",
    "description",
    "home",
    "host",
    "http_mock",
    "model",
    "network",
    "project",
    "restarted_host",
    "secrets",
    "stdio_mock",
    "timeouts",
]

HttpMockFactory = Callable[..., "HttpMock"]  # http_mock(spec, tls=None)
StdioMockFactory = Callable[["ServerSpec"], "StdioMock"]  # stdio_mock(spec)


class Lures:
    """The run's project-configuration lures (CFG-2), one remote and one local server named
    only in the project files every case's working directory holds (`cases.lures`); one
    pair per process, whose requests during a case are that case's (the rule monitors)."""

    def __init__(self, root: Path) -> None:
        from mcp_host_conformance.mocks.http_server import HttpMock
        from mcp_host_conformance.mocks.stdio_server import StdioMock

        self.remote = HttpMock(lure_spec("project-remote")).start()
        self.local = StdioMock(lure_spec("project-local"), root)
        self.own: dict[str, str] | None = None  # the host's own project files, asked once

    def plant(self, project: Path, declared: Sequence[str], adapter: Adapter, bound: float) -> None:
        if self.own is None:
            self.own = host_project_files(adapter, str(self.remote.url), self.local.command, bound)
        plant(project, declared, str(self.remote.url), self.local.command, self.own)

    def reached_since(self, began: float) -> list[str]:
        methods = [
            str(e.method) for e in self.remote.journal.entries(kind="rpc") if e.time >= began
        ]
        found = [f"the remote lure received {', '.join(dict.fromkeys(methods))}"] if methods else []
        found += [
            "the local lure was started"
            for e in self.local.journal.entries(kind="process")
            if e.time >= began
        ]
        return found

    def close(self) -> None:
        self.remote.close()
        _kill_leftovers(self.local)


class Case:
    """Everything one test started, torn down in order at the end (see the module comment)."""

    def __init__(self, root: Path, lures: Lures | None = None) -> None:
        self.root = root
        self.lures = lures
        self.began = time.time()
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir(mode=0o700)
        self.project.mkdir()
        self.hosts: list[Host] = []
        self.mocks: list[Closable] = []  # closed last-started first
        # processes serving the client for this case only (a per-case restarted host):
        # closed after its hosts stopped and its mocks closed
        self.adapters: list[Adapter] = []
        self.stdio_mocks: list[StdioServerMock] = []
        self.model: ModelService | None = None
        self.secrets = Secrets()  # the case's canaries (the `secrets` fixture)
        self._count = 0
        self._stop_problems: list[BaseException] = []
        self._stopped = False
        watch = browser_watch()
        self._browsers = (watch, watch.mark()) if watch is not None else None

    def workdir(self, prefix: str) -> Path:
        self._count += 1
        path = self.root / f"{prefix}-{self._count}"
        path.mkdir()
        return path

    def stop_hosts(self) -> list[BaseException]:
        """Stop every session still running (once): what a case left running ends as its user
        would end it, before the monitors read what the case made."""
        if not self._stopped:
            self._stopped = True
            interrupted: KeyboardInterrupt | None = None
            for host in self.hosts:
                try:
                    self._stop_problems.extend(host.stop_all())
                except KeyboardInterrupt as exc:  # every host stopped first, then the run stops
                    interrupted = exc
            if interrupted is not None:
                raise interrupted
        return self._stop_problems

    def observed(self, profiles: frozenset[str], grace: float) -> Observed:
        """What the case made, for the rule monitors (call `stop_hosts` first)."""
        record = Observed(
            hosts=list(self.hosts),
            mocks=[*self.mocks, *self.stdio_mocks],
            model=self.model,
            secrets=self.secrets,
            home=self.home,
            project=self.project,
            profiles=profiles,
            grace=grace,
            all_stopped=not self._stop_problems,
        )
        if self._browsers is not None:
            watch, mark = self._browsers
            record.browsers_opened = watch.opened_since(mark)
        if self.lures is not None:
            record.lures_reached = self.lures.reached_since(self.began)
        return record

    def close(self) -> list[BaseException]:
        problems: list[BaseException] = list(self.stop_hosts())
        for mock in self.stdio_mocks:
            _kill_leftovers(mock)
        for closable in reversed(self.mocks):
            try:
                closable.close()
            except Exception as exc:  # noqa: BLE001 - keep closing the others
                problems.append(exc)
        for adapter in self.adapters:
            close = getattr(adapter, "close", None)
            try:
                if callable(close):
                    close()
            except Exception as exc:  # noqa: BLE001 - keep closing the others
                problems.append(exc)
        shutil.rmtree(self.root, ignore_errors=True)
        return problems


def _kill_leftovers(mock: StdioServerMock) -> None:
    """Kill stdio mock processes still alive after the client stopped (their process group
    when they lead one; never our own group)."""
    try:
        entries = mock.process_entries()
    except Exception:  # noqa: BLE001 - a journal that cannot be read has nothing to kill
        return
    own_group = os.getpgrp()
    for entry in entries:
        pid, pgid = entry.pid, entry.pgid
        if not pid:
            continue
        try:
            if pgid and pgid != own_group and pgid == pid:
                os.killpg(pgid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        # Reap it if it is ours: an in-process client's server, or one a client left
        # unreaped (it was handed to this process, its subreaper), and any child it left.
        children = [
            int(e.extra["pid"])
            for e in mock.journal.entries(kind="event")
            if e.extra.get("event") == "child-spawned" and isinstance(e.extra.get("pid"), int)
        ]
        for ours in (pid, *children):
            reap_if_ours(ours)


# ---- session-wide --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def adapter(pytestconfig: pytest.Config) -> Adapter:
    """The adapter of the client under test (--client / --client-cmd)."""
    return client_adapter(pytestconfig)


@pytest.fixture(scope="session")
def description(pytestconfig: pytest.Config) -> Description:
    """The client's describe(): name, version, profiles, default timeouts, project config files."""
    return client_description(pytestconfig)


@pytest.fixture
def timeouts(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> Timeouts:
    """Scaled timeouts: connect 1.5 s and call 1.0 s given to the client, wait 5 s for journal
    waits, grace 0.3 s to watch for what must not happen; all times --timeout-scale (and
    three times that when a case runs again after failing on a starved clock:
    `harness.run.starvation`)."""
    return Timeouts.scaled(timeout_scale(pytestconfig) * clock_boost(request.node))


@pytest.fixture(scope="session")
def network() -> Network:
    """The network the run sees (`mcp_host_conformance.harness.sandbox.network.Network`): `isolated`
    (sealed: loopback, `remote_address` and `private_addresses` only) or not, with the reason."""
    return observe_network()


# ---- per case ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def _lures(description: Description) -> Iterator[Lures]:
    root = Path(tempfile.mkdtemp(prefix="mcphc-lures-", dir=RESOURCES.temp_root()))
    lures = Lures(root)
    yield lures
    lures.close()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def case(
    _lures: Lures, description: Description, adapter: Adapter, timeouts: Timeouts
) -> Iterator[Case]:
    # whatever a host leaves unreaped when it exits comes back to this process, not init
    # (harness.orphans): STDIO-5 then sees it on any machine, and teardown reaps it
    become_subreaper()
    root = Path(tempfile.mkdtemp(prefix="mcphc-", dir=RESOURCES.temp_root()))
    owner = Case(root, _lures)
    try:
        _lures.plant(
            owner.project, description.project_config_files, adapter, timeouts.config_bound()
        )
    except BaseException:
        owner.close()
        raise
    yield owner
    problems = owner.close()
    hangs = [p for p in problems if isinstance(p, AssertionError)]
    if hangs:
        raise hangs[0]


@pytest.fixture
def home(case: Case) -> Path:
    """The user's home directory for this case (empty, mode 0700)."""
    return case.home


@pytest.fixture
def project(case: Case) -> Path:
    """The working directory for this case (a project the client must not read MCP config from)."""
    return case.project


@pytest.fixture
def model(case: Case) -> ModelService:
    """A mock Responses service (`mcp_host_conformance.mocks.responses.MockResponses`),
    started for this case; its API key never appears in a report."""
    from mcp_host_conformance.mocks.responses import MockResponses

    service: MockResponses = MockResponses()
    service.start()
    case.mocks.append(service)
    case.model = service
    REGISTRY.add(service.api_key, "model API key")
    return service


def _track_ca(mock: HttpServerMock) -> None:
    # The mocks keep one CA directory per process for every TLS mock: removed at run end.
    if mock.ca_file:
        RESOURCES.track_path(Path(mock.ca_file).parent)


@pytest.fixture
def http_mock(case: Case) -> HttpMockFactory:
    """Factory: `http_mock(spec, tls=None)` starts an HttpMock (tls: None|"trusted"|"untrusted")."""
    from mcp_host_conformance.mocks.http_server import HttpMock

    def start(spec: ServerSpec, tls: str | None = None) -> HttpMock:
        mock = HttpMock(spec, tls=tls)
        case.mocks.append(mock)
        mock.start()
        _track_ca(mock)
        return mock

    return start


@pytest.fixture
def stdio_mock(case: Case) -> StdioMockFactory:
    """Factory: `stdio_mock(spec)` prepares a StdioMock in its own work dir
    (the client starts it)."""
    from mcp_host_conformance.mocks.stdio_server import StdioMock

    def prepare(spec: ServerSpec) -> StdioMock:
        mock = StdioMock(spec, case.workdir("stdio"))
        case.stdio_mocks.append(mock)
        if isinstance(mock, Closable):
            case.mocks.append(mock)
        return mock

    return prepare


@pytest.fixture
def host(
    request: pytest.FixtureRequest,
    case: Case,
    adapter: Adapter,
    description: Description,
    model: ModelService,
    timeouts: Timeouts,
) -> Host:
    """The client under test in this case's HOME and project, with `model` as its model."""
    if model.url is None:  # pragma: no cover - the model fixture starts it
        raise RuntimeError("the mock model is not started")
    owner = Host(
        adapter=adapter,
        home=case.home,
        project=case.project,
        model_url=model.url,
        model_key=model.api_key,
        timeouts=timeouts,
        model=model,
        defaults=(description.connect_timeout, description.call_timeout),
        profiles=frozenset(description.profiles),
        case_profiles=frozenset(
            str(profile)
            for mark in request.node.iter_markers(MARK_PROFILE)
            for profile in mark.args
        ),
    )
    case.hosts.append(owner)
    return owner


@pytest.fixture(scope="session")
def _second_process(pytestconfig: pytest.Config) -> Iterator[list[Adapter]]:
    """The client under test in a second process of its own
    (`mcp_host_conformance.harness.run.fresh_process`), started when a case first restarts the
    host and kept for the run: one spawn per worker, not per case, since what matters is
    that it is not the process that wrote the session."""
    started: list[Adapter] = []
    yield started
    for adapter in started:
        close = getattr(adapter, "close", None)
        if callable(close):
            close()


@pytest.fixture
def restarted_host(
    pytestconfig: pytest.Config, case: Case, host: Host, _second_process: list[Adapter]
) -> Callable[[], Host]:
    """Factory: `restarted_host()` is `host` (same HOME, project, model and records of what
    the user saw) driven by the client under test in another process of its own (as
    `fresh_process.restarted` makes one, shared by the cases of this worker, or one per case
    with MCP_HOST_CONFORMANCE_RESTART_PER_CASE set), for rules that must hold across a
    restarted host process: a session reopened, a call never resent. Its sessions are
    stopped with the case."""
    from mcp_host_conformance.harness.run import fresh_process

    def restart() -> Host:
        if fresh_process.per_case():
            # this case's own, closed with it (Case.close), shared by its restarts
            adapter = fresh_process.own(pytestconfig, case.adapters)
        else:
            adapter = fresh_process.shared(pytestconfig, _second_process)
        again = dataclasses.replace(host, adapter=adapter)
        case.hosts.append(again)
        return again

    return restart


@pytest.fixture
def secrets(case: Case) -> Secrets:
    """Canary secrets: `secrets.new("label")`, then `secrets.found_in(...)` and friends (the
    case's own, which the rule monitors know as this case's secrets)."""
    return case.secrets
