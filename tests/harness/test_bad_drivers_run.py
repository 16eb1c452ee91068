"""A whole `mcp-host-conformance run --client-cmd BAD` against drivers that die, answer
garbage or hang: the run ends in bounded time, non-zero, and says why.

Strategy: test_driver.py checks `DriverAdapter` alone; this checks the same failures through
everything above it (the CLI, the plugin's describe in the report header, the fixtures'
bounds, teardown and the adapter's close at the end of the run), in a child process as a
user would run it, restricted to one case and with the suite's bounds scaled down so each
run takes seconds.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

ONE_CASE = "test_adding_a_server_does_not_connect"  # CFG-1: add_server then start
RUN_BOUND = 60.0  # seconds; a hung suite would never end

DIES = "import sys; sys.exit(3)"
GARBAGE = "import sys; print('hello, I am not JSON', flush=True); sys.stdin.read()"
# Answers the handshake and describe, then never answers again and never reads again.
HANGS = r"""
import json, os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
for _ in range(2):
    m = json.loads(sys.stdin.readline())
    result = {"protocol": "mcp-host-conformance-driver/1"} if m["method"] == "initialize" else {
        "name": "hangs", "version": "0"}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
time.sleep(3600)
"""


def run_suite(driver: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    report = tmp_path / "report.json"
    argv = [
        sys.executable,
        "-m",
        "mcp_host_conformance.harness.cli",
        "run",
        "--client-cmd",
        driver,
        "--report-json",
        str(report),
        "--",
        "-k",
        ONE_CASE,
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "--timeout-scale",
        "0.1",
    ]
    started = time.monotonic()
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=RUN_BOUND,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    return done, time.monotonic() - started


def python(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


@pytest.mark.parametrize(
    "code, message",
    [
        (DIES, "the driver exited (status 3)"),
        (GARBAGE, "the driver broke the protocol: not JSON"),
    ],
    ids=["dies", "garbage"],
)
def test_a_driver_that_fails_at_once_fails_the_run_with_the_reason(code, message, tmp_path):
    done, took = run_suite(python(code), tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert message in output, output
    assert "1 error" in output or "1 failed" in output, output
    assert took < RUN_BOUND


def test_a_driver_that_hangs_fails_its_case_within_the_bound_and_is_killed(tmp_path):
    pid_file = tmp_path / "driver.pid"
    script = tmp_path / "hangs.py"
    script.write_text(HANGS)
    driver = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(pid_file))}"
    )
    done, took = run_suite(driver, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "the client did not return from add_server" in output, output
    assert "1 failed" in output or "1 error" in output, output
    assert took < RUN_BOUND
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the harness killed the hung driver (its process group) at the end
