"""A conformance case's protocol: run once, and once more when it failed while the harness's
own clock stood still (harness/run/starvation.py says why and how it is judged).

Why here: running a case again means dropping what its first attempt left on the item (its
properties, the monitors' findings and verdict in its stash), which the reports room owns;
the plugin sits above both."""

from __future__ import annotations

from typing import Final

import pytest
from _pytest.runner import runtestprotocol

from mcp_host_conformance.harness.cases.items import is_case
from mcp_host_conformance.harness.reports.reporting import FINDINGS, MONITOR_VERDICT
from mcp_host_conformance.harness.run.starvation import (
    first_verdict,
    second_attempt,
    start_clock,
    starved_at,
)
from mcp_host_conformance.harness.verdicts.outcomes import FAILED, WARNING
from mcp_host_conformance.mocks.lateness import LATENESS

SECOND_ATTEMPT: Final = "second_attempt"  # the case's figure that says it ran twice, and why


def _failed(reports: list[pytest.TestReport]) -> bool:
    return any(
        r.failed or getattr(r, "conformance_outcome", None) in (FAILED, WARNING) for r in reports
    )


def _reset(item: pytest.Item) -> None:
    """What an attempt left on the item, gone before the next one (its reports are dropped)."""
    item.user_properties.clear()
    if FINDINGS in item.stash:
        del item.stash[FINDINGS]
    if MONITOR_VERDICT in item.stash:
        del item.stash[MONITOR_VERDICT]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run a case once, and once more when it failed on a starved clock; report one attempt."""
    if not is_case(item):
        return None
    start_clock()
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    LATENESS.take()
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    late = LATENESS.take()
    first = first_verdict(item)
    if _failed(reports) and late > starved_at(item):
        _reset(item)
        with second_attempt(item, first, late) as why:
            item.user_properties.append((SECOND_ATTEMPT, why))
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
        first_verdict(item)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
