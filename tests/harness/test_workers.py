"""harness/run/workers.py: `--mcphc-workers N` runs the cases in forked workers and reports as
a serial run does; a worker that dies fails its case and is replaced; Ctrl-C tears down and reaps.

Each run is a pytest subprocess (a fork of this test process would be a copy of it) over
plain test files: the forking does not depend on the suite. Where a check needs cases to run
at the same time, they meet (each waits for the other's file, bounded) instead of sleeping.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.stdio_server import process_state

pytest_plugins = ["pytester"]

BOUND = 60.0

HELPERS = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    OUT = Path(os.environ["WORKERS_TEST_OUT"])

    def note(text):
        with open(OUT / "notes", "a") as f:
            f.write(f"{text} {os.getpid()} {os.getppid()}\\n")

    def wait_for(name, bound=60.0):
        deadline = time.monotonic() + bound
        while not (OUT / name).exists():
            assert time.monotonic() < deadline, f"{name} never came"
            time.sleep(0.01)
    """
)


@pytest.fixture
def tree(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("WORKERS_TEST_OUT", str(out))
    pytester.makepyfile(helpers=HELPERS)
    pytester.syspathinsert()
    return pytester, out


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p",
        "mcp_host_conformance.harness.plugin.hooks",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        *args,
    )


def notes(out: Path) -> list[list[str]]:
    path = out / "notes"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


MIXED = """
    import pytest
    from helpers import note, wait_for, OUT

    def test_meet_first():
        note("first")
        (OUT / "first").touch()
        wait_for("last")  # only a second worker can run test_meet_last meanwhile

    @pytest.mark.parametrize("n", range(3))
    def test_filler(n):
        note(f"filler{n}")

    def test_fails_with_output():
        print("output-of-the-failing-case")
        assert 1 == 2

    def test_prints_and_passes():
        print("output-of-a-passing-case")

    def test_skipped():
        pytest.skip("not here")

    @pytest.mark.xfail(reason="known")
    def test_expected_failure():
        assert False

    def test_meet_last():
        note("last")
        (OUT / "last").touch()
        wait_for("first")
"""


def test_forked_workers_report_what_a_serial_run_reports(tree):
    pytester, out = tree
    pytester.makepyfile(test_mixed=MIXED)
    forked = run(pytester, "--mcphc-workers", "2", "-rA")
    forked.assert_outcomes(passed=6, failed=1, skipped=1, xfailed=1)
    assert forked.ret == pytest.ExitCode.TESTS_FAILED
    text = forked.stdout.str()
    failure = text[text.index("test_fails_with_output ___") :]
    failure = failure[: failure.index("= PASSES =")]  # -rA: then the passing cases' output
    assert "output-of-the-failing-case" in failure  # its own captured output, in its report
    assert "output-of-a-passing-case" not in failure
    assert "output-of-the-failing-case" not in text[: text.index("test_fails_with_output ___")]
    seen = notes(out)
    pids = {pid for _, pid, _ in seen}
    assert len(pids) == 2, seen  # the two meeting cases ran at once, in two processes
    assert all(ppid == seen[0][2] for _, _, ppid in seen)  # both forked from the run
    assert seen[0][2] not in pids

    for name in ("first", "last", "notes"):
        (out / name).unlink()
    serial = run(pytester, "-rA", "-k", "not meet")
    serial.assert_outcomes(passed=4, failed=1, skipped=1, xfailed=1)


SESSION_FIXTURE = """
    import pytest
    from helpers import note

    @pytest.fixture(scope="session")
    def per_session():
        note("session-up")
        yield
        note("session-down")
"""

FIXTURES = """
    import pytest
    from helpers import note

    @pytest.fixture(scope="module")
    def per_module():
        note("module-up")
        yield
        note("module-down")

    @pytest.mark.parametrize("n", range(6))
    def test_uses_both(per_session, per_module, n):
        note("case")
"""


def test_scoped_fixtures_are_set_up_once_per_worker_and_torn_down(tree):
    pytester, out = tree
    pytester.makeconftest(SESSION_FIXTURE)
    pytester.makepyfile(test_a=FIXTURES, test_b=FIXTURES)
    run(pytester, "--mcphc-workers", "3").assert_outcomes(passed=12)
    seen = notes(out)
    by_pid: dict[str, list[str]] = {}
    for what, pid, _ in seen:
        by_pid.setdefault(pid, []).append(what)
    assert sum(whats.count("case") for whats in by_pid.values()) == 12
    for whats in by_pid.values():
        assert whats.count("session-up") == 1 == whats.count("session-down"), whats
        assert whats[-1] == "session-down"  # everything down when the worker ends
        # the cases are handed out in order: a worker's move from one module to the other
        # is its only module teardown before the end
        assert whats.count("module-up") == whats.count("module-down") <= 2, whats


CRASHES = """
    import os, signal
    import pytest
    from helpers import note

    @pytest.mark.parametrize("n", range(4))
    def test_before(n):
        note("ran")

    def test_exits():
        from mcp_host_conformance.harness.run.cleanup import RESOURCES

        note(f"root:{RESOURCES.temp_root()}")  # what a case makes there: the parent removes it
        os._exit(7)

    def test_killed():
        os.kill(os.getpid(), signal.SIGKILL)

    @pytest.mark.parametrize("n", range(4))
    def test_after(n):
        note("ran")
"""


def test_a_worker_that_dies_fails_its_case_and_the_rest_still_run(tree):
    pytester, out = tree
    pytester.makepyfile(test_crashes=CRASHES)
    result = run(pytester, "--mcphc-workers", "2", "-rA")
    result.assert_outcomes(passed=8, failed=2)
    text = result.stdout.str()
    assert "ended (exit status 7) before the case did" in text
    assert "ended (killed by SIGKILL) before the case did" in text
    result.stdout.fnmatch_lines(["FAILED *test_exits*"])  # in either order
    result.stdout.fnmatch_lines(["FAILED *test_killed*"])
    seen = notes(out)
    assert sum(what == "ran" for what, _, _ in seen) == 8  # each dead one's next case ran too
    roots = [what.removeprefix("root:") for what, _, _ in seen if what.startswith("root:")]
    assert len(roots) == 1 and not Path(roots[0]).exists()


def test_a_failure_with_x_stops_handing_out_cases(tree):
    pytester, _ = tree
    pytester.makepyfile(
        test_fail=textwrap.dedent(
            """
            import pytest

            @pytest.mark.parametrize("n", range(20))
            def test_fails(n):
                assert False
            """
        )
    )
    result = run(pytester, "--mcphc-workers", "2", "-x")
    outcomes = result.parseoutcomes()
    assert 1 <= outcomes.get("failed", 0) <= 4  # what the two workers held, at most
    # each worker ends the case it runs and the one it held next, as pytest-xdist's do
    result.stdout.fnmatch_lines(["*stopping after * failures*"])


def test_collect_only_no_cases_and_wrong_options(tree):
    pytester, out = tree
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    run(pytester, "--mcphc-workers", "2", "--collect-only").stdout.fnmatch_lines(["*test_one*"])
    assert (
        run(pytester, "--mcphc-workers", "2", "-k", "nothing").ret
        == pytest.ExitCode.NO_TESTS_COLLECTED
    )
    negative = run(pytester, "--mcphc-workers", "-1")
    assert negative.ret == pytest.ExitCode.USAGE_ERROR
    negative.stderr.fnmatch_lines(["ERROR: --mcphc-workers must be 0 or more, not -1"])
    both = run(pytester, "--mcphc-workers", "2", "-p", "xdist", "-n", "2")
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(["ERROR: give --mcphc-workers or pytest-xdist's -n, not both"])


INTERRUPTED = """
    import pytest
    from helpers import note, wait_for, OUT

    @pytest.fixture
    def watched():
        yield
        note("torn-down")

    @pytest.mark.parametrize("n", range(4))
    def test_waits(watched, n):
        note("waiting")
        wait_for("never")
"""


# pytest as a terminal runs it: Python leaves SIGINT ignored when it starts ignored, as it is
# for a background job of a non-interactive shell (a CI script may run this suite so)
PYTEST_WITH_CTRL_C = (
    "import signal, sys, pytest; "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)


@pytest.mark.parametrize("to", ["group", "parent", "parent-killed"])
def test_ctrl_c_tears_the_running_cases_down_and_leaves_no_worker(tree, to):
    """Ctrl-C (SIGINT to the whole group) or a SIGINT to the run alone (as a worker forked
    just after Ctrl-C sees it): the run interrupts its workers itself; and a run killed
    outright leaves no worker running cases on its own."""
    pytester, out = tree
    pytester.makepyfile(test_interrupted=INTERRUPTED)
    proc = subprocess.Popen(
        [sys.executable, "-c", PYTEST_WITH_CTRL_C, "-p", "no:randomly", "-p", "no:cacheprovider"]
        + ["-p", "mcp_host_conformance.harness.plugin.hooks"]
        + ["--mcphc-workers", "2", str(pytester.path / "test_interrupted.py")],
        cwd=pytester.path,
        env={**os.environ, "PYTHONPATH": str(pytester.path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + BOUND
        while not notes(out):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.01)
        if to == "group":
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends
        else:
            os.kill(proc.pid, signal.SIGKILL if to == "parent-killed" else signal.SIGINT)
        output, _ = proc.communicate(timeout=BOUND)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # (the output ends when the last worker has: they hold the same pipe)
    expected = -signal.SIGKILL if to == "parent-killed" else pytest.ExitCode.INTERRUPTED
    assert proc.returncode == expected, output
    seen = notes(out)
    waiting = [pid for what, pid, _ in seen if what == "waiting"]
    torn_down = [pid for what, pid, _ in seen if what == "torn-down"]
    # every case that began waiting was torn down (one interrupted before its note may be too)
    assert all(torn_down.count(pid) >= waiting.count(pid) for pid in waiting), seen
    assert len(waiting) < 4, seen  # interrupted: the cases held next never ran
    # a worker closes its output a moment before it is gone (and orphaned, reaped by another)
    deadline = time.monotonic() + BOUND
    while any(process_state(int(pid)) == "running" for pid in waiting):
        assert time.monotonic() < deadline, f"a worker outlived its run: {seen}"
        time.sleep(0.01)


def test_a_start_the_parent_had_not_read_when_the_run_stopped_is_taken_in():
    """Ctrl-C while a worker's "this case started" still waits in its socket: the parent takes
    it in as it unwinds (the case is cut short, not "never run"), and hands out no case."""
    from types import SimpleNamespace

    from mcp_host_conformance.harness.run import workers

    parent_end, child_end = socket.socketpair()
    with parent_end, child_end:
        workers._send(child_end, ("logstart", 3, "t.py::case", ("t.py", 1, "case")))
        workers._send(child_end, ("want",))
        started: list[str] = []
        hook = SimpleNamespace(pytest_runtest_logstart=lambda **kw: started.append(kw["nodeid"]))
        parent = object.__new__(workers._Parent)
        parent.config = SimpleNamespace(hook=hook)
        worker = workers._Worker(pid=0, sock=parent_end, interrupt=-1, held=[3])
        parent._drain(worker)
        assert started == ["t.py::case"] and worker.started == {3}
        child_end.setblocking(False)
        with pytest.raises(BlockingIOError):
            child_end.recv(1)  # its "want" got no case

        # a message cut off by the worker's end: what came before it is kept, and no wait
        data = b"\x00\x00\x01\x00" + b"x" * 10
        other_parent, other_child = socket.socketpair()
        with other_parent:
            workers._send(other_child, ("logstart", 4, "t.py::other", ("t.py", 2, "other")))
            other_child.sendall(data)
            other_child.close()
            parent._drain(workers._Worker(pid=0, sock=other_parent, interrupt=-1, held=[4]))
        assert started == ["t.py::case", "t.py::other"]


def test_a_garbled_message_ends_the_taking_in_without_an_error():
    """Stopped in the middle of reading a message, the parent reads the rest of the stream
    out of step: whatever that gives, unwinding goes on (its workers must still be stopped)."""
    import pickle
    from types import SimpleNamespace

    from mcp_host_conformance.harness.run import workers

    parent_end, child_end = socket.socketpair()
    with parent_end, child_end:
        torn = workers._HEADER.pack(5) + b"\x80\x05garb"  # a pickle cut short
        stray = pickle.dumps(7)  # a whole pickle, but no message: read out of step
        child_end.sendall(workers._HEADER.pack(len(stray)) + stray + torn)
        parent = object.__new__(workers._Parent)
        parent.config = SimpleNamespace(hook=SimpleNamespace())
        parent._drain(workers._Worker(pid=0, sock=parent_end, interrupt=-1))
