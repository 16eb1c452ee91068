"""A run's progress (harness/reports/progress.py): one line per finished case, whatever the
workers, with no path in it; pytest's own output when the user asks pytest for a verbosity."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_host_conformance.harness.reports.progress import asks_for_verbosity, case_line
from mcp_host_conformance.harness.reports.reporting import (
    P_AT_STAKE,
    P_CASE,
    P_MONITORS,
    P_OUTCOME,
    P_REQUIREMENTS,
)

BOUND = 300.0
CASES = (
    "test_adding_a_server_does_not_connect",
    "test_listing_shows_no_secret",
    "test_removed_server_is_not_connected_at_next_start",
    "test_credential_file_is_private",
)
CASE_LINE = re.compile(r"^ *(\d+)/(\d+) (\S+(?: \S+)?) +(test_\w+::\S+)  \[([A-Z0-9, -]+)\]")


@pytest.mark.parametrize(
    "args, asked",
    [
        (["-v"], True),
        (["-vv"], True),
        (["-q"], True),
        (["-xv"], True),
        (["--verbose"], True),
        (["--quiet"], True),
        (["--verbosity=2"], True),
        (["--verbosity", "1"], True),
        (["-k", "quick"], False),  # a v or q in a value is not a flag
        (["-kv"], False),
        (["-p", "no:randomly"], False),
        (["-rA", "-x", "--tb=short"], False),
        ([], False),
    ],
)
def test_which_arguments_ask_pytest_for_its_own_output(args, asked):
    assert asks_for_verbosity(args) is asked


def test_a_case_line_says_outcome_case_and_rules():
    props = {P_CASE: "test_approval::test_x", P_OUTCOME: "not_applicable", P_REQUIREMENTS: "PIN-1"}
    line, markup = case_line(3, 128, "conformance/test_approval.py::test_x", props, "skipped")
    assert line == "  3/128 not applicable    test_approval::test_x  [PIN-1]"
    assert markup == {}


def test_a_failed_case_names_the_rules_it_failed_and_a_monitors_finding():
    props = {
        P_CASE: "test_retry::test_y",
        P_OUTCOME: "failed",
        P_REQUIREMENTS: "RETRY-1 RETRY-2",
        P_AT_STAKE: "RETRY-2",
        P_MONITORS: json.dumps([{"rule": "APR-1", "outcome": "failed"}] * 3),
    }
    line, markup = case_line(12, 12, "x", props, "failed")
    assert line == "12/12 failed            test_retry::test_y  [RETRY-2]  monitors: APR-1 failed"
    assert markup["red"]


def test_a_case_whose_own_checks_passed_but_a_monitor_failed_is_red():
    props = {
        P_CASE: "test_z::test_z",
        P_OUTCOME: "passed",
        P_REQUIREMENTS: "CFG-1",
        P_MONITORS: json.dumps([{"rule": "STDIO-2", "outcome": "failed"}]),
    }
    line, markup = case_line(1, 1, "x", props, "failed")
    assert line.endswith("[CFG-1]  monitors: STDIO-2 failed") and markup["red"]


def test_a_test_that_is_no_case_shows_its_node_id_and_pytest_s_outcome():
    line, _ = case_line(1, 2, "tests/test_own.py::test_a", {}, "skipped")
    assert line == "1/2 skipped           tests/test_own.py::test_a"


def test_host_text_in_a_case_line_stays_on_one_line():
    props = {P_CASE: "test_a::test_b[x\n\x1b[2J]", P_OUTCOME: "passed"}
    line, _ = case_line(1, 1, "x", props, "passed")
    assert "\n" not in line and "\x1b" not in line


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MCP_HOST_"))}
    return subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance", "run", "--network", "host", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )


@pytest.mark.parametrize("workers", [["--serial"], ["-n", "2"]], ids=["serial", "workers"])
def test_a_run_prints_one_line_per_case_and_no_path_nor_percentage(tmp_path, workers):
    done = _run(*workers, "--", "-k", " or ".join(CASES), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("collected "))
    end = next(i for i, line in enumerate(lines) if "mcp-host-conformance" in line and i > start)
    progress = [line for line in lines[start + 1 : end] if line.strip()]
    found = [CASE_LINE.match(line) for line in progress]
    assert all(found) and len(found) == len(CASES), "\n".join(progress)
    assert sorted(int(m.group(1)) for m in found if m) == list(range(1, len(CASES) + 1))
    assert {m.group(4).split("::")[1] for m in found if m} == set(CASES)
    assert not [line for line in lines if re.search(r"\[ *\d+%\]", line)], done.stdout
    assert not [line for line in progress if "/" in line.split()[-2]], "a path in a case line"


def test_pytest_s_own_progress_when_the_user_asks_for_a_verbosity(tmp_path):
    done = _run("--serial", "--", "-v", "-k", CASES[0], cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(
        rf"conformance/test_configuration.py::{CASES[0]} PASSED +\[100%\]", done.stdout
    )
    assert not [line for line in done.stdout.splitlines() if CASE_LINE.match(line)]
