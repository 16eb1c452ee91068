"""The HTML report (`--report-html`): its content from a JSON report, and the page as a real
headless browser shows it."""

from __future__ import annotations

import os

import pytest

from mcp_host_conformance.harness.reports.html import render_html
from mcp_host_conformance.harness.reports.reporting import CaseResult, build_report
from tests.harness import headless_browser

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
BROWSER_REQUIRED = "MCP_BROWSER_REQUIRED"


def sample_report() -> dict:
    cases = [
        CaseResult(
            id="test_results::test_timeout_is_unknown",
            nodeid="conformance/test_results.py::test_timeout_is_unknown",
            requirements=["RES-6"],
            outcome="failed",
            expected="status unknown after the call timeout",
            actual=f"the model received {HOSTILE!r}, not status unknown",
            message="RES-6 (MUST): ...",
            duration=0.5,
        ),
        CaseResult(
            id="test_approval::test_empty_answer_denies",
            nodeid="conformance/test_approval.py::test_empty_answer_denies",
            requirements=["APR-2"],
            outcome="passed",
            duration=0.2,
        ),
        CaseResult(
            id="test_network::test_redirects",
            nodeid="conformance/test_network.py::test_redirects",
            requirements=["NET-3"],
            outcome="expected_failure",
            expected="no redirect followed",
            actual="the target received 1 request",
            duration=0.3,
        ),
    ]
    report = build_report(
        cases,
        client=None,
        strict=False,
        exit_status=1,
        environment={"network": "isolated", "network_reason": ""},
    )
    report["client"] = {"name": "some-host", "version": "1.2", "profiles": []}
    return report


def test_the_page_holds_the_summary_and_every_failure_with_rule_expected_and_actual():
    page = render_html(sample_report())
    assert "<title>MCP host conformance: some-host 1.2</title>" in page
    assert "conformance run FAILED" in page and "network: isolated" in page
    assert '<table id="summary">' in page and "<th>RES</th>" in page
    assert "Failures (MUST): 1" in page and "Expected failures (listed in the baseline): 1" in page
    assert "A call cancelled" not in page  # only the rules of the failures shown
    assert "No answer within the call timeout" in page  # RES-6's rule text
    assert "status unknown after the call timeout" in page
    assert "test_approval::test_empty_answer_denies" not in page  # passed cases not listed


def test_host_text_is_escaped_and_the_page_runs_and_loads_nothing():
    page = render_html(sample_report())
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in page
    assert "default-src 'none'" in page


@pytest.fixture(scope="module")
def browser():
    why_not = headless_browser.available()
    if why_not:
        if os.environ.get(BROWSER_REQUIRED):
            pytest.fail(f"{BROWSER_REQUIRED} is set but {why_not}")
        pytest.skip(why_not)
    with headless_browser.HeadlessBrowser() as opened:
        yield opened


def visible_text(browser, selector: str) -> str:
    return browser.evaluate(
        f"""(() => {{ const e = document.querySelector({selector!r});
        return e && e.getClientRects().length ? e.innerText : null; }})()"""
    )


def test_a_headless_browser_shows_the_report(browser, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(render_html(sample_report()), "utf-8")
    browser.open(path.as_uri())

    assert browser.evaluate("document.title") == "MCP host conformance: some-host 1.2"
    assert "conformance run FAILED" in visible_text(browser, "#verdict")
    summary = visible_text(browser, "#summary")
    assert "RES" in summary and "APR" in summary and "total" in summary
    failure = visible_text(browser, "#case-test_results\\:\\:test_timeout_is_unknown")
    assert "RES-6 (MUST): No answer within the call timeout" in failure
    assert "status unknown after the call timeout" in failure
    # what the host sent is shown as text, never run or loaded
    assert "<script>window.pwned = 1</script>" in failure
    assert browser.evaluate("typeof window.pwned") == "undefined"
    assert browser.evaluate("document.scripts.length + document.images.length") == 0
    assert "Page.javascriptDialogOpening" not in browser.event_methods()


def test_a_run_writes_the_page_and_the_browser_shows_its_verdict(tmp_path, request):
    """`run --report-html` end to end: the page of a real run (two cases) opens and says how
    the run went; the JSON and the HTML report agree."""
    import json
    import subprocess

    page, report = tmp_path / "report.html", tmp_path / "report.json"
    done = subprocess.run(
        ["mcp-host-conformance", "run", "--network", "host", "--report-html", str(page)]
        + ["--report-json", str(report), "--", "-q", "-p", "no:randomly"]
        + ["-k", "test_plain_http_to_loopback_forms_is_accepted or test_certificate_not_trusted"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"HTML report: {page}" in done.stdout
    assert page.read_text("utf-8") == render_html(json.loads(report.read_text("utf-8")))
    browser = request.getfixturevalue("browser")  # skipped here when there is no browser
    browser.open(page.as_uri())
    assert "conformance run PASSED" in visible_text(browser, "#verdict")
