"""The Markdown summary (`--report-markdown`, harness/reports/markdown.py): the verdict, the
failed MUST rules with their full text and the case that showed each, the SHOULD warnings,
the baseline, the next step; host text kept inert and the whole bounded."""

from __future__ import annotations

import re

import pytest

from mcp_host_conformance.harness.reports.markdown import RULES_SHOWN, render_markdown
from mcp_host_conformance.harness.reports.reporting import CaseResult, build_report
from mcp_host_conformance.harness.verdicts.baseline import Baseline
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS
from tests.harness.test_report_html import sample_cases, sample_report

pytest_plugins = ["pytester"]


def sections(text: str) -> list[str]:
    return re.findall(r"^### (.*)$", text, re.M)


def test_the_summary_reads_verdict_rules_warnings_baseline_and_next_step_in_that_order():
    text = render_markdown(sample_report(), report_json="r.json", report_html="r.html")
    lines = text.splitlines()
    assert lines[0] == "## MCP host conformance: ` some-host 1.2 `"
    assert lines[2].startswith("**FAILED**: 3 MUST rules broken, seen in 6 cases; 1 SHOULD")
    assert sections(text) == [
        "Failed MUST rules: 3",
        "SHOULD warnings (fail the run only with --strict): 1",
        "Baseline",
        "Next step",
    ]
    for rid in ("EXP-2", "RES-6", "NET-3"):
        rule = REQUIREMENTS[rid].rule.partition(" Decision: ")[0]
        assert f"- **{rid}** (MUST) {rule}" in text
    assert text.index("**EXP-2**") < text.index("**RES-6**") < text.index("**NET-3**")
    # EXP-2 shown by the case that failed on it; the cases it stopped are counted
    assert (
        "  - shown by ` test_exposure::test_awkward_names_are_valid_unique_and_stable ` "
        "and 3 other cases" in text
    )
    assert "- **HARD-1** (SHOULD)" in text
    assert "mcp-host-conformance baseline r.json -o expected-failures.txt" in text
    assert "the HTML report ` r.html `" in text


def test_a_rule_shown_only_by_a_precondition_says_so():
    cases = [c for c in sample_cases() if "test_approval::test_anything" in c.id]
    report = build_report(cases, client=None, strict=False, exit_status=1)
    text = render_markdown(report)
    assert (
        "  - shown by ` test_approval::test_anything_but_yes_denies ` (a case of APR-2, "
        "stopped at this rule as its precondition)" in text
    )


HOSTILE = [
    "```\n# heading\n<img src=x onerror=alert(1)>",
    "`` two ticks `` and ` one",
    "line one\n\nline three | a | table",
    "[link](javascript:alert(1)) *emphasis* \x1b[2J \u202e",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_host_text_is_one_inert_code_span(value):
    report = sample_report()
    for case in report["cases"]:
        case["actual"] = value
    report["client"]["name"] = value
    text = render_markdown(report)
    for line in text.splitlines():
        if "actual:" in line:
            span = line.split("actual: ", 1)[1]
            fence = re.match(r"`+", span)
            assert fence is not None, line
            ticks = fence.group()
            assert span.startswith(ticks + " ") and span.endswith(" " + ticks)
            inner = span[len(ticks) + 1 : -len(ticks) - 1]
            # a span closes at a run of exactly as many backticks: none inside
            assert len(ticks) not in {len(run) for run in re.findall(r"`+", inner)}
            assert "\n" not in inner and "\x1b" not in inner and "\u202e" not in inner
    assert "\n# heading" not in text and "\n\nline three" not in text


def test_the_summary_is_bounded_however_many_rules_and_however_long_the_values():
    long = "x" * 50_000
    cases = [
        CaseResult(
            id=f"test_m::case_{rid}",
            nodeid=f"conformance/test_m.py::case_{rid}",
            requirements=[rid],
            outcome="failed",
            expected=long,
            actual=long,
            failed_requirements=[rid],
        )
        for rid, req in REQUIREMENTS.items()
        if req.level == "MUST"
    ]
    report = build_report(cases, client=None, strict=False, exit_status=1)
    text = render_markdown(report)
    assert len(text) < 64 * 1024
    assert text.count("\n- **") == RULES_SHOWN
    hidden = len(cases) - RULES_SHOWN
    assert f"- … and {hidden} more rules (the HTML report lists them all)" in text


def test_a_passing_run_and_its_baseline():
    passed = build_report([], client=None, strict=False, exit_status=0)
    text = render_markdown(passed)
    assert "**PASSED**: no rule broken (exit status 0)" in text
    assert "None (`--expected-failures`): every failure counts." in text
    assert "Passed: nothing to do." in text
    stale = build_report(
        [],
        client=None,
        strict=False,
        exit_status=1,
        baseline=Baseline(path="gaps.txt", entries={"t_n::fixed": 1}),
        stale=["t_n::fixed"],
    )
    held = build_report(
        [c for c in sample_cases() if c.outcome == "expected_failure"],
        client=None,
        strict=False,
        exit_status=0,
        baseline=Baseline(path="gaps.txt", entries={"NET-1": 1}),
    )
    assert "- the rules it excuses in this run: NET-1" in render_markdown(held)
    text = render_markdown(stale)
    assert "` gaps.txt `: 0 expected failures (listed, so they pass)." in text
    assert "- stale (now passes; remove it): ` t_n::fixed `" in text


CONFTEST = """
from mcp_host_conformance.harness.contract.adapter import Description
from mcp_host_conformance.harness.reports.reporting import ReportingPlugin

def pytest_addoption(parser):
    group = parser.getgroup("mcp-host-conformance")
    group.addoption("--report-markdown", dest="mcphc_report_markdown", default=None)

def pytest_configure(config):
    config.addinivalue_line("markers", "mcphc_requirements(*ids): ids")
    plugin = ReportingPlugin(config)
    plugin.set_client(Description(name="fakehost", version="9.9"))
    config.pluginmanager.register(plugin, "mcp-host-conformance-reporting")
"""

CASES = """
import pytest
from mcp_host_conformance.harness.verdicts.outcomes import check

@pytest.mark.mcphc_requirements("APR-2")
def test_must_fails():
    check(False, ids="APR-2", expected="status denied", actual="status completed")
"""


def test_a_run_writes_the_summary_and_says_where(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_cases=CASES)
    summary = pytester.path / "out" / "summary.md"
    result = pytester.runpytest_inprocess(f"--report-markdown={summary}")
    assert "does not exist; nothing was run" in result.stderr.str()
    summary.parent.mkdir()
    result = pytester.runpytest_inprocess(f"--report-markdown={summary}")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"Markdown summary: {summary}"])
    text = summary.read_text("utf-8")
    assert text.startswith("## MCP host conformance: ` fakehost 9.9 `")
    assert "- **APR-2** (MUST) Approval is default-deny" in text
    assert "  - expected: ` status denied `" in text
