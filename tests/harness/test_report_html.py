"""The HTML report (`--report-html`): read in ten seconds. Its content and its order from a
JSON report (no browser), and the page as a real headless Chromium shows it at 1280x800:
the first screen holds the verdict and the failed MUST rules, a rule's cases and evidence
open in one click, the filter works offline, and a screenshot of the first screen is kept
(its path printed)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from html.parser import HTMLParser

import pytest

from mcp_host_conformance.harness.reports.html import SHOWN, render_html
from mcp_host_conformance.harness.reports.reporting import CaseResult, build_report
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS
from tests.harness import headless_browser

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
BROWSER_REQUIRED = "MCP_BROWSER_REQUIRED"
VIEWPORT = (1280, 800)
LONG = "HEAD-" + "x" * 30_000 + "-TAIL"


def _monitor(rule: str, actual: str) -> dict[str, str]:
    return {
        "rule": rule,
        "monitor": "exposed-names",
        "expected": "every offered name matches the pattern",
        "actual": actual,
        "outcome": "failed",
    }


def _case(
    node: str, rule: str, outcome: str, expected: str = "", actual: str = "", **more: object
) -> CaseResult:
    """A case of `conformance/<node>` checking `rule`; a failing one fails `rule` unless
    `failed` names another (a precondition's rule)."""
    module, test = node.split("::")
    failed = more.pop("failed", rule) if outcome != "passed" else None
    return CaseResult(
        id=f"{module}::{test}",
        nodeid=f"conformance/{module}.py::{test}",
        requirements=[rule],
        outcome=outcome,
        expected=expected,
        actual=actual,
        failed_requirements=[failed] if failed else [],
        **more,  # type: ignore[arg-type]
    )


def sample_cases() -> list[CaseResult]:
    """A host that breaks EXP-2 (two cases of other rules stop at it: preconditions; a
    monitor sees it in a third), RES-6 (with a hostile and a long actual value) and NET-3,
    warns on HARD-1, and has NET-1 in its baseline."""
    stopped = "precondition failed: EXP-2 (MUST): ...\n  expected: names the model accepts"
    refused = "the model service refused the request: Invalid 'tools[{}].name'"
    at_exp2 = {"message": stopped, "failed": "EXP-2", "precondition": True}
    return [
        _case(
            "test_exposure::test_awkward_names_are_valid_unique_and_stable",
            "EXP-2", "failed", "every offered name valid", "'mcp_docs_read.file' offered",
        ),
        _case(
            "test_approval::test_confirmation_names_server_destination_tool_and_arguments",
            "APR-4", "failed", "tools the model service accepts", refused.format(0), **at_exp2,
        ),
        _case(
            "test_approval::test_anything_but_yes_denies",
            "APR-2", "failed", "tools the model service accepts", refused.format(1), **at_exp2,
        ),
        _case(
            "test_approval::test_every_call_waits_for_its_own_approval",
            "APR-1", "passed",
            monitors=[_monitor("EXP-2", "docs/a b offered as 'mcp_docs_a b'")],
        ),
        _case(
            "test_results::test_timeout_is_unknown",
            "RES-6", "failed", "status unknown after the call timeout",
            f"the model received {HOSTILE!r}, not status unknown; {LONG}",
        ),
        _case(
            "test_network::test_same_origin_redirect_is_not_followed",
            "NET-3", "failed", "no redirect followed", "the target received 1 request",
        ),
        _case(
            "test_hostile_text::test_server_text_is_shown_neutralized",
            "HARD-1", "warning", "no raw escape", "ESC [2J shown raw",
        ),
        _case(
            "test_network::test_plain_http_to_a_remote_host_is_refused_at_once",
            "NET-1", "expected_failure", "refused at add", "accepted",
        ),
    ]  # fmt: skip


def sample_report() -> dict:
    report = build_report(
        sample_cases(),
        client=None,
        strict=False,
        exit_status=1,
        environment={"network": "isolated", "network_reason": ""},
    )
    report["client"] = {"name": "some-host", "version": "1.2", "profiles": []}
    return report


# ---- the page's content and order, no browser ------------------------------------------


class _Outline(HTMLParser):
    """The ids of the page's elements in document order, and each failed rule's summary."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.summaries: dict[str, str] = {}
        self._rule: str | None = None
        self._in_summary = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs).get("id")
        if found:
            self.ids.append(found)
            if tag == "details":
                self._rule = found
        if tag == "summary" and self._rule and self._rule not in self.summaries:
            self._in_summary = True  # the rule's own summary, not a nested value's
            self.summaries[self._rule] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "summary":
            self._in_summary = False

    def handle_data(self, data: str) -> None:
        if self._in_summary and self._rule:
            self.summaries[self._rule] += data


def outline(page: str) -> _Outline:
    parsed = _Outline()
    parsed.feed(page)
    return parsed


def test_the_verdict_next_step_and_failed_rules_come_first_then_the_rest():
    ids = outline(render_html(sample_report())).ids
    failed = [i for i in ids if i.startswith("rule-failed-")]
    # the rule shown by the most cases first: EXP-2 (a case of its own, two it stopped, one
    # a monitor saw), then RES-6 and NET-3 in the catalog's order
    assert failed == ["rule-failed-EXP-2", "rule-failed-RES-6", "rule-failed-NET-3"]
    order = [
        "verdict",
        "next-step",
        "filter",
        "failed",
        *failed,
        "warning",
        "rule-warning-HARD-1",
        "expected_failure",
        "rule-expected_failure-NET-1",
        "summary",
        "environment",
    ]
    assert [i for i in ids if i in order] == order


def test_each_failed_rule_shows_its_full_rule_and_how_many_cases_showed_it():
    summaries = outline(render_html(sample_report())).summaries
    for rid in ("EXP-2", "RES-6", "NET-3"):
        text = " ".join(summaries[f"rule-failed-{rid}"].split())
        rule = REQUIREMENTS[rid].rule.partition(" Decision: ")[0].replace("`", "")
        assert text.startswith(f"{rid} MUST {rule}"), text
    assert (
        "(4 cases; 2 of them stopped at it as a precondition; 1 seen by a monitor)"
        in (summaries["rule-failed-EXP-2"])
    )


def test_a_precondition_failure_is_folded_under_the_rule_that_caused_it_and_labelled():
    page = render_html(sample_report())
    exp2 = page[page.index('id="rule-failed-EXP-2"') : page.index('id="rule-failed-RES-6"')]
    for cid in (
        "test_approval::test_confirmation_names_server_destination_tool_and_arguments",
        "test_approval::test_anything_but_yes_denies",
    ):
        assert cid in exp2
    assert exp2.count('class="tag precondition"') == 2
    assert "a case of APR-4, stopped before its own check because this rule was broken first" in (
        exp2
    )
    assert "monitor exposed-names" in exp2 and "mcp_docs_a b" in exp2
    # the cases of APR-2 and APR-4 appear under EXP-2 only: their own rules did not fail
    assert 'id="rule-failed-APR-4"' not in page and 'id="rule-failed-APR-2"' not in page


def test_a_long_value_shows_its_head_and_tail_around_a_visible_marker():
    page = render_html(sample_report())
    res6 = page[page.index('id="rule-failed-RES-6"') : page.index('id="rule-failed-NET-3"')]
    first = re.search(r"<dt>actual</dt><dd><pre>(.*?)</pre>", res6, re.S)
    assert first is not None
    shown = first.group(1)
    assert "the model received" in shown and shown.endswith("-TAIL")
    assert re.search(r'<mark class="cut"> … \[[\d,]+ characters cut\] … </mark>', shown)
    assert len(html.unescape(re.sub(r"<[^>]+>", "", shown))) <= SHOWN
    assert "all " in res6 and "characters the report kept</summary>" in res6


def test_host_text_is_escaped_and_only_the_pages_own_script_may_run():
    page = render_html(sample_report())
    assert "<img" not in page
    assert page.count("<script") == 1  # the filter's, at the end
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in page
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert "default-src 'none'" in policy.group(1)
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy.group(1)


def test_controls_in_host_text_are_shown_as_escapes():
    report = sample_report()
    report["cases"][4]["actual"] = "bidi \u202e and escape \x1b[2J"
    page = render_html(report)
    assert "\u202e" not in page and "\x1b" not in page
    assert "&lt;U+202E&gt;" in page and "\\x1b[2J" in page


def test_the_next_step_is_the_baseline_command():
    page = render_html(sample_report(), report_json="out/report.json")
    assert "mcp-host-conformance baseline out/report.json -o expected-failures.txt" in page
    passing = build_report([], client=None, strict=False, exit_status=0)
    assert "Passed: nothing to do." in render_html(passing)


def test_an_outcome_the_page_does_not_know_is_shown_by_name():
    report = sample_report()
    report["summary"]["cases"]["not_observed"] = 2
    report["requirements"]["RES-9"]["outcome"] = "not_observed"
    page = render_html(report)
    assert "2 not observed" in page and "<th>not observed</th>" in page


# ---- in a real browser ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    why_not = headless_browser.available()
    if why_not:
        if os.environ.get(BROWSER_REQUIRED):
            pytest.fail(f"{BROWSER_REQUIRED} is set but {why_not}")
        pytest.skip(why_not)
    with headless_browser.HeadlessBrowser() as opened:
        yield opened


def visible_text(browser, selector: str) -> str | None:
    return browser.evaluate(
        f"""(() => {{ const e = document.querySelector({selector!r});
        return e && e.getClientRects().length && e.checkVisibility() ? e.innerText : null;
        }})()"""
    )


def box(browser, selector: str) -> dict | None:
    return browser.evaluate(
        f"""(() => {{ const e = document.querySelector({selector!r});
        if (!e || !e.getClientRects().length) return null;
        const r = e.getBoundingClientRect();
        return {{top: r.top, bottom: r.bottom, left: r.left, right: r.right}}; }})()"""
    )


def on_first_screen(found: dict | None) -> bool:
    width, height = VIEWPORT
    return (
        found is not None
        and found["top"] >= 0
        and found["bottom"] <= height
        and found["left"] >= 0
        and found["right"] <= width
    )


def open_page(browser, tmp_path, report: dict, name: str = "report.html") -> None:
    path = tmp_path / name
    path.write_text(render_html(report, report_json="report.json"), "utf-8")
    browser.open(path.as_uri(), viewport=VIEWPORT)


def test_the_first_screen_shows_the_verdict_and_the_failed_must_rules(browser, tmp_path, capsys):
    open_page(browser, tmp_path, sample_report())
    shot = tmp_path / "first-screen.png"
    browser.screenshot(shot)
    with capsys.disabled():
        print(f"\nscreenshot of the first screen (1280x800): {shot}")

    assert browser.evaluate("[window.innerWidth, window.innerHeight]") == list(VIEWPORT)
    assert on_first_screen(box(browser, "#verdict"))
    assert "conformance run FAILED" in visible_text(browser, "#verdict")
    assert on_first_screen(box(browser, "#next-step"))
    for rid in ("EXP-2", "RES-6", "NET-3"):
        selector = f"#rule-failed-{rid} > summary"
        assert on_first_screen(box(browser, selector)), rid
        assert visible_text(browser, selector).startswith(f"{rid} MUST")
    # the evidence is closed until asked for
    assert visible_text(browser, "#rule-failed-EXP-2 ol.cases") is None
    assert browser.evaluate("typeof window.pwned") == "undefined"
    assert "Runtime.exceptionThrown" not in browser.event_methods()


def test_one_click_opens_a_rules_cases_and_evidence(browser, tmp_path):
    open_page(browser, tmp_path, sample_report())
    browser.click("#rule-failed-EXP-2 > summary")
    cases = visible_text(browser, "#rule-failed-EXP-2 ol.cases")
    assert cases is not None
    assert "test_approval::test_anything_but_yes_denies" in cases
    assert "precondition" in cases and "stopped before its own check" in cases
    assert "monitor exposed-names" in cases
    browser.click("#rule-failed-RES-6 > summary")
    evidence = visible_text(browser, "#rule-failed-RES-6 ol.cases")
    assert "<script>window.pwned = 1</script>" in evidence  # shown as text, never run
    assert re.search(r" … \[[\d,]+ characters cut\] … ", evidence)
    assert visible_text(browser, "#rule-failed-RES-6 mark.cut") is not None
    assert browser.evaluate("typeof window.pwned") == "undefined"
    assert browser.evaluate("document.images.length") == 0


def test_the_filter_keeps_what_matches_and_works_offline(browser, tmp_path):
    open_page(browser, tmp_path, sample_report())
    assert visible_text(browser, "#filter") is not None  # the script ran: the policy let it
    browser.type_into("#filter-text", "redirect")
    assert visible_text(browser, "#rule-failed-NET-3 > summary") is not None
    assert visible_text(browser, "#rule-failed-EXP-2") is None
    assert visible_text(browser, "#rule-failed-RES-6") is None
    browser.type_into("#filter-text", "anything_but_yes")  # a case's ID: its rule stays
    assert visible_text(browser, "#rule-failed-EXP-2 > summary") is not None
    assert visible_text(browser, "#rule-failed-NET-3") is None
    browser.type_into("#filter-text", "")
    browser.click("#filter input[value=warning]")
    assert visible_text(browser, "#warning") is None
    assert visible_text(browser, "#failed") is not None


def test_a_run_writes_the_page_and_the_browser_shows_its_verdict(tmp_path, request):
    """`run --report-html` end to end: the page of a real run (two cases) opens and says how
    the run went; the JSON, HTML and Markdown reports agree."""
    from mcp_host_conformance.harness.reports.markdown import render_markdown

    page, report, summary = tmp_path / "report.html", tmp_path / "report.json", tmp_path / "s.md"
    done = subprocess.run(
        ["mcp-host-conformance", "run", "--network", "host", "--report-html", str(page)]
        + ["--report-json", str(report), "--report-markdown", str(summary)]
        + ["--", "-q", "-p", "no:randomly"]
        + ["-k", "test_plain_http_to_loopback_forms_is_accepted or test_certificate_not_trusted"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"HTML report: {page}" in done.stdout
    assert f"Markdown summary: {summary}" in done.stdout
    loaded = json.loads(report.read_text("utf-8"))
    assert page.read_text("utf-8") == render_html(loaded, report_json=str(report))
    assert summary.read_text("utf-8") == render_markdown(
        loaded, report_json=str(report), report_html=str(page)
    )
    browser = request.getfixturevalue("browser")  # skipped here when there is no browser
    browser.open(page.as_uri(), viewport=VIEWPORT)
    assert "conformance run PASSED" in visible_text(browser, "#verdict")
