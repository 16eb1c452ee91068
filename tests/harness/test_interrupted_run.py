"""An interrupted run blames no host: the cases in flight are cut short, not failed.

Each test runs the real command (`mcp-host-conformance run`) on a file of cases: one that
finishes, then several that each say they are in flight (a file) and wait; once as many are
in flight as the run runs at once, the run gets SIGINT or SIGTERM. It must end with exit
status 2 and say, in the terminal, the JSON and HTML reports and JUnit, that it was
interrupted: what finished, which cases were cut short (none of their rules checked, none
failed) and which never ran. In this process, through a driver (`--client-cmd`), one case at
a time (`--serial`) and in forked workers.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mcp_host_conformance.harness.cli import Status

BOUND = 120.0  # seconds for a run to come up, or to go down; generous for a loaded machine
WAITING = ("APR-1", "APR-2", "APR-3", "APR-4", "APR-5")

CASES = """
import os
import threading
from pathlib import Path

import pytest

WAITING = {waiting!r}


@pytest.mark.mcphc_requirements("CFG-1")
def test_block_finishes(host):
    host.start()


@pytest.mark.parametrize(
    "rule", [pytest.param(rule, marks=pytest.mark.mcphc_requirements(rule)) for rule in WAITING]
)
def test_block_waits(rule, host):
    host.start()
    Path(os.environ["BLOCKING_READY"], rule).write_text(str(os.getpid()))
    threading.Event().wait(600)
"""

# Ctrl-C's SIGINT as a terminal delivers it: Python leaves SIGINT ignored when it starts
# ignored (as a background job of a script does), so the run puts Python's handler back.
RUN = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from mcp_host_conformance.harness.cli import main; sys.exit(main())"
)
DRIVER = (
    "import sys; from mcp_host_conformance.reference_client.launcher import main; sys.exit(main())"
)


def _driver() -> list[str]:
    return ["--client-cmd", f"{shlex.quote(sys.executable)} -c {shlex.quote(DRIVER)} driver"]


MODES = {
    "in-process-serial": (["--serial"], 1),
    "in-process-workers": (["-n", "2"], 2),
    "driver-serial": ([*_driver(), "--serial"], 1),
    "driver-workers": ([*_driver(), "-n", "2"], 2),
}


def _in_flight(ready: Path, count: int, run: subprocess.Popen[str]) -> list[str]:
    """The rules of the cases in flight once `count` of them are (files written by the run's
    processes: nothing to wait on but the directory), bounded."""
    deadline = time.monotonic() + BOUND
    tick = threading.Event()
    while time.monotonic() < deadline and run.poll() is None:
        found = sorted(p.name for p in ready.iterdir())
        if len(found) >= count:
            return found
        tick.wait(0.05)
    output = run.communicate(timeout=30)[0] if run.poll() is not None else ""
    raise AssertionError(f"the cases never got in flight\n{output[-3000:]}")


@pytest.mark.parametrize(
    "mode, signum",
    [
        ("in-process-serial", signal.SIGINT),
        ("in-process-serial", signal.SIGTERM),
        ("in-process-workers", signal.SIGINT),
        ("in-process-workers", signal.SIGTERM),
        ("driver-serial", signal.SIGTERM),
        ("driver-workers", signal.SIGINT),
    ],
    ids=lambda v: v if isinstance(v, str) else signal.Signals(v).name,
)
def test_an_interrupted_run_says_so_and_fails_no_rule(mode, signum, tmp_path):
    options, at_once = MODES[mode]
    cases = tmp_path / "test_blocking.py"
    cases.write_text(textwrap.dedent(CASES.format(waiting=WAITING)))
    ready = tmp_path / "ready"
    ready.mkdir()
    report, page, junit = tmp_path / "report.json", tmp_path / "report.html", tmp_path / "j.xml"
    argv = [
        sys.executable, "-c", RUN, "run", *options,
        "--report-json", str(report), "--report-html", str(page), "--",
        str(cases), "-k", "test_block_", "-p", "no:randomly", "-p", "no:cacheprovider",
        "--junitxml", str(junit),
    ]  # fmt: skip
    run = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env={**os.environ, "BLOCKING_READY": str(ready), "PYTHONDONTWRITEBYTECODE": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        in_flight = _in_flight(ready, at_once, run)
        run.send_signal(signum)
        output = run.communicate(timeout=BOUND)[0]
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == Status.INTERRUPTED, output[-3000:]

    data = json.loads(report.read_text())
    interrupted = data["summary"]["interrupted"]
    by = "SIGTERM" if signum == signal.SIGTERM else "SIGINT (Ctrl-C)"
    assert interrupted["by"] == by
    cut = sorted(cid.split("[")[1].rstrip("]") for cid in interrupted["cut_short"])
    assert cut == in_flight, (interrupted, in_flight)
    assert interrupted["finished"] == 1
    never = sorted(cid.split("[")[1].rstrip("]") for cid in interrupted["not_run"])
    assert never == sorted(set(WAITING) - set(in_flight))
    outcomes = {case["id"]: case["outcome"] for case in data["cases"]}
    assert "failed" not in outcomes.values(), data["cases"]
    assert outcomes.get("test_blocking::test_block_finishes") == "passed", (
        outcomes,
        output[-3000:],
    )
    for case in data["cases"]:
        if case["id"] in interrupted["cut_short"]:
            assert case["outcome"] == "skipped" and case["reason"].startswith("interrupted: ")
    for rule in WAITING:
        assert data["requirements"][rule]["outcome"] not in ("failed", "passed"), rule
    assert data["requirements"]["CFG-1"]["outcome"] != "failed"

    assert "the run was interrupted" in output and "conformance run INTERRUPTED" in output
    for cid in interrupted["cut_short"]:
        assert f"cut short: {cid}" in output
    for cid in interrupted["not_run"]:
        assert f"not run: {cid}" in output
    html = page.read_text()
    assert "conformance run INTERRUPTED" in html and "cut short" in html

    tree = ET.parse(junit)
    assert not tree.findall(".//failure") and not tree.findall(".//error"), junit.read_text()
    skipped = {
        case.get("name"): case.find("skipped")
        for case in tree.iter("testcase")
        if case.find("skipped") is not None
    }
    for rule in in_flight:
        mark = skipped.get(f"test_blocking::test_block_waits[{rule}]")
        assert mark is not None and "interrupted" in (mark.get("message") or ""), junit.read_text()
