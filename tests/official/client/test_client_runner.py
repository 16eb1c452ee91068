"""The runner of the framework's client scenarios: its rules, its baseline, and that it can fail.

The rules and the baseline are checked everywhere; the end-to-end tests need the pinned
framework installed (`npm ci --prefix tests/official/client`) and skip without it, unless
MCP_OFFICIAL_REQUIRED=1 (set by the `official-client` tox env) turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import pytest

from tests.official.client import run_client_conformance as rc

OK = {"id": "c", "status": "SUCCESS"}


def test_the_baseline_parses_with_a_reason_for_every_entry() -> None:
    baseline = rc.parse_baseline(rc.BASELINE.read_text())
    assert baseline and all(reason for reason in baseline.values())
    assert not set(rc.REQUIRED) & set(baseline)
    assert "elicitation-sep1034-client-defaults" in baseline
    assert all(name.startswith("auth/") for name in baseline if "elicitation" not in name)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("client:\n  - auth/x\n", "no reason"),
        ("client:\n  - a  # r\n  - a  # r\n", "listed twice"),
        ("client:\n  a: b\n", "not a"),
    ],
)
def test_a_malformed_baseline_is_refused(text: str, problem: str) -> None:
    with pytest.raises(rc.SetupError, match=problem):
        rc.parse_baseline(text)


def test_other_sections_and_comments_are_ignored() -> None:
    text = "# top\nserver:\n  - s1\nclient:\n  # why\n  - c1  # reason one\n"
    assert rc.parse_baseline(text) == {"c1": "reason one"}


def test_baseline_problems() -> None:
    scenarios = ["initialize", "tools_call", "sse-retry", "auth/x"]
    assert rc.baseline_problems({"auth/x": "r"}, scenarios) == []
    assert "required to pass" in rc.baseline_problems({"sse-retry": "r"}, scenarios)[0]
    assert "no such client scenario" in rc.baseline_problems({"auth/gone": "r"}, scenarios)[0]
    assert "no sse-retry" in rc.baseline_problems({}, ["initialize", "tools_call"])[0]


@pytest.mark.parametrize(
    ("returncode", "checks", "expected"),
    [
        (None, [OK], "did not finish"),
        (0, [], "no successful check"),
        (0, [OK, {"id": "x", "status": "FAILURE", "errorMessage": "boom"}], "FAILURE x: boom"),
        (0, [OK, {"id": "w", "status": "WARNING", "description": "late"}], "WARNING w: late"),
        (1, [OK], "client as failed"),
    ],
)
def test_a_scenario_fails_for_a_reason(returncode, checks, expected) -> None:
    assert rc.checks_problem(0, [OK, {"id": "i", "status": "INFO"}]) is None
    assert expected in (rc.checks_problem(returncode, checks) or "")


def test_verdicts_against_the_baseline() -> None:
    assert rc.Verdict("a", None, None).ok
    assert rc.Verdict("a", "FAILURE x", "no OAuth").ok
    assert not rc.Verdict("a", "FAILURE x", None).ok  # unexpected failure
    stale = rc.Verdict("a", None, "no OAuth")
    assert not stale.ok and "STALE" in stale.line()


def test_scenario_list_and_pins() -> None:
    output = "Client scenarios (test against a client):\n  - initialize [2025-06-18]\n  - auth/x\n"
    assert rc.parse_scenario_list(output) == ["initialize", "auth/x"]
    pinned = json.loads((rc.HERE / "package.json").read_text())["dependencies"]
    assert pinned == {"@modelcontextprotocol/conformance": "0.1.16", "node": "22.23.3"}
    assert rc.pin_problem(pinned, dict(pinned)) is None
    assert "not installed" in (rc.pin_problem(pinned, {}) or "")


# ---- end to end, with the pinned framework ---------------------------------------------------


@pytest.fixture
def installed() -> list[str]:
    try:
        return rc.framework()
    except rc.SetupError as exc:
        if os.environ.get("MCP_OFFICIAL_REQUIRED") == "1":
            pytest.fail(f"the pinned framework is required here: {exc}")
        pytest.skip(f"the official framework is not installed: {exc}")


def test_the_reference_host_passes_sse_retry(installed, tmp_path) -> None:
    assert rc.run_scenario(installed, "sse-retry", tmp_path, verbose=False) is None


def test_a_client_that_does_not_resume_fails_sse_retry(installed, tmp_path) -> None:
    idle = shlex.join([sys.executable, "-c", "pass"])  # connects to nothing, resumes nothing
    problem = rc.run_scenario(installed, "sse-retry", tmp_path, verbose=False, command=idle)
    assert problem is not None and "FAILURE" in problem
