"""The fixtures a conformance case uses (imported by the plugin; see docs/writing-cases.md).

Strategy: one `Case` object per test owns everything the test starts (the temp HOME and
project, the mock model, the HTTP and stdio mocks, the client) and tears it all down in a
fixed order whatever the test did: the client first (so it can still talk to its mocks
while stopping), then any stdio process the client left behind (harness cleanup, not a
check: STDIO-5 is checked by its case before teardown), then the mocks and the model,
then the temp dirs. Mocks are imported lazily, so loading the plugin in an unrelated
pytest run costs nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_host_conformance.harness.adapter import Adapter, Description
from mcp_host_conformance.harness.canaries import Secrets
from mcp_host_conformance.harness.hostrun import Host, Timeouts

__all__ = [
    "Case",
    "adapter",
    "case",
    "description",
    "home",
    "host",
    "http_mock",
    "model",
    "network",
    "project",
    "secrets",
    "stdio_mock",
    "timeouts",
]


class Case:
    """Everything one test started, torn down in order at the end (see the module comment)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir(mode=0o700)
        self.project.mkdir()
        self.hosts: list[Host] = []
        self.mocks: list[Any] = []  # anything with close()
        self.stdio_mocks: list[Any] = []
        self._count = 0

    def workdir(self, prefix: str) -> Path:
        self._count += 1
        path = self.root / f"{prefix}-{self._count}"
        path.mkdir()
        return path

    def close(self) -> list[BaseException]:
        problems: list[BaseException] = []
        for host in self.hosts:
            problems.extend(host.stop_all())
        for mock in self.stdio_mocks:
            _kill_leftovers(mock)
        for mock in reversed(self.mocks):
            try:
                mock.close()
            except Exception as exc:  # noqa: BLE001 - keep closing the others
                problems.append(exc)
        shutil.rmtree(self.root, ignore_errors=True)
        return problems


def _kill_leftovers(mock: Any) -> None:
    """Kill stdio mock processes still alive after the client stopped (never our own group)."""
    try:
        entries = mock.journal.entries(kind="process")
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
        try:  # reap it if it was our child (an in-process client's server)
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


# ---- session-wide --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def adapter(pytestconfig: pytest.Config) -> Adapter:
    """The adapter of the client under test (--client / --client-cmd)."""
    from mcp_host_conformance.harness.plugin import client_adapter

    return client_adapter(pytestconfig)


@pytest.fixture(scope="session")
def description(pytestconfig: pytest.Config) -> Description:
    """The client's describe(): name, version, profiles, default timeouts, project config files."""
    from mcp_host_conformance.harness.plugin import client_description

    return client_description(pytestconfig)


@pytest.fixture(scope="session")
def timeouts(pytestconfig: pytest.Config) -> Timeouts:
    """Scaled timeouts: connect 1.5 s and call 1.0 s given to the client, wait 5 s for journal
    waits, grace 0.3 s to watch for what must not happen; all times --timeout-scale."""
    from mcp_host_conformance.harness.plugin import timeout_scale

    return Timeouts.scaled(timeout_scale(pytestconfig))


@pytest.fixture(scope="session")
def network() -> Any:
    """The network the run sees (`mcp_host_conformance.harness.sandbox.Network`): `isolated`
    (sealed: loopback, `remote_address` and `private_addresses` only) or not, with the reason."""
    from mcp_host_conformance.harness.sandbox import observe

    return observe()


# ---- per case ------------------------------------------------------------------------------


TMPDIR_ENV = "MCP_HOST_CONFORMANCE_TMPDIR"
_SHM = Path("/dev/shm")
_SHM_MIN_FREE = 256 * 1024 * 1024


def case_tmpdir(environ: Any = os.environ) -> str | None:
    """Where case temp dirs go: $MCP_HOST_CONFORMANCE_TMPDIR, else /dev/shm when it is a
    roomy, writable, exec-allowed tmpfs, else None (the system default).

    Why: a client that fsyncs its configuration and session log (as it should) pays ~5 ms a
    sync on a disk, hundreds of times a run, on the case's critical path; on tmpfs a sync is
    free. What the client writes and what the case reads are the same either way.
    """
    chosen = environ.get(TMPDIR_ENV)
    if chosen:
        return chosen
    try:
        stat = os.statvfs(_SHM)
    except OSError:
        return None
    noexec = getattr(os, "ST_NOEXEC", 0)
    roomy = stat.f_bavail * stat.f_frsize >= _SHM_MIN_FREE
    if roomy and not stat.f_flag & (os.ST_RDONLY | noexec) and os.access(_SHM, os.W_OK | os.X_OK):
        return str(_SHM)
    return None


@pytest.fixture
def case() -> Iterator[Case]:
    root = Path(tempfile.mkdtemp(prefix="mcphc-", dir=case_tmpdir()))
    owner = Case(root)
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
def model(case: Case) -> Any:
    """A mock Responses service (`mcp_host_conformance.mocks.responses.MockResponses`),
    started for this case."""
    from mcp_host_conformance.mocks.responses import MockResponses

    service = MockResponses()
    service.start()
    case.mocks.append(service)
    return service


@pytest.fixture
def http_mock(case: Case) -> Callable[..., Any]:
    """Factory: `http_mock(spec, tls=None)` starts an HttpMock (tls: None|"trusted"|"untrusted")."""
    from mcp_host_conformance.mocks.http_server import HttpMock

    def start(spec: Any, tls: str | None = None) -> Any:
        mock = HttpMock(spec, tls=tls)
        case.mocks.append(mock)
        mock.start()
        return mock

    return start


@pytest.fixture
def stdio_mock(case: Case) -> Callable[..., Any]:
    """Factory: `stdio_mock(spec)` prepares a StdioMock in its own work dir
    (the client starts it)."""
    from mcp_host_conformance.mocks.stdio_server import StdioMock

    def prepare(spec: Any) -> Any:
        mock = StdioMock(spec, case.workdir("stdio"))
        case.stdio_mocks.append(mock)
        if callable(getattr(mock, "close", None)):
            case.mocks.append(mock)
        return mock

    return prepare


@pytest.fixture
def host(case: Case, adapter: Adapter, model: Any, timeouts: Timeouts) -> Host:
    """The client under test in this case's HOME and project, with `model` as its model."""
    owner = Host(
        adapter=adapter,
        home=case.home,
        project=case.project,
        model_url=model.url,
        model_key=model.api_key,
        timeouts=timeouts,
        model=model,
    )
    case.hosts.append(owner)
    return owner


@pytest.fixture
def secrets() -> Secrets:
    """Canary secrets: `secrets.new("label")`, then `secrets.found_in(...)` and friends."""
    return Secrets()
