"""A starved machine is not a slow host (harness.run.starvation): a case that failed while
the harness's own clock stood still runs again with larger timeouts; a second failure of
other rules on a clock starved again is inconclusive (not observed), never the host's.

The cases here stand in for timing verdicts: they note a stall into the process's lateness
record, as a starved machine makes the clock thread and the mocks' loops do, and fail or
pass by the timeouts they were given."""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
import time

import pytest

from mcp_host_conformance.harness.plugin.attempts import SECOND_ATTEMPT
from mcp_host_conformance.harness.run.starvation import BOOST, STARVED_AT
from mcp_host_conformance.mocks.lateness import Lateness, tick_loop
from tests.harness.test_plugin import run

pytest_plugins = ["pytester"]

# The run's timeout scale in these sandboxes: starved at a stall of 2 s, which no loaded CI
# machine's own jitter reaches, while the cases note stalls of 5 s and more.
SCALE = 8
CASES = textwrap.dedent(
    f"""
    import pytest
    from pathlib import Path
    from mcp_host_conformance.harness.verdicts.outcomes import check
    from mcp_host_conformance.mocks.lateness import LATENESS

    @pytest.fixture
    def which(request, timeouts):  # counts the case's attempts in a file named after it
        name = request.node.name.removeprefix("test_")
        counter = Path(__file__).parent / f"{{name}}.attempts"
        counter.write_text(str(int(counter.read_text()) + 1) if counter.exists() else "1")
        return "boosted" if timeouts.scale > {SCALE} else "first"

    def fails(rule, stall=0.0):
        LATENESS.note(stall)  # a stall of the machine, as the clock thread would see it
        check(False, ids=rule, expected="in time", actual="late")

    @pytest.mark.mcphc_requirements("DISC-3")
    def test_late_only_when_starved(which):
        if which == "first":
            fails("DISC-3", 5.0)  # the machine stood still: the host missed its bound

    @pytest.mark.mcphc_requirements("DISC-3", "RES-6")
    def test_starved_twice_failing_otherwise(which):
        fails("DISC-3" if which == "first" else "RES-6", 30.0)

    @pytest.mark.mcphc_requirements("APR-1")
    def test_starved_twice_failing_alike(which):
        fails("APR-1", 30.0)

    @pytest.mark.mcphc_requirements("DISC-3")
    def test_fails_on_a_clock_that_kept_time(which):
        fails("DISC-3")

    @pytest.mark.mcphc_requirements("DISC-3")
    def test_fails_after_a_stall_below_the_threshold(which):
        fails("DISC-3", 1.0)

    @pytest.mark.mcphc_requirements("DISC-3")
    def test_passes_while_starved(which):
        LATENESS.note(30.0)
    """
)


@pytest.fixture
def sandbox(pytester: pytest.Pytester) -> pytest.Pytester:
    from tests.harness.test_plugin import CONFTEST, FAKE_CLIENT

    pytester.makepyfile(fakeclient=FAKE_CLIENT)
    pytester.mkdir("conformance")
    (pytester.path / "conformance" / "conftest.py").write_text(CONFTEST)
    (pytester.path / "conformance" / "test_timed.py").write_text(CASES)
    pytester.syspathinsert()
    return pytester


def _cases(pytester: pytest.Pytester, *args: str) -> dict[str, dict[str, object]]:
    report = pytester.path / "report.json"
    run(pytester, "--mcphc-timeout-scale", f"{SCALE:g}", f"--mcphc-report-json={report}", *args)
    found = json.loads(report.read_text())["cases"]
    return {case["nodeid"].rsplit("::", 1)[1].removeprefix("test_"): case for case in found}


def _attempts(pytester: pytest.Pytester, name: str) -> int:
    return int((pytester.path / "conformance" / f"{name}.attempts").read_text())


@pytest.mark.parametrize("workers", [[], ["--mcphc-workers", "2"]], ids=["serial", "forked"])
def test_a_starved_failure_runs_again_and_only_a_kept_clock_s_verdict_stands(
    sandbox: pytest.Pytester, workers: list[str]
) -> None:
    cases = _cases(sandbox, *workers)

    late = cases["late_only_when_starved"]
    assert late["outcome"] == "passed", late
    assert _attempts(sandbox, "late_only_when_starved") == 2
    said = late["figures"][SECOND_ATTEMPT]
    assert f"{BOOST:g} times the timeouts" in said and "stood still for 5.0 s" in said
    assert "DISC-3" in said

    otherwise = cases["starved_twice_failing_otherwise"]
    assert otherwise["outcome"] == "not_observed", otherwise
    assert "inconclusive: the harness's own clock" in otherwise["reason"], otherwise
    assert "failed RES-6, the first attempt DISC-3" in otherwise["reason"]
    assert _attempts(sandbox, "starved_twice_failing_otherwise") == 2

    alike = cases["starved_twice_failing_alike"]  # a failure the clock does not move
    assert alike["outcome"] == "failed" and alike["failed_requirements"] == ["APR-1"], alike
    assert _attempts(sandbox, "starved_twice_failing_alike") == 2

    kept = cases["fails_on_a_clock_that_kept_time"]
    assert kept["outcome"] == "failed", kept
    assert _attempts(sandbox, "fails_on_a_clock_that_kept_time") == 1
    assert SECOND_ATTEMPT not in kept["figures"]

    assert STARVED_AT * SCALE > 1.0  # the threshold grows with the run's timeout scale
    below = cases["fails_after_a_stall_below_the_threshold"]
    assert below["outcome"] == "failed", below
    assert _attempts(sandbox, "fails_after_a_stall_below_the_threshold") == 1

    assert cases["passes_while_starved"]["outcome"] == "passed"
    assert _attempts(sandbox, "passes_while_starved") == 1


def test_a_mock_loop_that_stands_still_notes_how_long() -> None:
    into = Lateness()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        loop.call_soon_threadsafe(tick_loop, loop, into)
        blocked = threading.Event()
        loop.call_soon_threadsafe(lambda: (blocked.set(), time.sleep(0.6)))
        assert blocked.wait(10)
        deadline = time.monotonic() + 10
        while into.worst() < 0.4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert into.worst() >= 0.4
        assert into.take() >= 0.4 and into.worst() == 0.0  # take starts a new window
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
