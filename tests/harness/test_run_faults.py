"""The run's own helpers fail: the run ends, bounded, and blames no host for it.

Each test runs the real command (`python -m mcp_host_conformance run`) on a file of cases in a
session of its own, injects one fault into the harness itself (not into the host) and checks
that the run ends within a bound, that no case of the host is a failure for it, and that the
run's process group is empty afterwards:

- a forked worker killed (SIGKILL) while its case runs: the case was not run by the harness's
  fault (skipped, "harness error: ..."), not failed; exit status 3 (internal error);
- a mock the case served (an HTTP mock's server thread) stopping by itself under the case:
  the case is a harness error, not run, whatever it saw; the same case with its mock alive
  fails the host. A stdio mock is the host's own child: its death is the host's to handle
  (cases stop servers on purpose), and one killed from outside is indistinguishable from a
  server that crashed, so no test claims the harness can tell;
- the sealed network's name server dying mid-run (`--network isolated`): the rebinding case
  cannot exercise the rebinding and says not observed, never a PRIV-1 failure, and the run
  says its name server stopped and ends with exit status 3;
- the report directory full (a 64 KiB tmpfs in a mount namespace of the run's own): one line
  says the report was not written, no traceback, the terminal summary still printed, exit
  status 3;
- stdout a pipe: a reader that goes away (`run | head`: the rest of the output is dropped,
  the run finishes and writes its reports, one line on stderr, no traceback), a slow reader
  (the run waits on each full pipe and goes on, same verdicts).

A pipe nobody ever reads and nobody closes stops the run at its next write, as it stops any
program: the run cannot end on its own then (its writes are the terminal's). SIGTERM still
ends it (a second one at once: harness/run/cleanup.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import termios
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcp_host_conformance.harness.cli import Status

BOUND = 120.0  # seconds for a run to come up, or to go down; generous for a loaded machine


def _argv(cases: Path, *options: str, select: str, report: Path | None = None) -> list[str]:
    reports = [] if report is None else ["--report-json", str(report)]
    return [
        sys.executable, "-m", "mcp_host_conformance", "run", *options, *reports, "--",
        str(cases), "-k", select, "-p", "no:randomly", "-p", "no:cacheprovider",
    ]  # fmt: skip


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "FAULT_DIR": str(tmp_path), **extra}


@contextmanager
def _started(
    argv: Sequence[str], cwd: Path, env: dict[str, str], **popen
) -> Iterator[subprocess.Popen[str]]:
    """The run in a session of its own; on the way out, its process group is gone (killed if
    the test failed first, and then the test fails for what was left)."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.STDOUT)
    popen.setdefault("text", True)
    run = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True, **popen)
    try:
        yield run
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=BOUND)
        if run.stdout is not None:
            run.stdout.close()
    left = _group_left(run.pid)
    if left:
        os.killpg(run.pid, signal.SIGKILL)
        raise AssertionError(f"the run left processes in its group: {left}")


def _group_left(pgid: int) -> list[int]:
    """The processes still in the run's process group, once it has had BOUND to empty."""
    deadline = time.monotonic() + BOUND
    tick = threading.Event()
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == pgid:
                left.append(int(entry.name))
        if not left or time.monotonic() > deadline:
            return left
        tick.wait(0.05)


def _wait_for(path: Path, run: subprocess.Popen[str]) -> str:
    """The text of `path` once a case of the run wrote it, bounded: nothing to wait on but the
    file system."""
    deadline = time.monotonic() + BOUND
    tick = threading.Event()
    while time.monotonic() < deadline and run.poll() is None:
        if path.exists() and path.stat().st_size:
            return path.read_text()
        tick.wait(0.05)
    output = run.communicate(timeout=30)[0] if run.poll() is not None else ""
    raise AssertionError(f"the case never wrote {path.name}\n{(output or '')[-3000:]}")


def _cases(tmp_path: Path, text: str) -> Path:
    cases = tmp_path / "test_faults.py"
    cases.write_text(textwrap.dedent(text))
    return cases


# ---- a worker killed -------------------------------------------------------------------------

WORKER_CASES = """
import os
import threading
from pathlib import Path

import pytest


@pytest.mark.mcphc_requirements("CFG-1")
def test_fault_finishes(host):
    host.start()


@pytest.mark.mcphc_requirements("APR-1")
def test_fault_worker_dies(host):
    host.start()
    Path(os.environ["FAULT_DIR"], "worker").write_text(str(os.getpid()))
    threading.Event().wait(600)
"""


def test_a_worker_killed_mid_case_fails_no_rule_of_the_host(tmp_path):
    cases = _cases(tmp_path, WORKER_CASES)
    report = tmp_path / "r.json"
    argv = _argv(cases, "-n", "2", select="test_fault_", report=report)
    with _started(argv, tmp_path, _env(tmp_path)) as run:
        worker = int(_wait_for(tmp_path / "worker", run))
        assert worker != run.pid and os.getpgid(worker) == run.pid
        os.kill(worker, signal.SIGKILL)
        output = run.communicate(timeout=BOUND)[0]
    assert run.returncode == Status.INTERNAL_ERROR, output[-3000:]
    data = json.loads(report.read_text())
    outcomes = {case["id"]: case for case in data["cases"]}
    killed = outcomes["test_faults::test_fault_worker_dies"]
    assert killed["outcome"] == "skipped", killed
    assert killed["reason"].startswith("harness error: ") and "SIGKILL" in killed["reason"]
    assert outcomes["test_faults::test_fault_finishes"]["outcome"] == "passed"
    assert data["requirements"]["APR-1"]["outcome"] not in ("failed", "passed")
    assert "failed" not in {case["outcome"] for case in data["cases"]}
    assert "the harness failed" in output and "Traceback" not in output


# ---- a mock dying under its case -------------------------------------------------------------

# A case whose HTTP mock stops under it (its server's loop ends, as a crash of its thread
# would, not closed by the case): the host cannot reach it, and the case's check fails, as a
# real case's would on a host that never listed the mock's tools. Another case keeps its mock.
MOCK_CASES = """
import pytest

from mcp_host_conformance.harness.verdicts.outcomes import check
from mcp_host_conformance.mocks.spec import ServerSpec, Tool


def _served(http_mock):
    mock = http_mock(ServerSpec(name="faulty", tools=[Tool(name="echo")]))
    assert mock.url
    return mock


@pytest.mark.mcphc_requirements("CFG-1")
def test_fault_mock_dies(host, http_mock):
    mock = _served(http_mock)
    host.start()
    loop = mock._server.loop
    loop.call_soon_threadsafe(loop.stop)  # the mock's server thread ends under the case
    mock._server._thread.join(30)
    check(False, ids="CFG-1", expected="the host listed the mock's tools", actual="it did not")


@pytest.mark.mcphc_requirements("CFG-1")
def test_fault_mock_lives(host, http_mock):
    _served(http_mock)
    host.start()
    check(False, ids="CFG-1", expected="the host listed the mock's tools", actual="it did not")
"""


def test_a_mock_dying_under_its_case_fails_no_rule_of_the_host(tmp_path):
    cases = _cases(tmp_path, MOCK_CASES)
    report = tmp_path / "r.json"
    argv = _argv(cases, "--serial", select="test_fault_", report=report)
    with _started(argv, tmp_path, _env(tmp_path)) as run:
        output = run.communicate(timeout=BOUND)[0]
    data = json.loads(report.read_text())
    outcomes = {case["id"]: case for case in data["cases"]}
    died = outcomes["test_faults::test_fault_mock_dies"]
    assert died["outcome"] == "skipped", died
    assert died["reason"].startswith("harness error: ") and "faulty" in died["reason"], died
    # the same check with its mock alive is the host's failure: the fault made the difference
    assert outcomes["test_faults::test_fault_mock_lives"]["outcome"] == "failed"
    assert run.returncode == Status.FAILED, output[-3000:]
    assert "the harness failed under test_faults::test_fault_mock_dies" in output


# ---- the report directory full ---------------------------------------------------------------

PASSING_CASES = """
import pytest


@pytest.mark.mcphc_requirements("CFG-1")
def test_fault_finishes(host):
    host.start()
"""

# The run in a mount namespace of its own with a 64 KiB tmpfs on the report directory, filled
# before the run starts: the reports look writable when the run checks them and the disk is
# full when it writes them. What is left there is listed for the test (the tmpfs goes with
# the namespace).
FULL_DISK = """
set -e
mount -t tmpfs -o size=64k tmpfs "$REPORTS"
head -c 1048576 /dev/zero > "$REPORTS/filler" 2>/dev/null || true
set +e
"$@"
status=$?
ls -A "$REPORTS" > "$LISTING"
exit $status
"""


def _can_mount_tmpfs(where: Path) -> str | None:
    """Why a tmpfs cannot be mounted in a new mount namespace here, or None."""
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if unshare is None or mount is None:
        return "no unshare or mount here"
    probe = subprocess.run(
        [unshare, "-m", "sh", "-c", f'mount -t tmpfs -o size=64k tmpfs "{where}"'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode:
        return f"cannot mount a tmpfs in a mount namespace: {probe.stderr.strip()[:200]}"
    return None


def test_a_full_report_disk_is_one_line_and_an_internal_error(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    problem = _can_mount_tmpfs(reports)
    if problem is not None:
        pytest.skip(problem)
    cases = _cases(tmp_path, PASSING_CASES)
    listing = tmp_path / "listing"
    run_argv = _argv(cases, "--serial", select="test_fault_")
    at = run_argv.index("--")
    run_argv[at:at] = [
        "--report-json", str(reports / "r.json"), "--report-html", str(reports / "r.html")
    ]  # fmt: skip
    argv = ["unshare", "-m", "sh", "-c", FULL_DISK, "full-disk", *run_argv]
    env = _env(tmp_path, REPORTS=str(reports), LISTING=str(listing))
    with _started(argv, tmp_path, env) as run:
        output = run.communicate(timeout=BOUND)[0]
    assert run.returncode == Status.INTERNAL_ERROR, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert "conformance run FAILED (exit status 3)" in output  # the summary, still printed
    assert "cases: 1 passed" in output
    for flag, name in (("--report-json", "r.json"), ("--report-html", "r.html")):
        said = [
            line for line in output.splitlines() if line.startswith(f"mcp-host-conformance: {flag}")
        ]
        assert said == [
            f"mcp-host-conformance: {flag} {reports / name}: not written: No space left on "
            "device; the run fails"
        ], output[-3000:]
    assert "JSON report:" not in output and "HTML report:" not in output
    # no half-written report left for a reader to take as the run's
    assert listing.read_text().split() == ["filler"]


# ---- the sealed network's name server dying --------------------------------------------------

# A plugin of the run's (`-p`): once the rebinding case's fixtures are up (the run's network
# was observed with its name server answering), the name server dies. A thread cannot be
# killed from outside: it fails as code does, on the next query (sent here, so it is dead
# before the case's host asks it anything).
DNS_KILLER = """
import os
import threading
from pathlib import Path

import pytest

from mcp_host_conformance.harness.sandbox import dns_stub


def _dies(query, rebinder):
    raise RuntimeError("the name server died (fault injected)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if "rebinds" not in item.nodeid:
        return
    network = item.funcargs["network"]
    assert network.isolated and network.dns, network  # it answered when the case began
    dns_stub.answer = _dies
    assert not dns_stub.probe(timeout=2.0)
    alive = [t.name for t in threading.enumerate() if t.name == "dns-stub"]
    Path(os.environ["FAULT_DIR"], "dns-killed").write_text(repr(alive) or "none")
"""


def _sealable() -> str | None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance", "sealed", "--require", "--", "true"],
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    return None if done.returncode == 0 else done.stderr.strip()[:300]


def test_the_name_server_dying_mid_run_fails_no_rule_of_the_host(tmp_path):
    problem = _sealable()
    if problem:
        pytest.skip(f"this machine cannot seal a network: {problem}")
    (tmp_path / "fault_dns.py").write_text(textwrap.dedent(DNS_KILLER))
    cases = _cases(tmp_path, PASSING_CASES)
    report = tmp_path / "r.json"
    argv = _argv(
        cases,
        "--serial",
        "--network",
        "isolated",
        "--client",
        "reference-profiles",
        select="rebinds or test_fault_",
        report=report,
    )
    argv += ["-p", "fault_dns"]
    env = _env(tmp_path, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    with _started(argv, tmp_path, env) as run:
        output = run.communicate(timeout=BOUND)[0]
    assert (tmp_path / "dns-killed").read_text() == "[]", output[-3000:]  # no stub thread left
    assert run.returncode == Status.INTERNAL_ERROR, output[-3000:]
    assert "mcp-host-conformance: the sealed network's name server stopped during the run" in output
    data = json.loads(report.read_text())
    outcomes = {case["id"]: case for case in data["cases"]}
    rebinding = outcomes[
        "test_profiles_addresses::test_a_name_that_rebinds_to_a_private_address_is_refused"
    ]
    assert rebinding["outcome"] == "not_observed", rebinding
    assert data["requirements"]["PRIV-1"]["outcome"] not in ("failed", "passed")
    # the run went on past it (CFG-1 is SYNC-1's for a host of every profile)
    assert outcomes["test_faults::test_fault_finishes"]["outcome"] == "not_applicable"


# ---- stdout a pipe: closed, slow, never read -------------------------------------------------

MANY_CASES = """
import pytest


@pytest.mark.mcphc_requirements("CFG-1")
@pytest.mark.parametrize("n", range(60))
def test_fault_finishes(host, n):
    host.start()
"""
PIPE_SIZE = 4096  # the smallest a pipe can be: the run's output fills it many times over
_F_SETPIPE_SZ = 1031


@pytest.mark.parametrize("stderr", ["own", "2>&1"])
def test_a_reader_that_goes_away_leaves_the_run_to_finish(stderr, tmp_path):
    """`run | head -1`: the rest of the output is dropped, the host is judged and the reports
    written as without it; one line says so where it still can, no traceback."""
    cases = _cases(tmp_path, MANY_CASES)
    report = tmp_path / "r.json"
    errors = tmp_path / "stderr"
    argv = _argv(cases, "-n", "2", select="test_fault_", report=report)
    with (
        errors.open("w") as sink,
        _started(
            argv,
            tmp_path,
            _env(tmp_path),
            stderr=sink if stderr == "own" else subprocess.STDOUT,
        ) as run,
    ):
        assert run.stdout is not None
        first = run.stdout.readline()
        run.stdout.close()  # the reader goes away
        run.wait(timeout=BOUND)
    assert "test session starts" in first
    said = errors.read_text()
    assert run.returncode == Status.PASSED, said[-3000:]
    if stderr == "own":
        assert said == (
            "mcp-host-conformance run: the standard output was closed during the run (its "
            "reader went away): what was left to print was dropped\n"
        )
    data = json.loads(report.read_text())
    assert data["summary"]["cases"] == {"passed": 60}


@contextmanager
def _small_pipe() -> Iterator[tuple[int, int]]:
    """A pipe of PIPE_SIZE bytes (reading end, writing end), made before the run writes."""
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, _F_SETPIPE_SZ, PIPE_SIZE)
        yield read_end, write_end
    finally:
        for fd in (read_end, write_end):
            try:
                os.close(fd)
            except OSError:
                pass


def _queued(pipe: int) -> int:
    count = bytearray(4)
    fcntl.ioctl(pipe, termios.FIONREAD, count)
    return int.from_bytes(count, sys.byteorder)


def _blocked_writing(pid: int) -> bool:
    try:
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def test_a_slow_reader_slows_the_run_and_changes_no_verdict(tmp_path):
    """The reader takes a little only when the pipe is full: the run waits on it each time,
    and ends as it would have, with every line."""
    cases = _cases(tmp_path, MANY_CASES)
    argv = _argv(cases, "-n", "2", select="test_fault_")
    chunks: list[bytes] = []
    fulls = 0
    with (
        _small_pipe() as (pipe, write_end),
        _started(argv, tmp_path, _env(tmp_path), stdout=write_end) as run,
    ):
        os.close(write_end)
        deadline = time.monotonic() + BOUND
        tick = threading.Event()
        while time.monotonic() < deadline:
            if _queued(pipe) and _blocked_writing(run.pid):  # too full for its next write
                fulls += 1
                chunks.append(os.read(pipe, PIPE_SIZE // 4))
            elif run.poll() is not None:
                while chunk := os.read(pipe, 1 << 16):  # what is left, to its end
                    chunks.append(chunk)
                break
            else:
                tick.wait(0.01)
        run.wait(timeout=BOUND)
    output = b"".join(chunks).decode()
    assert run.returncode == Status.PASSED, output[-3000:]
    assert fulls >= 2, fulls  # it did wait on a full pipe, more than once
    assert sum(" passed " in line for line in output.splitlines() if "/60 " in line) == 60
    assert "conformance run PASSED (exit status 0)" in output


def test_a_pipe_never_read_holds_the_run_until_sigterm_ends_it(tmp_path):
    """Nobody reads: the run waits at its next write, as any program does (a paused terminal
    must not fail a run either). SIGTERM still ends it, and it leaves nothing behind."""
    cases = _cases(tmp_path, MANY_CASES)
    argv = _argv(cases, "-n", "2", select="test_fault_")
    with (
        _small_pipe() as (pipe, write_end),
        _started(argv, tmp_path, _env(tmp_path), stdout=write_end) as run,
    ):
        os.close(write_end)
        deadline = time.monotonic() + BOUND
        tick = threading.Event()
        signalled = 0
        while time.monotonic() < deadline and run.poll() is None:
            if _queued(pipe) and _blocked_writing(run.pid):  # too full for its next write
                # blocked on the full pipe (again, after a SIGTERM's unwinding wrote more)
                run.send_signal(signal.SIGTERM)
                signalled += 1
            tick.wait(0.05)
        run.wait(timeout=BOUND)
    assert signalled >= 1
    # Mid-run, the first SIGTERM unwinds the run (which writes, and waits again) and a
    # second ends it (128 + 15); after the run, when only its last lines wait, SIGTERM's own
    # default ends it. Either way it ends, and `_started` saw nothing left of it.
    assert run.returncode in (Status.INTERRUPTED, 128 + signal.SIGTERM, -signal.SIGTERM)
