"""A run's progress: one line per finished case, in place of pytest's dots and percentages.

Strategy: `mcp-host-conformance run` registers `CaseLines` unless the user asked pytest for its
own progress output (`-v`, `-q` after `--`: `asks_for_verbosity`). pytest's terminal reporter
keeps doing everything else (the header, the counts, the failures, the summary); only what it
writes while a case is logged (the file name, a letter, a percentage) goes to a writer nobody
reads, and when a case finishes (`pytest_runtest_logfinish`, in the process that prints: the
run's, whichever worker ran the case) its line is written: how many of the selected cases
are done, the case's conformance outcome, its case ID (`test_approval::test_x`, never a path,
so no path of the environment it is installed in) and the requirement IDs it checks (the ones
it failed, when it failed), plus what the rule monitors found broken. Cases finish in any
order with workers; each line is whole, so they never interleave.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

import pytest

from mcp_host_conformance.harness.reports.reporting import (
    P_AT_STAKE,
    P_CASE,
    P_MONITORS,
    P_OUTCOME,
    P_REQUIREMENTS,
    carried,
)
from mcp_host_conformance.harness.verdicts.outcomes import (
    EXPECTED_FAILURE,
    FAILED,
    NOT_APPLICABLE,
    PASSED,
    WARNING,
)
from mcp_host_conformance.harness.verdicts.safe_text import inline

__all__ = ["CaseLines", "asks_for_verbosity", "case_line"]

_WORDS: Final = {NOT_APPLICABLE: "not applicable", EXPECTED_FAILURE: "expected failure"}
_WIDTH: Final = max(len(w) for w in ("not applicable", "expected failure"))
_MARKUP: Final = {
    FAILED: {"red": True, "bold": True},
    WARNING: {"yellow": True},
    PASSED: {"green": True},
}
# pytest's short options that take a value: a v or q after one of them is that value
_VALUED: Final = frozenset("kmpcorWn")
_LONG_VERBOSITY: Final = ("--verbose", "--quiet", "--verbosity")


def asks_for_verbosity(args: Sequence[str]) -> bool:
    """Whether pytest arguments set pytest's verbosity (`-v`, `-qq`, `-xv`, `--verbose`,
    `--verbosity=2`...): the user then gets pytest's own progress output."""
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            if arg.split("=", 1)[0] in _LONG_VERBOSITY:
                return True
            continue
        if arg.startswith("-"):
            for letter in arg[1:]:
                if letter in "vq":
                    return True
                if letter in _VALUED or not letter.isalpha():
                    break
    return False


def case_line(
    done: int, total: int, nodeid: str, props: dict[str, object], pytest_outcome: str
) -> tuple[str, dict[str, bool]]:
    """A finished case's line and its colour (keyword arguments of pytest's writer)."""
    case = str(props.get(P_CASE) or nodeid)
    outcome = str(props.get(P_OUTCOME) or pytest_outcome)
    at_stake = str(props.get(P_AT_STAKE) or "").split()
    ids = (
        at_stake
        if outcome in (FAILED, WARNING) and at_stake
        else str(props.get(P_REQUIREMENTS) or "").split()
    )
    width = len(str(total))
    line = f"{done:>{width}}/{total} {_WORDS.get(outcome, outcome):<{_WIDTH}}  {inline(case)}"
    if ids:
        line += f"  [{', '.join(ids)}]"
    broken = _monitored(props.get(P_MONITORS))
    if broken:
        line += f"  monitors: {', '.join(broken)}"
    markup = dict(_MARKUP.get(FAILED if broken and outcome == PASSED else outcome, {}))
    return line, markup


def _monitored(raw: object) -> list[str]:
    """The rules a monitor found broken in the case (those that count: failed or warned)."""
    if not isinstance(raw, str):
        return []
    try:
        findings = json.loads(raw)
    except ValueError:
        return []
    said = [
        f"{inline(str(f.get('rule', '?')))} {f.get('outcome')}"
        for f in findings
        if isinstance(f, dict) and f.get("outcome") in (FAILED, WARNING)
    ]
    return list(dict.fromkeys(said))  # a rule a monitor saw broken several times, once


class CaseLines:
    """The plugin (see the module's comment), with the pytest arguments it needs."""

    # pytest's percentages off (its last, "[100%]", is written after the run loop)
    PYTEST_ARGS: Final = ("-o", "console_output_style=classic")

    def __init__(self) -> None:
        self.config: pytest.Config | None = None
        self.total = 0
        self.done = 0
        self._props: dict[str, dict[str, object]] = {}
        self._outcome: dict[str, str] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    def _reporter(self) -> Any:
        if self.config is None:
            return None
        # None in a forked worker: it unregistered its terminal, the run prints
        return self.config.pluginmanager.getplugin("terminalreporter")

    @contextmanager
    def _unseen(self) -> Iterator[None]:
        """What pytest's reporter writes meanwhile goes nowhere."""
        reporter = self._reporter()
        if reporter is None:
            yield
            return
        shown = reporter._tw
        reporter._tw = type(shown)(io.StringIO())  # pytest's own writer class, on nothing
        try:
            yield
        finally:
            reporter._tw = shown
            reporter.currentfspath = None  # it wrote no file name: no line to end

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> Any:
        with self._unseen():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        with self._unseen():
            result = yield
        props = self._props.setdefault(report.nodeid, {})
        props.update(dict(carried(report) or report.user_properties))
        previous = self._outcome.get(report.nodeid)
        if report.failed:
            self._outcome[report.nodeid] = FAILED
        elif report.skipped and previous is None:
            self._outcome[report.nodeid] = "skipped"
        elif report.when == "call" and previous is None:
            self._outcome[report.nodeid] = PASSED
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> Any:
        with self._unseen():
            result = yield
        reporter = self._reporter()
        props = self._props.pop(nodeid, {})
        outcome = self._outcome.pop(nodeid, PASSED)
        if reporter is not None:
            self.done += 1
            line, markup = case_line(self.done, max(self.total, self.done), nodeid, props, outcome)
            reporter.write_line(line, **markup)
        return result
