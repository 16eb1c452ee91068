"""What a run leaves behind: nothing, however it ends (Ctrl-C, SIGTERM, a crash).

The SIGTERM tests run the real command (`mcp-host-conformance run`) on a case that starts
a TLS mock, a stdio server, the client and a canary header, then blocks; once it says so,
the run gets SIGTERM and must end, stop the client and its servers, and remove every temp
dir and file it made (HOME with servers.json, session logs, journals, the CA file)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from mcp_host_conformance.harness.run import cleanup as run_cleanup
from mcp_host_conformance.harness.run.cleanup import RunResources, case_tmpdir
from mcp_host_conformance.mocks.stdio_server import pid_alive

BOUND = 120.0  # seconds for a whole run to come up, or to go down; generous for a loaded CI


def test_the_environment_variable_wins(tmp_path: Path) -> None:
    assert case_tmpdir({run_cleanup.TMPDIR_ENV: str(tmp_path)}) == str(tmp_path)


def test_no_shm_falls_back_to_the_system_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(run_cleanup, "_SHM", tmp_path / "absent")
    assert case_tmpdir({}) is None


def test_a_small_tmpfs_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(run_cleanup, "_SHM", tmp_path)
    monkeypatch.setattr(run_cleanup, "_SHM_MIN_FREE", 1 << 62)
    assert case_tmpdir({}) is None


def test_a_roomy_writable_dir_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(run_cleanup, "_SHM", tmp_path)
    monkeypatch.setattr(run_cleanup, "_SHM_MIN_FREE", 0)
    assert case_tmpdir({}) == str(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_a_read_only_dir_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(run_cleanup, "_SHM", tmp_path)
    monkeypatch.setattr(run_cleanup, "_SHM_MIN_FREE", 0)
    tmp_path.chmod(0o500)
    try:
        assert case_tmpdir({}) is None
    finally:
        tmp_path.chmod(0o700)


def test_cleanup_removes_what_was_tracked_and_kills_groups(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(run_cleanup.TMPDIR_ENV, str(tmp_path))
    resources = RunResources()
    root = resources.temp_root()
    (root / "case" / "home").mkdir(parents=True)
    elsewhere = tmp_path / "mock-tls-x"
    elsewhere.mkdir()
    (elsewhere / "trusted-ca.pem").write_text("pem")
    resources.track_path(elsewhere)
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    resources.track_group(sleeper.pid)
    resources.cleanup()
    assert sleeper.wait(timeout=10) == -signal.SIGKILL
    assert list(tmp_path.iterdir()) == []
    resources.cleanup()  # idempotent


BLOCKING_CASE = """
import json
import os
import threading
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.spec import ServerSpec, Tool


@pytest.mark.mcphc_requirements("CFG-1")
def test_blocks(host, http_mock, stdio_mock, secrets, case):
    tls = http_mock(ServerSpec(name="t", tools=[Tool("q")]), tls="trusted")
    host.add_http("t", tls, headers={"X-Key": secrets.new("k")})
    stdio = stdio_mock(ServerSpec(name="s", tools=[Tool("q")]))
    host.add_stdio("s", stdio)
    host.start()
    pids = stdio.live_pids()
    ready = {"root": str(case.root), "ca": tls.ca_file, "stdio": pids, "pid": os.getpid()}
    Path(os.environ["BLOCKING_READY"]).write_text(json.dumps(ready))
    threading.Event().wait(600)
"""


def _wait_for(path: Path, process: subprocess.Popen[str]) -> dict:
    deadline = time.monotonic() + BOUND
    tick = threading.Event()
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_text():
            return json.loads(path.read_text())
        tick.wait(0.05)  # a file written by another process: no event to wait on
    output = process.communicate(timeout=10)[0] if process.poll() is not None else ""
    raise AssertionError(f"the blocking case never started\n{output[-3000:]}")


def _leftovers(directory: Path) -> list[str]:
    # pytest's own base temp (pytest-of-USER, kept for the last runs by design) is pytest's.
    return sorted(
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if not p.relative_to(directory).parts[0].startswith("pytest-of-")
    )


@pytest.mark.parametrize("workers", [["--serial"], ["-n", "1"]], ids=["one-process", "workers"])
def test_sigterm_to_a_real_run_leaves_nothing_behind(workers: list[str], tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "test_blocking.py").write_text(textwrap.dedent(BLOCKING_CASE))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    ready = tmp_path / "ready.json"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        "TMPDIR": str(scratch),
        run_cleanup.TMPDIR_ENV: str(scratch),
        "BLOCKING_READY": str(ready),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    argv = [
        sys.executable, "-m", "mcp_host_conformance.harness.cli", "run", *workers, "--",
        str(cases / "test_blocking.py"), "-k", "test_blocks",
        "-p", "no:randomly", "-p", "no:cacheprovider",
    ]  # fmt: skip
    run = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        seen = _wait_for(ready, run)
        assert Path(seen["root"]).is_dir() and Path(seen["ca"]).is_file()
        assert seen["stdio"], "the client started no stdio server"
        run.send_signal(signal.SIGTERM)
        output = run.communicate(timeout=BOUND)[0]
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode != 0, output
    assert _leftovers(scratch) == [], output[-3000:]
    assert not any(pid_alive(pid) for pid in seen["stdio"]), "a stdio server was left running"


# A driver whose host daemonizes something: a grandchild in a session of its own (setsid),
# out of the driver's process group, that blocks forever; then the reference driver.
DAEMONIZING_DRIVER = """
import os, sys
pids = sys.argv[1]
first = os.fork()
if first == 0:
    os.setsid()
    if os.fork() == 0:
        with open(os.path.join(pids, str(os.getpid())), "w") as f:
            f.write("started")
        never, _ = os.pipe()
        os.read(never, 1)
        os._exit(0)
    os._exit(0)
os.waitpid(first, 0)
os.execv(sys.executable, [sys.executable, "-c", "import sys; "
    "from mcp_host_conformance.reference_client.launcher import main; sys.exit(main())",
    "driver"])
"""


@pytest.mark.parametrize("workers", [["--serial"], ["-n", "2"]], ids=["one-process", "workers"])
def test_a_drivers_setsid_descendants_do_not_outlive_the_run(workers, tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DAEMONIZING_DRIVER))
    pids = tmp_path / "pids"
    pids.mkdir()
    command = f"{sys.executable} {driver} {pids}"
    done = subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance.harness.cli", "run", *workers]
        + ["--client-cmd", command, "--", "-p", "no:randomly", "-p", "no:cacheprovider"]
        + ["-k", "test_adding_a_server_does_not_connect or test_result_is_shown_saved"],
        capture_output=True,
        text=True,
        timeout=BOUND,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    started = [int(p.name) for p in pids.iterdir()]
    assert started, "the driver started no daemon"
    # killed by the run as it ended; reaped by it, or by init at its pace once killed
    deadline = time.monotonic() + BOUND
    tick = threading.Event()
    while any(pid_alive(pid) for pid in started) and time.monotonic() < deadline:
        tick.wait(0.05)
    left = [pid for pid in started if pid_alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "a setsid'd descendant of the driver outlived the run"


def test_the_sweep_spares_what_ran_before_the_run(monkeypatch):
    """A suite run in-process (a test process) kills what the run left, not what the process
    already had."""
    monkeypatch.setattr(run_cleanup, "_spared", None)
    before = subprocess.Popen(["sleep", "60"])
    try:
        run_cleanup.start_run()
        during = subprocess.Popen(["sleep", "60"], start_new_session=True)
        assert run_cleanup.sweep() == [during.pid]
        assert not pid_alive(during.pid)  # killed and reaped
        assert before.poll() is None
        assert run_cleanup.sweep() == []  # once a run
    finally:
        before.kill()
        before.wait()
        ctypes.CDLL(None).prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER off: this process's own
