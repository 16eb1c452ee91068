"""The one result model: what a case's run means for the client under test.

Strategy: a closed outcome vocabulary in the style of Autobahn (OK / NON-STRICT /
INFORMATIONAL / FAILED) and h2spec (expected vs actual): pytest says passed, failed or
skipped; the requirement levels decide what that means. Every rule here is a pure function
of plain values, so the terminal table, the JSON report, JUnit and the exit status are all
computed from the same answers and tested without pytest.

Case authors use three functions: `check` (the rule holds, or the case fails against the
IDs it names), `precondition` (something the check needs first, belonging to another
requirement, did not happen: that requirement fails, the case's own stays unchecked) and
`not_observable` (this run cannot see the rule at all: the case is `not_observed` with the
reason and its requirement is `partial`, never passed). Not observed is not "not applicable":
a rule that does not apply to the host (a profile it does not claim, a capability it lacks)
is not applicable; a rule that applies but that this case could not see here (no sealed
network, no built-in tools to be offered beside) was not observed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, NoReturn

from mcp_host_conformance.harness.verdicts.requirements import requirement

__all__ = [
    "EXPECTED_FAILURE",
    "FAILED",
    "INFO",
    "NOT_APPLICABLE",
    "NOT_APPLICABLE_PREFIX",
    "NOT_OBSERVABLE_PREFIX",
    "NOT_OBSERVED",
    "NOT_RUN",
    "OUTCOMES",
    "PARTIAL",
    "PASSED",
    "PRECONDITION_PREFIX",
    "SKIPPED",
    "UNCOVERED",
    "WARNING",
    "ConformanceFailure",
    "Contribution",
    "Finding",
    "HarnessFailure",
    "MonitorFailure",
    "PreconditionFailure",
    "case_outcome",
    "check",
    "failure_message",
    "is_failing",
    "not_observable",
    "precondition",
    "requirement_outcome",
    "severest_level",
    "skip_outcome",
    "worst",
]

PASSED: Final = "passed"
FAILED: Final = "failed"  # a MUST case failed
WARNING: Final = "warning"  # a SHOULD case failed: fails the run only with --strict
INFO: Final = "info"  # an INFO case: records figures, never fails
NOT_APPLICABLE: Final = "not_applicable"  # the client does not claim the profile or capability
# the rule applies, but the case could not observe it here (`not_observable`)
NOT_OBSERVED: Final = "not_observed"
SKIPPED: Final = "skipped"  # not run for another reason (slow, deselected, interrupted)
EXPECTED_FAILURE: Final = "expected_failure"  # failed or warned, but listed in the baseline
# Requirements only:
UNCOVERED: Final = "uncovered"  # no collected case checks it
PARTIAL: Final = "partial"  # what ran passed, but not all of its cases ran: never passed
NOT_RUN: Final = "not_run"  # a contribution: the case could not check this requirement

# Worst last: a requirement's outcome is the worst of its cases' outcomes.
OUTCOMES: Final = (
    NOT_APPLICABLE,
    NOT_OBSERVED,
    SKIPPED,
    INFO,
    PASSED,
    WARNING,
    EXPECTED_FAILURE,
    FAILED,
)
_RANK: Final = {name: rank for rank, name in enumerate(OUTCOMES)}

NOT_APPLICABLE_PREFIX: Final = "not applicable: "
NOT_OBSERVABLE_PREFIX: Final = "not observable: "
PRECONDITION_PREFIX: Final = "precondition failed: "

_LEVEL_RANK: Final = {"INFO": 0, "SHOULD": 1, "MUST": 2}


def _as_ids(ids: str | Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        return ids.split()
    return list(ids)


def failure_message(ids: Sequence[str], expected: str, actual: str, prefix: str = "") -> str:
    """ "<prefix><ID> (<LEVEL>): <rule text>" per ID, then the expected and actual lines."""
    lines = []
    for rid in ids:
        req = requirement(rid)
        lines.append(f"{prefix}{req.id} ({req.level}): {req.rule}")
    lines.append(f"  expected: {expected}")
    lines.append(f"  actual: {actual}")
    return "\n".join(lines)


class HarnessFailure(Exception):
    """The harness itself failed under a case (the worker running it died, a mock it served
    stopped): whatever the case saw, nothing was learnt of the host. Reported as a harness
    error, the case not run; never a failure of the host."""


class ConformanceFailure(AssertionError):
    """A case found the client breaking a rule. Carries the requirement IDs it breaks and
    what was expected versus what happened; its message quotes each rule's text."""

    prefix = ""

    def __init__(self, ids: str | Sequence[str], expected: str, actual: str) -> None:
        self.ids = _as_ids(ids)
        if not self.ids:
            raise ValueError("a conformance failure names at least one requirement ID")
        self.expected = expected
        self.actual = actual
        super().__init__(failure_message(self.ids, expected, actual, self.prefix))


@dataclass(frozen=True)
class Finding:
    """A rule broken where a monitor saw it (`harness.monitors`): in a case of any rule, not
    only the rule's own. `monitor` names what watched; `case` is filled in by the report."""

    rule: str
    monitor: str
    expected: str
    actual: str

    def to_json(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "monitor": self.monitor,
            "expected": self.expected,
            "actual": self.actual,
        }


class MonitorFailure(ConformanceFailure):
    """The case's own checks ended (`own`: "passed", or the skip that ended it) and a rule
    monitor then saw other rules broken in what the case made (`findings`). The report fails
    those rules, naming this case; the case's own requirements keep their own verdict."""

    prefix = "rule monitor: "

    def __init__(self, findings: Sequence[Finding], own: str = "passed", reason: str = "") -> None:
        self.findings = list(findings)
        self.own = own
        self.reason = reason
        first = self.findings[0]
        super().__init__(
            sorted({f.rule for f in self.findings}),
            f"{first.expected} (monitor {first.monitor})",
            first.actual + (f"; and {len(self.findings) - 1} more" if len(findings) > 1 else ""),
        )


class PreconditionFailure(ConformanceFailure):
    """What a case needed before it could check its own rule did not happen, and that is
    itself a failure of `ids` (e.g. a call that should have ended `unknown` before RETRY-2
    can be checked, which is RES-6's rule). The report names the precondition and fails
    `ids`; the case's own requirements stay unchecked (`partial`), neither failed nor
    passed."""

    prefix = PRECONDITION_PREFIX


def check(condition: bool, *, ids: str | Sequence[str], expected: str, actual: str) -> None:
    """Raise ConformanceFailure unless `condition` holds."""
    if not condition:
        raise ConformanceFailure(ids, expected, actual)


def precondition(condition: bool, *, ids: str | Sequence[str], expected: str, actual: str) -> None:
    """Raise PreconditionFailure unless `condition` holds: `ids` are the requirements the
    precondition belongs to (reported as "precondition failed: ID ...")."""
    if not condition:
        raise PreconditionFailure(ids, expected, actual)


def not_observable(reason: str) -> NoReturn:
    """Skip the case: this run cannot observe its rule (e.g. no network namespace here). The
    case is `not_observed`; its requirements are reported `partial` (or `not_observed` when
    no case of theirs observed them) with the reason, never passed."""
    import pytest  # only when called, from a case: this module stays free of pytest

    pytest.skip(f"{NOT_OBSERVABLE_PREFIX}{reason}")


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
        return skip_outcome(skip_reason)
    if level == "INFO":
        return INFO
    if report_outcome == "passed":
        return PASSED
    if level == "SHOULD":
        return WARNING
    return FAILED


def skip_outcome(reason: str) -> str:
    """What a skipped case's reason makes of it: not applicable, not observed, or skipped."""
    if reason.startswith(NOT_APPLICABLE_PREFIX):
        return NOT_APPLICABLE
    if reason.startswith(NOT_OBSERVABLE_PREFIX):
        return NOT_OBSERVED
    return SKIPPED


def worst(outcomes: Iterable[str]) -> str:
    """The worst of these case outcomes; UNCOVERED when there are none."""
    found = list(outcomes)
    if not found:
        return UNCOVERED
    return max(found, key=_RANK.__getitem__)


@dataclass(frozen=True)
class Contribution:
    """What one case says about one requirement: its outcome for it, or NOT_RUN / SKIPPED
    (it did not check it) with the reason."""

    case: str  # the case ID
    outcome: str
    reason: str = ""


_DID_NOT_CHECK: Final = (SKIPPED, NOT_RUN)
_REASONS_SHOWN: Final = 3


def requirement_outcome(contributions: Sequence[Contribution]) -> tuple[str, str]:
    """A requirement's outcome and the reason for it ("" unless partial, not observed or
    skipped).

    The worst outcome of the cases that checked it; but `partial` instead of `passed` when
    some of its cases did not check it for this host (slow without --run-slow, deselected,
    not observed here, a failed precondition, or not applicable to this host), since a
    requirement is passed only when every case for it ran and passed. `not_applicable` when
    none of its cases applies to the host; `not_observed` when none checked it and those
    that apply could not observe it here; `skipped` when none of them checked it for
    another reason; `uncovered` without cases."""
    if not contributions:
        return UNCOVERED, ""
    inapplicable = [c for c in contributions if c.outcome == NOT_APPLICABLE]
    unobserved = [c for c in contributions if c.outcome == NOT_OBSERVED]
    missing = [c for c in contributions if c.outcome in _DID_NOT_CHECK]
    checked = [
        c for c in contributions if c.outcome not in (*_DID_NOT_CHECK, NOT_APPLICABLE, NOT_OBSERVED)
    ]
    if len(inapplicable) == len(contributions):
        return NOT_APPLICABLE, ""
    unchecked = missing + unobserved + inapplicable
    why = "; ".join(
        f"{c.case} ({c.reason or _UNCHECKED_WORDS.get(c.outcome, 'not run')})"
        for c in unchecked[:_REASONS_SHOWN]
    ) + (f"; and {len(unchecked) - _REASONS_SHOWN} more" if len(unchecked) > _REASONS_SHOWN else "")
    if not checked:
        if unobserved and not missing:
            return NOT_OBSERVED, f"none of its {len(unchecked)} case(s) could observe it: {why}"
        return SKIPPED, f"none of its {len(unchecked)} case(s) ran: {why}"
    outcome = worst(c.outcome for c in checked)
    if outcome == PASSED and unchecked:
        counts = []
        if missing:
            counts.append(f"{len(missing)} did not run")
        if unobserved:
            counts.append(f"{len(unobserved)} not observed here")
        if inapplicable:
            counts.append(f"{len(inapplicable)} not applicable to this host")
        return PARTIAL, f"{' and '.join(counts)} of {len(contributions)} case(s): {why}"
    return outcome, ""


_UNCHECKED_WORDS: Final = {NOT_APPLICABLE: "not applicable", NOT_OBSERVED: "not observed"}


def is_failing(outcome: str, *, strict: bool = False) -> bool:
    """Whether this outcome fails the run (a warning only with --strict; partial never)."""
    return outcome == FAILED or (strict and outcome == WARNING)
