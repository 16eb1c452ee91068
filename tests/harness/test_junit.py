"""JUnit XML of a conformance run (`--junitxml`): valid against the xunit2 schema pytest checks
its own output with (`junit-10.xsd`, vendored beside this file with its source), every case
named by its rules (classname) and its case ID (name), the suite named after the client, no
`<properties>` in a test case; whatever the cases did (failed, warned, errored in setup, were
not applicable, expected by the baseline, recorded figures)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from mcp_host_conformance.harness.reports.junit import case_names

pytest_plugins = ["pytester"]

SCHEMA = Path(__file__).with_name("junit-10.xsd")

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
    plugin.set_client(Description(name="fake<host>", version="9.9"))
    config.pluginmanager.register(plugin, "mcp-host-conformance-reporting")
"""

CASES = """
import pytest
from mcp_host_conformance.harness.contract.adapter import AdapterError
from mcp_host_conformance.harness.verdicts.outcomes import check

@pytest.fixture
def broken():
    raise AdapterError("client crashed at start")

@pytest.mark.mcphc_requirements("APR-2")
def test_must_fails():
    check(False, ids="APR-2", expected="status denied", actual="status <completed> \\x1b[2J")

@pytest.mark.mcphc_requirements("APR-3")
def test_must_passes(record_property):
    record_property("figure", 3)

@pytest.mark.mcphc_requirements("RES-1", "RES-7")
def test_two_rules_setup_fails(broken):
    pass

@pytest.mark.mcphc_requirements("HARD-1")
def test_should_fails():
    check(False, ids="HARD-1", expected="unknown", actual="completed")

@pytest.mark.mcphc_requirements("NET-1")
def test_listed_in_the_baseline():
    check(False, ids="NET-1", expected="refused", actual="accepted")

@pytest.mark.mcphc_requirements("PIN-1")
def test_not_applicable():
    pytest.skip("not applicable: profile pinning not claimed by fakehost")

def test_not_a_case():
    pass
"""


@pytest.fixture(autouse=True)
def _only_needed_plugins(monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMA))


def run_cases(pytester, *args: str) -> tuple[pytest.RunResult, ET.Element]:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_cases=CASES)
    (pytester.path / "baseline.txt").write_text("test_cases::test_listed_in_the_baseline\n")
    result = pytester.runpytest_inprocess(
        "--junitxml=junit.xml", "--expected-failures=baseline.txt", *args
    )
    return result, ET.parse(pytester.path / "junit.xml").getroot()


def cases_of(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in root.iter("testcase")}


@pytest.mark.parametrize("workers", [[], ["-p", "xdist.plugin", "-n", "2"]], ids=["one", "xdist"])
def test_the_junit_file_passes_the_xunit2_schema_named_by_rule_case_and_client(
    pytester, schema, workers
):
    result, root = run_cases(pytester, *workers)
    assert result.ret == 1
    schema.validate(pytester.path / "junit.xml")
    (suite,) = root.iter("testsuite")
    assert suite.get("name") == "fake<host>"
    assert root.find(".//testcase/properties") is None
    assert "incompatible with junit_family" not in result.stdout.str()
    cases = cases_of(root)
    assert {name: case.get("classname") for name, case in cases.items()} == {
        "test_cases::test_must_fails": "APR-2",
        "test_cases::test_must_passes": "APR-3",
        "test_cases::test_two_rules_setup_fails": "RES-1+RES-7",
        "test_cases::test_should_fails": "HARD-1",
        "test_cases::test_listed_in_the_baseline": "NET-1",
        "test_cases::test_not_applicable": "PIN-1",
        "test_not_a_case": "test_cases",  # another test keeps pytest's names
    }
    assert cases["test_cases::test_must_fails"].find("failure") is not None
    assert cases["test_cases::test_two_rules_setup_fails"].find("error") is not None
    assert cases["test_cases::test_listed_in_the_baseline"].find("skipped") is not None
    assert cases["test_cases::test_not_applicable"].find("skipped") is not None


def test_xunit1_keeps_the_cases_properties(pytester):
    result, root = run_cases(pytester, "-o", "junit_family=xunit1")
    assert result.ret == 1
    properties = {
        p.get("name"): p.get("value")
        for p in cases_of(root)["test_cases::test_must_fails"].iter("property")
    }
    assert properties["requirements"] == "APR-2"
    assert properties["case_id"] == "test_cases::test_must_fails"
    assert properties["outcome"] == "failed"


def test_a_suite_name_set_by_the_user_is_kept(pytester):
    _, root = run_cases(pytester, "-o", "junit_suite_name=ours")
    assert next(root.iter("testsuite")).get("name") == "ours"


def test_case_names_join_the_rules():
    assert case_names(["RES-1", "RES-7"], "test_results::x") == ("RES-1+RES-7", "test_results::x")
    assert case_names([], "test_x::y") == ("no-requirement", "test_x::y")


def test_a_run_of_the_suite_writes_valid_junit_named_after_the_client(tmp_path, schema):
    """`mcp-host-conformance run -- --junitxml`, from a directory outside the checkout, against
    a broken client: the failed case and the passing one, named by rule and case."""
    junit = tmp_path / "junit.xml"
    done = subprocess.run(
        ["mcp-host-conformance", "run", "--network", "host", "--client", "connects-on-add"]
        + ["--", "-q", "-p", "no:randomly", f"--junitxml={junit}"]
        + ["-k", "test_adding_a_server_does_not_connect or test_listing_shows_no_secret"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    schema.validate(junit)
    root = ET.parse(junit).getroot()
    assert next(root.iter("testsuite")).get("name") == "broken:connects-on-add"
    cases = cases_of(root)
    failed = cases["test_configuration::test_adding_a_server_does_not_connect"]
    assert failed.get("classname") == "CFG-1" and failed.find("failure") is not None
    assert cases["test_configuration::test_listing_shows_no_secret"].get("classname") == "CFG-4"
    assert root.find(".//testcase/properties") is None
