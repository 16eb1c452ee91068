"""The one result model: what a case's run means for the client under test.

Strategy: a closed outcome vocabulary in the style of Autobahn (OK / NON-STRICT /
INFORMATIONAL / FAILED) and h2spec (expected vs actual): pytest says passed, failed or
skipped; the requirement levels decide what that means. Every rule here is a pure function
of plain values, so the terminal table, the JSON report, JUnit and the exit status are all
computed from the same answers and tested without pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_host_conformance.harness.requirements import requirement

if TYPE_CHECKING:
    import pytest

__all__ = [
    "EXPECTED_FAILURE",
    "FAILED",
    "INFO",
    "NOT_APPLICABLE",
    "NOT_APPLICABLE_PREFIX",
    "OUTCOMES",
    "PASSED",
    "SKIPPED",
    "UNCOVERED",
    "WARNING",
    "ConformanceFailure",
    "case_id",
    "case_outcome",
    "check",
    "failure_message",
    "is_failing",
    "severest_level",
    "worst",
]

PASSED = "passed"
FAILED = "failed"  # a MUST case failed
WARNING = "warning"  # a SHOULD case failed: fails the run only with --strict
INFO = "info"  # an INFO case: records figures, never fails
NOT_APPLICABLE = "not_applicable"  # the client does not claim the profile or capability
SKIPPED = "skipped"  # not run for another reason (a slow case without --run-slow)
EXPECTED_FAILURE = "expected_failure"  # failed or warned, but listed in the baseline
UNCOVERED = "uncovered"  # a requirement no collected case checks (requirements only)

# Worst last: a requirement's outcome is the worst of its cases' outcomes.
OUTCOMES = (NOT_APPLICABLE, SKIPPED, INFO, PASSED, WARNING, EXPECTED_FAILURE, FAILED)
_RANK = {name: rank for rank, name in enumerate(OUTCOMES)}

NOT_APPLICABLE_PREFIX = "not applicable: "

_LEVEL_RANK = {"INFO": 0, "SHOULD": 1, "MUST": 2}


def _as_ids(ids: str | Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        return ids.split()
    return list(ids)


def failure_message(ids: Sequence[str], expected: str, actual: str) -> str:
    """ "<ID> (<LEVEL>): <rule text>" per ID, then the expected and actual lines."""
    lines = []
    for rid in ids:
        req = requirement(rid)
        lines.append(f"{req.id} ({req.level}): {req.rule}")
    lines.append(f"  expected: {expected}")
    lines.append(f"  actual: {actual}")
    return "\n".join(lines)


class ConformanceFailure(AssertionError):
    """A case found the client breaking a rule. Carries the requirement IDs it breaks and
    what was expected versus what happened; its message quotes each rule's text."""

    def __init__(self, ids: str | Sequence[str], expected: str, actual: str) -> None:
        self.ids = _as_ids(ids)
        if not self.ids:
            raise ValueError("a conformance failure names at least one requirement ID")
        self.expected = expected
        self.actual = actual
        super().__init__(failure_message(self.ids, expected, actual))


def check(condition: bool, *, ids: str | Sequence[str], expected: str, actual: str) -> None:
    """Raise ConformanceFailure unless `condition` holds."""
    if not condition:
        raise ConformanceFailure(ids, expected, actual)


def case_id(item: pytest.Item) -> str:
    """A case's stable ID: "<module stem>::<test name>", e.g. "approval::test_empty_answer_denies".

    Independent of where the package is installed, so a baseline file travels between
    machines; a class, if any, stays in the name ("approval::TestX::test_y[1]")."""
    _, _, rest = item.nodeid.partition("::")
    return f"{Path(str(item.path)).stem}::{rest or item.name}"


def severest_level(ids: Iterable[str]) -> str | None:
    """The most severe level among these requirement IDs (MUST > SHOULD > INFO); None if none."""
    levels = [requirement(rid).level for rid in ids]
    if not levels:
        return None
    return max(levels, key=_LEVEL_RANK.__getitem__)


def case_outcome(report_outcome: str, level: str | None, skip_reason: str = "") -> str:
    """What pytest's verdict means at a requirement level.

    `report_outcome` is pytest's "passed" / "failed" / "skipped"; `level` is the severest
    level of the requirements at stake (those of the ConformanceFailure if it names them,
    else the case's marker); None counts as MUST, so an unmarked failure is never hidden."""
    if report_outcome == "skipped":
        return NOT_APPLICABLE if skip_reason.startswith(NOT_APPLICABLE_PREFIX) else SKIPPED
    if level == "INFO":
        return INFO
    if report_outcome == "passed":
        return PASSED
    if level == "SHOULD":
        return WARNING
    return FAILED


def worst(outcomes: Iterable[str]) -> str:
    """The worst of these outcomes; UNCOVERED when there are none."""
    found = list(outcomes)
    if not found:
        return UNCOVERED
    return max(found, key=_RANK.__getitem__)


def is_failing(outcome: str, *, strict: bool = False) -> bool:
    """Whether this outcome fails the run (a warning only with --strict)."""
    return outcome == FAILED or (strict and outcome == WARNING)
