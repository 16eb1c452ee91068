"""An interrupted run (Ctrl-C, SIGTERM): what finished, what was cut short, what never ran.

Strategy: pytest makes no report for a phase that KeyboardInterrupt stops (it re-raises before
making one), so a case in flight had only its setup report, and the results took a case
whose reports stopped short for a failure: the host failed a MUST with an empty message for
the run's own interruption. `InterruptionWatch` (in the process that prints: the only one, or
the parent of forked workers) remembers which cases began and which got a verdict. When the
run was interrupted, at session finish and before any report is written, it makes for each
case cut short the reports pytest would have made had the case been skipped, its reason
starting "interrupted: ", and replays them to every plugin: the terminal, JUnit, the results.
Such a case checked none of its rules: its requirements are partial or skipped, never failed.
The summary and the JSON and HTML reports then say the run was interrupted and list what never
ran (`interruption`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

import pytest

__all__ = [
    "INTERRUPTED_BY",
    "INTERRUPTED_PREFIX",
    "NAME",
    "InterruptionWatch",
    "interrupted_by",
    "interruption",
]

NAME: Final = "mcp-host-conformance-interruption"
INTERRUPTED_PREFIX: Final = "interrupted: "
# What stopped the run ("SIGTERM", "SIGINT (Ctrl-C)"), in the config's stash once it stopped.
INTERRUPTED_BY: Final = pytest.StashKey[str]()


def interrupted_by(error: BaseException) -> str:
    """What stopped the run, said as a person would: the run's SIGTERM handler says "SIGTERM"
    (harness.run.cleanup); anything else is Ctrl-C's SIGINT."""
    return "SIGTERM" if str(error) == "SIGTERM" else "SIGINT (Ctrl-C)"


def reason_for(by: str) -> str:
    return (
        f"{INTERRUPTED_PREFIX}the run was interrupted ({by}) while this case ran: none of its "
        "rules was checked"
    )


class InterruptionWatch:
    """The cases that began and those that got a verdict, and the reports of the ones an
    interruption cut short (see the module comment)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.began: dict[str, float] = {}
        self.decided: set[str] = set()
        self.finished: set[str] = set()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.began[nodeid] = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or not report.passed:
            self.decided.add(report.nodeid)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.finished.add(nodeid)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        if isinstance(excinfo.value, KeyboardInterrupt):
            self.config.stash[INTERRUPTED_BY] = interrupted_by(excinfo.value)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        by = self.config.stash.get(INTERRUPTED_BY, None)
        if by is None:
            return
        items = {item.nodeid: item for item in session.items}
        for nodeid in cut_short(self.began, self.decided):
            item = items.get(nodeid)
            if item is None:  # a pytest-xdist controller has no items: the results say it
                continue
            skip = functools.partial(_skip, reason_for(by))
            for when, step in (("call", skip), ("teardown", _nothing)):
                call = pytest.CallInfo.from_call(step, when)  # type: ignore[arg-type]  # Literal
                if when == "call":
                    call.duration = time.monotonic() - self.began[nodeid]
                report = item.ihook.pytest_runtest_makereport(item=item, call=call)
                item.ihook.pytest_runtest_logreport(report=report)
            if nodeid not in self.finished:
                item.ihook.pytest_runtest_logfinish(nodeid=nodeid, location=item.location)


def _skip(reason: str) -> None:
    # the case's own location in the report, not this module's
    raise pytest.skip.Exception(reason, _use_item_location=True)


def _nothing() -> None:
    pass


def cut_short(began: Iterable[str], decided: set[str]) -> list[str]:
    """The cases that began and got no verdict, in the order they began."""
    return [nodeid for nodeid in began if nodeid not in decided]


def interruption(
    by: str | None, cases: Iterable[tuple[str, str, str]], collected: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The report's `summary.interrupted`: what stopped the run, how many cases finished, the
    IDs of those it cut short and of those that never ran; None when it was not interrupted.
    `cases`: each result's node ID, case ID and reason; `collected`: each collected case's
    record by node ID (`id`, and `outcome` "deselected" for one the options left out)."""
    if by is None:
        return None
    ran = {nodeid: (cid, reason) for nodeid, cid, reason in cases}
    cut = [cid for cid, reason in ran.values() if reason.startswith(INTERRUPTED_PREFIX)]
    never = [
        str(record.id)
        for nodeid, record in collected.items()
        if nodeid not in ran and getattr(record, "outcome", None) != "deselected"
    ]
    return {"by": by, "finished": len(ran) - len(cut), "cut_short": cut, "not_run": never}
