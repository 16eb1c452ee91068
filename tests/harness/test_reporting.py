"""The reporting hooks, run through pytester with a stand-in for the plugin's options.

The real plugin (mcp_host_conformance.harness.plugin.hooks) is switched off here so these tests
do not load a client."""

import json
from pathlib import Path

import pytest

from mcp_host_conformance.harness.reports.reporting import (
    CaseResult,
    build_report,
    render_summary,
    requirement_outcomes,
)

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
from mcp_host_conformance.harness.contract.adapter import Description
from mcp_host_conformance.harness.reports.reporting import ReportingPlugin

def pytest_addoption(parser):
    group = parser.getgroup("mcp-host-conformance")
    group.addoption("--report-json", dest="mcphc_report_json", default=None)
    group.addoption("--expected-failures", dest="mcphc_expected_failures", default=None)

def pytest_configure(config):
    config.addinivalue_line("markers", "mcphc_requirements(*ids): ids")
    plugin = ReportingPlugin(config)
    plugin.set_client(Description(name="fakehost", version="9.9", profiles=frozenset({"pinning"})))
    config.pluginmanager.register(plugin, "mcp-host-conformance-reporting")
"""

CASES = """
import pytest
from mcp_host_conformance.harness.contract.adapter import AdapterError
from mcp_host_conformance.harness.verdicts.outcomes import check

@pytest.mark.mcphc_requirements("APR-2")
def test_must_fails():
    check(False, ids="APR-2", expected="status denied", actual="status completed")

@pytest.mark.mcphc_requirements("APR-3")
def test_must_passes():
    pass

@pytest.mark.mcphc_requirements("HARD-1")
def test_should_fails():
    check(False, ids="HARD-1", expected="unknown", actual="completed")

@pytest.mark.mcphc_requirements("DISC-11")
def test_info_records():
    pass

@pytest.mark.mcphc_requirements("PIN-1")
def test_not_applicable():
    pytest.skip("not applicable: profile pinning not claimed by fakehost")
"""


@pytest.fixture(autouse=True)
def _only_needed_plugins(monkeypatch):
    # Fast, and no client is loaded: the inner runs get only the plugins named.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def run(pytester, *args, cases=CASES):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_cases=cases)
    return pytester.runpytest_inprocess(*args)


def load(path):
    return json.loads(path.read_text())


def test_must_failure_fails_the_run_and_everything_is_in_the_json(pytester):
    report_path = pytester.path / "report.json"
    result = run(pytester, f"--report-json={report_path}")
    assert result.ret == 1
    report = load(report_path)
    assert report["schema"] == "mcp-host-conformance-report/1"
    assert report["client"] == {"name": "fakehost", "version": "9.9", "profiles": ["pinning"]}
    reqs = report["requirements"]
    assert reqs["APR-2"]["outcome"] == "failed" and reqs["APR-2"]["level"] == "MUST"
    assert reqs["APR-3"]["outcome"] == "passed"
    assert reqs["HARD-1"]["outcome"] == "warning"
    assert reqs["DISC-11"]["outcome"] == "info"
    assert reqs["PIN-1"]["outcome"] == "not_applicable"
    assert reqs["CFG-1"] == {**reqs["CFG-1"], "outcome": "uncovered", "cases": []}
    cases = {case["id"]: case for case in report["cases"]}
    failed = cases["test_cases::test_must_fails"]
    assert failed["requirements"] == ["APR-2"]
    assert (failed["expected"], failed["actual"]) == ("status denied", "status completed")
    assert failed["message"].startswith("APR-2 (MUST): Approval is default-deny")
    assert failed["duration"] >= 0
    assert report["summary"]["passed"] is False and report["summary"]["exit_status"] == 1
    assert report["summary"]["cases"] == {
        "failed": 1,
        "info": 1,
        "not_applicable": 1,
        "passed": 1,
        "warning": 1,
    }


def test_terminal_summary_has_client_table_and_failures(pytester):
    result = run(pytester)
    text = result.stdout.str()
    assert "client: fakehost 9.9 (profiles: pinning)" in text
    result.stdout.re_match_lines(
        [r"\s+area\s+passed\s+partial\s+failed\s+warning\s+info\s+not applicable.*"]
    )
    result.stdout.re_match_lines([r"\s+APR\s+1\s+0\s+1\s+0\s+0\s+0\s+.*"])
    result.stdout.fnmatch_lines(["failures (MUST):", "  test_cases::test_must_fails  [[]APR-2[]]"])
    result.stdout.fnmatch_lines(["*expected: status denied", "*actual: status completed"])
    result.stdout.fnmatch_lines(
        ["warnings (SHOULD*", "  test_cases::test_should_fails  [[]HARD-1[]]"]
    )
    result.stdout.fnmatch_lines(["conformance run FAILED (exit status 1)"])
    assert result.parseoutcomes() == {"failed": 1, "passed": 2, "skipped": 1, "warned": 1}


SHOULD_ONLY = """
import pytest
from mcp_host_conformance.harness.verdicts.outcomes import check

@pytest.mark.mcphc_requirements("HARD-1")
def test_should_fails():
    check(False, ids="HARD-1", expected="unknown", actual="completed")

@pytest.mark.mcphc_requirements("DISC-11")
def test_info_even_if_it_raises():
    raise RuntimeError("figure could not be measured")
"""


def test_should_failure_passes_unless_strict(pytester):
    assert run(pytester, cases=SHOULD_ONLY).ret == 0


def test_should_failure_fails_with_strict(pytester):
    result = run(pytester, "--strict", cases=SHOULD_ONLY)
    assert result.ret == 1
    result.assert_outcomes(failed=1, passed=1)


SETUP_FAILS = """
import pytest
from mcp_host_conformance.harness.contract.adapter import AdapterError

@pytest.fixture
def host():
    raise AdapterError("client crashed at start")

@pytest.mark.mcphc_requirements("HARD-1")
def test_should_case_whose_setup_fails(host):
    raise AssertionError("the body must not run")
"""


def test_setup_failure_of_a_should_case_is_a_warning_and_skips_the_body(pytester):
    report_path = pytester.path / "r.json"
    result = run(pytester, f"--report-json={report_path}", cases=SETUP_FAILS)
    assert result.ret == 0
    case = load(report_path)["cases"][0]
    assert case["outcome"] == "warning"
    assert "AdapterError: client crashed at start" in case["message"]
    assert "the body must not run" not in result.stdout.str()


def test_outcomes_travel_from_xdist_workers_to_the_controller(pytester):
    report_path = pytester.path / "report.json"
    result = run(pytester, "-p", "xdist.plugin", "-n", "2", f"--report-json={report_path}")
    assert result.ret == 1
    report = load(report_path)
    assert report["summary"]["cases"] == {
        "failed": 1,
        "info": 1,
        "not_applicable": 1,
        "passed": 1,
        "warning": 1,
    }
    assert report["requirements"]["HARD-1"]["outcome"] == "warning"


def test_junit_names_each_case_by_its_rules_and_case_id(pytester):
    """xunit2 (pytest's default) has no properties in a test case: the case's rules and ID
    are its classname and name (tests/harness/test_junit.py checks the schema)."""
    result = run(pytester, "--junitxml=junit.xml")
    assert result.ret == 1
    xml = (pytester.path / "junit.xml").read_text()
    assert '<testcase classname="APR-2" name="test_cases::test_must_fails"' in xml
    assert '<testsuite name="fakehost"' in xml
    assert "<properties>" not in xml


def test_a_run_without_cases_prints_no_conformance_summary(pytester):
    result = run(pytester, cases="def test_plain():\n    pass\n")
    assert result.ret == 0
    assert "mcp-host-conformance" not in result.stdout.str()


# ---- the baseline's four behaviours ----------------------------------------------------------

BASELINE_CASES = """
import pytest
from mcp_host_conformance.harness.verdicts.outcomes import check

@pytest.mark.mcphc_requirements("APR-2")
def test_known_gap():
    check(False, ids="APR-2", expected="denied", actual="completed")

@pytest.mark.mcphc_requirements("APR-3")
def test_new_gap():
    check(False, ids="APR-3", expected="asked", actual="not asked")

@pytest.mark.mcphc_requirements("APR-4")
def test_fixed():
    pass
"""


def run_baseline(pytester, entries):
    (pytester.path / "baseline.txt").write_text(entries)
    report_path = pytester.path / "r.json"
    result = run(
        pytester,
        "--expected-failures=baseline.txt",
        f"--report-json={report_path}",
        cases=BASELINE_CASES,
    )
    return result, load(report_path)


def test_baseline_listed_failure_passes(pytester):
    result, report = run_baseline(pytester, "# gaps\nAPR-2\ntest_cases::test_new_gap\n")
    assert result.ret == 0
    result.assert_outcomes(xfailed=2, passed=1)
    outcomes = {case["id"]: case["outcome"] for case in report["cases"]}
    assert outcomes["test_cases::test_known_gap"] == "expected_failure"
    assert report["requirements"]["APR-2"]["outcome"] == "expected_failure"
    assert report["baseline"]["expected_failures"] == [
        "test_cases::test_known_gap",
        "test_cases::test_new_gap",
    ]


def test_baseline_unlisted_failure_fails(pytester):
    result, report = run_baseline(pytester, "APR-2\n")
    assert result.ret == 1
    result.assert_outcomes(xfailed=1, failed=1, passed=1)
    assert report["requirements"]["APR-3"]["outcome"] == "failed"


def test_baseline_stale_entry_fails(pytester):
    result, report = run_baseline(pytester, "APR-2\nAPR-3\nAPR-4\n")
    assert result.ret == 1
    assert report["baseline"]["stale"] == ["APR-4"]
    result.stdout.fnmatch_lines(["*stale (now passes; remove it): APR-4"])


def test_baseline_unknown_entry_fails(pytester):
    result, report = run_baseline(pytester, "APR-2\nAPR-3\nNOPE-7\ntest_cases::test_gone\n")
    assert result.ret == 1
    assert report["baseline"]["unknown"] == ["NOPE-7", "test_cases::test_gone"]
    result.stdout.fnmatch_lines(["*unknown (no such requirement or case): NOPE-7"])


def test_an_unreadable_baseline_is_a_usage_error(pytester):
    result = run(pytester, "--expected-failures=absent.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize(
    "given, said",
    [
        ("--report-json=missing/report.json", "--report-json missing/report.json: cannot be"),
        ("--report-json=", "--report-json : is empty (an unset variable?)"),
        ("--expected-failures=", "the expected-failures path is empty"),
    ],
    ids=["no-directory", "empty", "empty-baseline"],
)
def test_a_report_path_that_cannot_be_written_stops_the_run_before_any_case(pytester, given, said):
    result = run(pytester, given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and said in errors[0], errors
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()
    assert not (pytester.path / "missing").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_report_that_cannot_be_written_at_the_end_keeps_the_summary(pytester):
    """Checked writable before the run, the disk full at its end: one line after the summary
    (not a traceback instead of it), and the run that passed ends as the harness's internal
    error, which the summary says rather than the exit status the run had before."""
    result = run(pytester, "--report-json=/dev/full", cases=SHOULD_ONLY)
    text = result.stdout.str()
    assert "INTERNALERROR" not in text + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "conformance run FAILED (exit status 3)",
            "mcp-host-conformance: --report-json /dev/full: not written: No space left on device;"
            " the run fails",
        ]
    )
    assert "JSON report: /dev/full" not in text
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR


# A client that names itself to inject lines: into the summary, and through the JSON report
# into a baseline, where a line that is an ID would excuse that requirement's failures.
HOSTILE_NAME = "x\nAPR-1\n\x1b[2J\u2028NET-1\rRES-6"


def test_a_client_s_name_cannot_add_an_id_to_the_baseline_written_from_its_report(
    pytester, tmp_path
):
    from mcp_host_conformance.harness import cli
    from mcp_host_conformance.harness.verdicts.baseline import load_baseline

    pytester.makeconftest(
        CONFTEST.replace(
            'name="fakehost", version="9.9"', f"name={HOSTILE_NAME!r}, version='9' * 10**6"
        )
    )
    pytester.makepyfile(test_cases=CASES)
    first = pytester.path / "first.json"
    result = pytester.runpytest_inprocess(f"--report-json={first}")
    assert result.ret == 1
    text = result.stdout.str()
    assert "\x1b" not in text and "\u2028" not in text and "APR-1" not in result.stdout.lines
    assert "client: x\\x0aAPR-1\\x0a\\x1b[2J<U+2028>NET-1\\x0dRES-6 999" in text
    client = load(first)["client"]
    assert client["name"] == HOSTILE_NAME, "JSON keeps the client's words, escaped by JSON"
    assert len(client["version"]) <= 200 and "characters cut" in client["version"]

    baseline = tmp_path / "baseline.txt"
    assert cli.main(["baseline", str(first), "-o", str(baseline)]) == 0
    failing = ["test_cases::test_must_fails", "test_cases::test_should_fails"]
    assert list(load_baseline(baseline).entries) == failing, baseline.read_text()

    second = pytester.path / "second.json"
    result = pytester.runpytest_inprocess(
        f"--report-json={second}", f"--expected-failures={baseline}"
    )
    assert result.ret == 0
    assert load(second)["baseline"]["entries"] == failing
    assert load(second)["baseline"]["unknown"] == []


# A host that quotes 30 MB back (a result, a status line, an exception, what it printed):
# what each report keeps of it is bounded.
HTML_CONFTEST = CONFTEST.replace(
    'group.addoption("--expected-failures", dest="mcphc_expected_failures", default=None)',
    'group.addoption("--expected-failures", dest="mcphc_expected_failures", default=None)\n'
    '    group.addoption("--report-html", dest="mcphc_report_html", default=None)',
)
FLOOD_CONFTEST = (
    HTML_CONFTEST
    + """
from mcp_host_conformance.harness.reports.reporting import FINDINGS
from mcp_host_conformance.harness.verdicts.outcomes import Finding

QUOTE = "<" * 15_000_000 + ">" * 15_000_000

@pytest.fixture(autouse=True)
def a_monitor_quotes_it_too(request):
    request.node.stash[FINDINGS] = [Finding("RES-6", "results", QUOTE, QUOTE)]
"""
)

FLOOD_CASES = """
import pytest
from mcp_host_conformance.harness.verdicts.outcomes import check

QUOTE = "<" * 15_000_000 + ">" * 15_000_000

@pytest.mark.mcphc_requirements("APR-2")
def test_quotes_it(request):
    request.node.user_properties.append(("seen", QUOTE))  # record_property, without its warning
    print(QUOTE)
    check(False, ids="APR-2", expected=QUOTE, actual=QUOTE)

@pytest.mark.mcphc_requirements("APR-3")
def test_raises_it():
    raise RuntimeError(QUOTE)

@pytest.mark.mcphc_requirements("PIN-1")
def test_skips_with_it():
    pytest.skip(QUOTE)
"""


def test_a_host_quoting_30_mb_makes_small_reports_in_every_format(pytester):
    pytester.makeconftest(FLOOD_CONFTEST)
    pytester.makepyfile(test_cases=FLOOD_CASES)
    files = {name: pytester.path / name for name in ("r.json", "r.html", "junit.xml")}
    result = pytester.runpytest_inprocess(
        f"--report-json={files['r.json']}",
        f"--report-html={files['r.html']}",
        f"--junitxml={files['junit.xml']}",
        "-rA",
    )
    assert result.ret == 1
    small = 1024 * 1024  # of 90 MB quoted: "<" and ">" are the worst case of XML and HTML
    sizes = {name: path.stat().st_size for name, path in files.items()}
    sizes["terminal"] = len(result.stdout.str()) + len(result.stderr.str())
    assert all(size < small for size in sizes.values()), sizes
    report = load(files["r.json"])
    cases = {case["id"]: case for case in report["cases"]}
    quoted = cases["test_cases::test_quotes_it"]
    for text in (quoted["expected"], quoted["actual"], quoted["figures"]["seen"]):
        assert text.startswith("<<<") and text.endswith(">>>")
        assert "characters cut] …" in text and len(text) <= 4096
    assert len(quoted["message"]) <= 8192 and quoted["message"].startswith("APR-2 (MUST)")
    assert all(len(f["actual"]) <= 4096 for c in cases.values() for f in c["monitors"])
    assert len(cases["test_cases::test_raises_it"]["message"]) <= 8192
    assert len(cases["test_cases::test_skips_with_it"]["reason"]) <= 4096
    assert "characters cut] …" in result.stdout.str()


# ---- pure views ---------------------------------------------------------------------------------


def test_requirement_outcome_is_the_worst_of_its_cases():
    cases = [
        CaseResult("a::t1", "a.py::t1", ["APR-2"], "passed"),
        CaseResult("a::t2", "a.py::t2", ["APR-2", "APR-3"], "failed"),
    ]
    outcomes = requirement_outcomes(cases)
    assert outcomes["APR-2"]["outcome"] == "failed"
    assert outcomes["APR-2"]["cases"] == ["a::t1", "a::t2"]
    assert outcomes["APR-3"]["outcome"] == "failed"


def test_rendered_summary_without_client_or_failures():
    report = build_report(
        [CaseResult("a::t1", "a.py::t1", ["APR-2"], "passed")],
        client=None,
        strict=False,
        exit_status=0,
    )
    lines = render_summary(report, [])
    assert lines[0].startswith("requirements by area")
    assert lines[-1] == "conformance run PASSED (exit status 0)"
    assert any(line.split()[:2] == ["CFG", "0"] for line in lines)
    assert any("uncovered" in line for line in lines)


# ---- partial, preconditions, figures, secrets ----------------------------------------------------

PARTIAL_CASES = """
import pytest
from mcp_host_conformance.harness.verdicts.outcomes import check, not_observable, precondition

@pytest.mark.mcphc_requirements("APR-2")
def test_runs():
    pass

@pytest.mark.mcphc_requirements("APR-2")
def test_slow_here():
    pytest.skip("slow: waits for a real default timeout; run with --run-slow")

@pytest.mark.mcphc_requirements("APR-3")
def test_unseen():
    not_observable("no network namespace on this machine")

@pytest.mark.mcphc_requirements("APR-4")
def test_selected():
    pass

@pytest.mark.mcphc_requirements("APR-4")
def test_deselected():
    pass

@pytest.mark.mcphc_requirements("RETRY-2")
def test_needs_unknown_first():
    precondition(False, ids="RES-6", expected="the call ends unknown", actual="completed")

@pytest.mark.mcphc_requirements("APR-5")
def test_applies():
    pass

@pytest.mark.mcphc_requirements("APR-5")
def test_does_not_apply():
    pytest.skip("not applicable: this host cannot do that")

@pytest.mark.mcphc_requirements("APR-1")
def test_applies_nowhere():
    pytest.skip("not applicable: profile not claimed")

@pytest.mark.mcphc_requirements("DISC-11")
def test_figures(record_property):
    record_property("ready_seconds", 0.25)
    record_property("instructions", "mcphc-canary-key-0123456789abcdef01234567 in here")
"""


def test_a_requirement_with_cases_that_did_not_run_is_partial_never_passed(pytester):
    report_path = pytester.path / "r.json"
    result = run(
        pytester, f"--report-json={report_path}", "-k", "not deselected", cases=PARTIAL_CASES
    )
    report = load(report_path)
    reqs = report["requirements"]
    assert reqs["APR-2"]["outcome"] == "partial"
    assert "test_cases::test_slow_here (slow" in reqs["APR-2"]["reason"]
    assert reqs["APR-3"]["outcome"] == "not_observed"
    assert "not observable: no network namespace" in reqs["APR-3"]["reason"]
    assert reqs["APR-4"]["outcome"] == "partial"
    assert "test_cases::test_deselected (deselected)" in reqs["APR-4"]["reason"]
    assert reqs["CFG-1"]["reason"] == ""
    text = result.stdout.str()
    assert "partial (not passed: some of their cases did not run, or do not apply" in text
    assert "  APR-2: 1 did not run of 2 case(s): test_cases::test_slow_here (slow" in text
    assert report["summary"]["requirements"]["partial"] == 3
    # a case not applicable to this host: never passed either (and all of them: n/a)
    assert reqs["APR-5"]["outcome"] == "partial"
    assert "1 not applicable to this host of 2 case(s)" in reqs["APR-5"]["reason"]
    assert reqs["APR-1"]["outcome"] == "not_applicable"


UNSEEN_CASES = """
import pytest
from mcp_host_conformance.harness.verdicts.outcomes import not_observable

@pytest.mark.mcphc_requirements("NET-1")
def test_unseen_here():
    not_observable("no network namespace on this machine")

@pytest.mark.mcphc_requirements("NET-1")
def test_seen():
    pass

@pytest.mark.mcphc_requirements("APR-3")
def test_unseen_alone():
    not_observable("no built-in tools to be offered beside")

@pytest.mark.mcphc_requirements("RES-9")
def test_cannot_cancel():
    pytest.skip("not applicable: this host cannot cancel a call")
"""


def test_not_observed_is_its_own_outcome_apart_from_not_applicable_in_every_format(pytester):
    """A case that could not observe its rule here is `not_observed`, a rule that does not
    apply to the host `not_applicable`: in the JSON report (cases and requirements), the
    terminal summary, JUnit and the HTML page; neither ever passes a requirement."""
    pytester.makeconftest(HTML_CONFTEST)
    pytester.makepyfile(test_cases=UNSEEN_CASES)
    files = {name: pytester.path / name for name in ("r.json", "r.html", "junit.xml")}
    result = pytester.runpytest_inprocess(
        f"--report-json={files['r.json']}",
        f"--report-html={files['r.html']}",
        f"--junitxml={files['junit.xml']}",
    )
    assert result.ret == 0
    report = load(files["r.json"])
    cases = {case["id"]: case["outcome"] for case in report["cases"]}
    assert cases["test_cases::test_unseen_here"] == "not_observed"
    assert cases["test_cases::test_unseen_alone"] == "not_observed"
    assert cases["test_cases::test_cannot_cancel"] == "not_applicable"
    reqs = report["requirements"]
    assert reqs["APR-3"]["outcome"] == "not_observed"
    assert "could observe it" in reqs["APR-3"]["reason"]
    assert reqs["RES-9"]["outcome"] == "not_applicable"
    assert reqs["NET-1"]["outcome"] == "partial"
    assert "1 not observed here of 2 case(s)" in reqs["NET-1"]["reason"]
    assert report["summary"]["cases"]["not_observed"] == 2
    assert report["summary"]["requirements"]["not_observed"] == 1
    text = result.stdout.str()
    assert "not observed" in text.split("requirements by area")[1].splitlines()[1]
    assert "2 not observed" in text and "1 not applicable" in text
    junit = files["junit.xml"].read_text()
    # xunit2 has no properties: the skip's message says which of the two it is
    assert 'message="not observable: no network namespace on this machine"' in junit
    assert 'message="not applicable: this host cannot cancel a call"' in junit
    page = files["r.html"].read_text()
    assert "not observed" in page and "not applicable" in page


def test_partial_never_fails_the_run(pytester):
    cases = PARTIAL_CASES.split('@pytest.mark.mcphc_requirements("RETRY-2")')[0]
    assert run(pytester, "-k", "not deselected", cases=cases).ret == 0


def test_a_failed_precondition_fails_its_own_requirement_and_leaves_the_case_s_unchecked(
    pytester,
):
    report_path = pytester.path / "r.json"
    result = run(pytester, f"--report-json={report_path}", cases=PARTIAL_CASES)
    assert result.ret == 1
    report = load(report_path)
    assert report["requirements"]["RES-6"]["outcome"] == "failed"
    assert report["requirements"]["RES-6"]["cases"] == ["test_cases::test_needs_unknown_first"]
    assert report["requirements"]["RETRY-2"]["outcome"] == "skipped"
    assert "precondition failed: RES-6" in report["requirements"]["RETRY-2"]["reason"]
    case = next(c for c in report["cases"] if c["id"].endswith("test_needs_unknown_first"))
    assert case["precondition"] is True and case["failed_requirements"] == ["RES-6"]
    assert case["message"].startswith("precondition failed: RES-6 (MUST): ")
    result.stdout.fnmatch_lines(["*precondition failed: RES-6 (MUST): *"])


def test_recorded_figures_reach_the_console_and_the_json_without_secrets(pytester):
    report_path = pytester.path / "r.json"
    result = run(pytester, f"--report-json={report_path}", "-k", "figures", cases=PARTIAL_CASES)
    case = load(report_path)["cases"][0]
    assert case["figures"]["ready_seconds"] == 0.25
    assert case["figures"]["instructions"] == "<secret> in here"
    result.stdout.fnmatch_lines(
        [
            "figures (recorded by the cases*",
            "*test_cases::test_figures  [[]DISC-11[]]",
            "*ready_seconds: 0.25",
        ]
    )
    assert "mcphc-canary-key" not in result.stdout.str()
    assert "mcphc-canary-key" not in report_path.read_text()


SECRET_CASES = """
import pytest
from hypothesis import given, settings, strategies as st
from mcp_host_conformance.harness.cases.canaries import REGISTRY, Secrets

KEY = "sk-mock-" + "5f" * 16
REGISTRY.add(KEY, "model API key")

class Model:
    api_key = KEY
    def __repr__(self):
        return f"Model(api_key={self.api_key!r})"

@pytest.fixture
def model():
    return Model()

@pytest.mark.mcphc_requirements("APR-2")
@settings(max_examples=3, deadline=None)
@given(st.integers())
def test_property(model, n):
    token = Secrets().new("header")
    print("a library printed", token, model.api_key)
    assert n < 0, f"the host echoed {token} with {model!r}"
"""


def test_a_failing_property_case_reports_no_secret(pytester):
    report_path = pytester.path / "r.json"
    junit = pytester.path / "junit.xml"
    result = run(
        pytester, f"--report-json={report_path}", f"--junitxml={junit}", "-rA", cases=SECRET_CASES
    )
    assert result.ret == 1
    output = result.stdout.str() + result.stderr.str()
    assert "Failing test case" in output or "Falsifying example" in output, output
    for where, text in [
        ("console", output),
        ("json", report_path.read_text()),
        ("junit", junit.read_text()),
    ]:
        assert "mcphc-canary-header" not in text, where
        assert "5f5f5f5f5f5f5f5f" not in text, where


def test_deselected_cases_are_known_to_the_xdist_controller(pytester):
    report_path = pytester.path / "r.json"
    run(
        pytester,
        "-p",
        "xdist.plugin",
        "-n",
        "2",
        "-k",
        "not deselected",
        f"--report-json={report_path}",
        cases=PARTIAL_CASES,
    )
    reqs = load(report_path)["requirements"]
    assert reqs["APR-4"]["outcome"] == "partial", reqs["APR-4"]
    assert "test_cases::test_deselected (deselected)" in reqs["APR-4"]["reason"]
    assert reqs["RETRY-2"]["outcome"] == "skipped"
