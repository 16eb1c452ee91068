"""The runner of the official conformance framework: its rules, its fixture, and that it can fail.

The rules and the fixture are checked everywhere; the end-to-end test needs the pinned
framework installed (`npm ci --prefix tests/official`) and skips without it, unless
MCP_OFFICIAL_REQUIRED=1 (set by the `official-conformance` tox env) turns the skip
into a failure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.spec import load_spec
from tests.official import run_conformance as rc

OK = {"id": "ping", "status": "SUCCESS"}


def test_a_clean_run_passes() -> None:
    assert rc.checks_problem(0, [OK]) is None


@pytest.mark.parametrize(
    ("returncode", "checks", "expected"),
    [
        (None, [OK], "did not finish"),
        (1, [OK], "exited with 1"),
        (0, [], "no successful check"),
        (0, [OK, {"id": "x", "status": "FAILURE", "errorMessage": "boom"}], "FAILURE x: boom"),
        (0, [OK, {"id": "w", "status": "WARNING", "description": "meh"}], "WARNING w: meh"),
    ],
)
def test_a_run_fails_for_a_reason(returncode, checks, expected) -> None:
    assert expected in (rc.checks_problem(returncode, checks) or "")


def test_the_journal_must_show_the_scenarios_request() -> None:
    call = ("tools/call", {"name": "test_simple_text", "arguments": {}})
    assert rc.journal_problem("tools-call-simple-text", [("initialize", {}), call]) is None
    assert "never received tools/call of test_image_content" in (
        rc.journal_problem("tools-call-image", [call]) or ""
    )
    assert rc.journal_problem("ping", [("initialize", {})]) is not None


def test_the_polling_scenario_must_have_resumed_a_stream() -> None:
    assert "Last-Event-ID" in (rc.resumption_problem("server-sse-polling", 0) or "")
    assert rc.resumption_problem("server-sse-polling", 1) is None
    assert rc.resumption_problem("ping", 0) is None


def test_pins_must_match_what_is_installed() -> None:
    pinned = {"node": "22.23.3", "@modelcontextprotocol/conformance": "0.1.16"}
    assert rc.pin_problem(pinned, dict(pinned)) is None
    assert "not installed" in (rc.pin_problem(pinned, {"node": "22.23.3"}) or "")
    assert "pins 0.1.16" in (
        rc.pin_problem(pinned, {"node": "22.23.3", "@modelcontextprotocol/conformance": "0.1.15"})
        or ""
    )


def test_package_json_pins_exact_versions() -> None:
    deps = json.loads((rc.HERE / "package.json").read_text())["dependencies"]
    assert set(deps) == {rc.PACKAGE, rc.NODE_PACKAGE}
    assert all(v[0].isdigit() for v in deps.values()), deps  # no ranges
    assert deps[rc.NODE_PACKAGE].startswith("22.")


def test_the_fixture_has_every_tool_the_scenarios_call() -> None:
    spec = load_spec(rc.SPEC_FILE)
    called = {tool for _, tool in rc.SCENARIOS.values() if tool}
    assert called == {t.name for t in spec.tools}
    for tool in spec.tools:  # tools-list wants both on every tool
        assert tool.description and isinstance(tool.input_schema, dict)
    assert spec.tool("test_error_handling").reply.is_error
    assert spec.tool("test_audio_content").reply.content[0]["mimeType"] == "audio/wav"
    polling = spec.misbehaviour  # only test_reconnection polls (server-sse-polling)
    assert polling.poll_call == "deliver" and polling.poll_tools == ["test_reconnection"]


def test_summary_names_each_failure() -> None:
    results = [rc.ScenarioResult("ping", 0), rc.ScenarioResult("tools-list", 1, problem="bad")]
    assert rc.summary_lines(results) == [
        "FAILED tools-list: bad",
        "official conformance: 1 passed, 1 failed",
    ]


def _framework_or_skip() -> None:
    try:
        rc.installed_framework()
    except rc.SetupError as exc:
        if os.environ.get("MCP_OFFICIAL_REQUIRED") == "1":
            pytest.fail(f"MCP_OFFICIAL_REQUIRED=1 but {exc}", pytrace=False)
        pytest.skip(str(exc))


def test_the_runner_fails_a_mock_that_breaks_a_scenario(tmp_path: Path) -> None:
    """The framework, really run, must catch a fixture tool that does not report its error."""
    _framework_or_skip()
    spec = json.loads(rc.SPEC_FILE.read_text())
    for tool in spec["tools"]:
        if tool["name"] == "test_error_handling":
            tool["reply"]["is_error"] = False
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(spec))
    results = rc.run(["tools-call-error"], broken, tmp_path / "out")
    assert [r.passed for r in results] == [False]
    assert "isError" in (results[0].problem or ""), results[0].problem


def test_the_sse_scenarios_pass_against_the_mock(tmp_path: Path) -> None:
    """server-sse-polling and server-sse-multiple-streams, really run, in both modes."""
    _framework_or_skip()
    scenarios = ["server-sse-polling", "server-sse-multiple-streams"]
    results = rc.run(scenarios, rc.SPEC_FILE, tmp_path / "out", modes=("sse", "json"))
    assert [(r.name, r.problem) for r in results if not r.passed] == []
    assert len(results) == 4


def test_the_runner_fails_a_mock_that_does_not_poll(tmp_path: Path) -> None:
    """A mock answering test_reconnection at once (no priming, no close) must fail."""
    _framework_or_skip()
    spec = json.loads(rc.SPEC_FILE.read_text())
    del spec["misbehaviour"]
    broken = tmp_path / "not-polling.json"
    broken.write_text(json.dumps(spec))
    results = rc.run(["server-sse-polling"], broken, tmp_path / "out")
    assert [r.passed for r in results] == [False]
    assert "priming" in (results[0].problem or ""), results[0].problem
