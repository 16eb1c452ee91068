"""JUnit XML (`--junitxml PATH`, pytest's own writer) named as a conformance run reads:
the test suite after the client, each case's class after its rules and its name after
the case.

Strategy: pytest names a test case after its file path (under a site-packages directory
for an installed suite, `..lib.python3.11.site-packages.mcp_host_conformance...`) and the
suite "pytest", and the run's own data travels apart from pytest's user properties (the
reporting keeps them in its own report attribute), so no case carries the `<properties>`
the xunit2 schema forbids in a test case. What is left is naming: before pytest's writer
opens a case's record for a report, this plugin sets the record's `classname` (the case's
requirement IDs, e.g. `APR-1` or `RES-1+RES-7`) and `name` (the case ID,
`test_approval::test_anything_but_yes_denies`), attributes pytest keeps from then on; and
before it writes the file, the suite's name (the client's, unless `junit_suite_name` was
set). It reaches pytest's writer through its config stash key, the one part of pytest's
`junitxml` module used here; without it (another pytest) the file stays as pytest writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest

from mcp_host_conformance.harness.cases.items import is_case
from mcp_host_conformance.harness.contract.adapter import Description
from mcp_host_conformance.harness.verdicts.safe_text import inline

__all__ = ["DEFAULT_SUITE_NAME", "JunitNames", "case_names", "writer"]

# What the reporting knows of a report: the case's requirement IDs and case ID, or None
# for a report that is not a conformance case's.
CaseOf = Callable[[pytest.TestReport], tuple[list[str], str] | None]

DEFAULT_SUITE_NAME: Final = "pytest"  # pytest's default junit_suite_name
# pytest's record_property warns that xunit2 has no place for a case's properties; the
# suite's figures go to its own reports and never into the JUnit file, so it does not apply.
RECORD_PROPERTY_WARNING: Final = "ignore:record_property is incompatible with junit_family"


def writer(config: pytest.Config) -> Any | None:
    """pytest's JUnit writer of this run (`--junitxml`), or None."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - a pytest without it writes its own names
        return None
    return config.stash.get(xml_key, None)


def case_names(rules: list[str], case_id: str) -> tuple[str, str]:
    """(classname, name) of a case in JUnit: its requirement IDs, and its case ID."""
    return "+".join(rules) or "no-requirement", case_id


class JunitNames:
    """Registered by the reporting when the run writes JUnit; `describe` gives the client,
    `case_of` what a report is a case of."""

    def __init__(
        self,
        config: pytest.Config,
        describe: Callable[[], Description | None],
        case_of: CaseOf,
    ) -> None:
        self.config = config
        self._describe = describe
        self._case_of = case_of

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        if is_case(item):
            item.add_marker(pytest.mark.filterwarnings(RECORD_PROPERTY_WARNING))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Before pytest's writer: a report it opens a record for gets the case's names.
        (A setup that passed opens none; naming it would add an empty record, read as a pass,
        for a case interrupted before its body.)"""
        if report.when == "setup" and report.passed:
            return
        case = self._case_of(report)
        xml = writer(self.config)
        if case is None or xml is None:
            return
        classname, name = case_names(*case)
        record = xml.node_reporter(report)
        record.add_attribute("classname", classname)
        record.add_attribute("name", name)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        xml = writer(self.config)
        if xml is None or xml.suite_name != DEFAULT_SUITE_NAME:
            return
        client = self._describe()
        if client is not None:
            xml.suite_name = inline(client.name)
