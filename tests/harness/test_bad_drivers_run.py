"""A whole `mcp-host-conformance run --client-cmd BAD` against drivers that fail: the run
ends in bounded time, non-zero, and says why.

Strategy: test_hostile_drivers.py checks `DriverAdapter` alone; this checks the same
failures through everything above it (the CLI, the plugin's preflight, the fixtures'
bounds, teardown and the adapter's close at the end of the run), in a child process as a
user would run it, with the suite's bounds scaled down so each run takes seconds. A driver
that fails its handshake stops the run before any case, with one line.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.stdio_server import pid_alive

ONE_CASE = "test_adding_a_server_does_not_connect"  # CFG-1: add_server then start
RUN_BOUND = 120.0  # seconds; a hung suite would never end
FEW_SECONDS = 30.0  # a refused run must end long before this, even on a loaded machine

DIES = "import sys; sys.exit(3)"
GARBAGE = "import sys; print('hello, I am not JSON', flush=True); sys.stdin.read()"
SILENT = "import sys; sys.stdin.read()"
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


def run_suite(
    driver: str, tmp_path: Path, scale: str = "0.1"
) -> tuple[subprocess.CompletedProcess[str], float]:
    report = tmp_path / "report.json"
    argv = [
        # serial: the scripted drivers answer in the order of one process's messages (a
        # worker of a parallel run has its description from the controller, not its driver)
        sys.executable, "-m", "mcp_host_conformance.harness.cli", "run", "--serial",
        "--client-cmd", driver, "--report-json", str(report), "--timeout-scale", scale,
        "--", "-k", ONE_CASE, "-p", "no:randomly", "-p", "no:cacheprovider",
    ]  # fmt: skip
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
        (SILENT, "the driver did not answer initialize within 1.5 s"),
    ],
    ids=["dies", "garbage", "never-replies"],
)
def test_a_failed_handshake_stops_the_run_with_one_line(code, message, tmp_path):
    # Only the silent driver waits out its (scaled) handshake bound; the others get the room
    # a loaded machine needs to start Python, so their own error is the one seen.
    done, took = run_suite(python(code), tmp_path, scale="0.05" if code == SILENT else "1")
    assert done.returncode == 4, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ERROR: mcp-host-conformance: the driver failed its handshake: ")
    assert message in lines[0]
    assert "passed" not in done.stdout and "failed" not in done.stdout, "no case may run"
    assert not (tmp_path / "report.json").exists()
    assert took < FEW_SECONDS


def test_a_driver_that_hangs_fails_its_case_within_the_bound_and_is_killed(tmp_path):
    pid_file = tmp_path / "driver.pid"
    script = tmp_path / "hangs.py"
    script.write_text(HANGS)
    driver = shlex.join([sys.executable, str(script), str(pid_file)])
    done, took = run_suite(driver, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    # the first operation of a case: the host's own project files (CFG-2's lures), asked once
    assert "the client did not return from project_config()" in output, output
    assert "1 failed" in output or "1 error" in output, output
    assert took < RUN_BOUND
    pid = int(pid_file.read_text())
    assert not pid_alive(pid), "the harness must kill the hung driver at the end of the run"
