"""What a run found, rule by rule: the failures of a JSON report grouped by the rule that
caused them, for the views a person reads first (the HTML page, the Markdown summary).

Strategy: a report lists cases; a person wants rules. A case fails on the rules its failure
names (`failed_requirements`), which are not always its own: a case of APR-4 whose host
offered a tool name the model service refuses stops at a *precondition* that EXP-2 broke,
and a rule monitor may see EXP-4 broken in any case. Each of these is one `Showing` of the
rule it names, so EXP-2's group holds its own cases, the cases of other rules it stopped
(labelled as such), and the monitors' findings, and dozens of cards sharing one cause read
as one rule. A pure function of the report's plain values, reading outcomes by name: an
outcome this module does not know (one added later) is still counted and shown by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "FAILING",
    "LABELS",
    "NextStep",
    "RuleGroup",
    "Showing",
    "label",
    "next_step",
    "rule_groups",
    "statement",
]

# The outcomes a case or a finding can fail with, in the order a reader needs them: MUST
# failures, SHOULD warnings, then those the baseline expects.
FAILING: Final = ("failed", "warning", "expected_failure")
LABELS: Final = {
    "not_applicable": "not applicable",
    "not_observed": "not observed",
    "expected_failure": "expected failure",
}
CASE: Final = "case"  # the case failed on this rule, one of its own or the one it names
PRECONDITION: Final = "precondition"  # a case of other rules stopped at this rule's breach
MONITOR: Final = "monitor"  # a rule monitor saw this rule broken in a case
NO_RULE: Final = ""  # a failure that names no rule of the catalog (a crashed worker, say)


_DECISION: Final = " Decision: "


def statement(rule: str) -> tuple[str, str]:
    """A catalog rule's text as (the rule, the decision taken on it): the catalog appends
    "Decision: ..." where the seed was vague; the rule alone names it, the decision explains."""
    head, _, decision = rule.partition(_DECISION)
    return head, decision


def label(outcome: str) -> str:
    """An outcome as a person reads it ("not_applicable" -> "not applicable")."""
    return LABELS.get(outcome, outcome.replace("_", " "))


@dataclass(frozen=True)
class Showing:
    """One place a rule was seen broken: a case that failed on it, a case of other rules that
    stopped at it (`kind` PRECONDITION), or a monitor's finding in a case."""

    kind: str
    case_id: str
    case_rules: tuple[str, ...]  # the rules the case itself checks
    expected: str
    actual: str
    monitor: str = ""
    message: str = ""


@dataclass
class RuleGroup:
    """A rule and every showing of it with one outcome."""

    rule_id: str
    level: str
    text: str
    outcome: str
    showings: list[Showing] = field(default_factory=list)

    @property
    def cases(self) -> list[str]:
        """The cases that showed it, each once, in order."""
        return list(dict.fromkeys(s.case_id for s in self.showings))

    def count(self, kind: str) -> int:
        return len({s.case_id for s in self.showings if s.kind == kind})


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _ids(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, Iterable):
        return tuple(str(v) for v in value)
    return ()


def _showings(case: Mapping[str, Any]) -> Iterable[tuple[str, str, Showing]]:
    """(rule, outcome, showing) for each rule a case's failure or its monitors name."""
    outcome = _text(case.get("outcome"))
    own = _ids(case.get("requirements"))
    cid = _text(case.get("id"))
    if outcome in FAILING:
        named = _ids(case.get("failed_requirements"))
        precondition = bool(case.get("precondition"))
        for rid in named or own or (NO_RULE,):
            # a case stopped at a precondition of one of its own rules failed on that rule
            kind = PRECONDITION if precondition and rid not in own else CASE
            yield (
                rid,
                outcome,
                Showing(
                    kind,
                    cid,
                    own,
                    _text(case.get("expected")),
                    _text(case.get("actual")),
                    message=_text(case.get("message")),
                ),
            )
    for finding in case.get("monitors") or ():
        if not isinstance(finding, Mapping):
            continue
        seen = _text(finding.get("outcome"))
        if seen in FAILING:
            yield (
                _text(finding.get("rule")),
                seen,
                Showing(
                    MONITOR,
                    cid,
                    own,
                    _text(finding.get("expected")),
                    _text(finding.get("actual")),
                    monitor=_text(finding.get("monitor")),
                ),
            )


_KIND_ORDER: Final = {CASE: 0, PRECONDITION: 1, MONITOR: 2}


def rule_groups(report: Mapping[str, Any], outcome: str) -> list[RuleGroup]:
    """The rules seen broken with `outcome` ("failed", "warning", "expected_failure"), each
    with its showings (its own failures, then the preconditions it broke, then the monitors'
    findings); the rule shown by the most cases first, then in the catalog's order."""
    requirements: Mapping[str, Mapping[str, Any]] = report.get("requirements") or {}
    groups: dict[str, RuleGroup] = {}
    for case in report.get("cases") or ():
        if not isinstance(case, Mapping):
            continue
        for rid, seen, showing in _showings(case):
            if seen != outcome:
                continue
            if rid not in groups:
                entry = requirements.get(rid) or {}
                groups[rid] = RuleGroup(
                    rid,
                    _text(entry.get("level")) or "?",
                    _text(entry.get("rule")) or "a failure that names no rule of the catalog",
                    outcome,
                )
            groups[rid].showings.append(showing)
    catalog = {rid: index for index, rid in enumerate(requirements)}
    for group in groups.values():
        group.showings.sort(key=lambda s: _KIND_ORDER.get(s.kind, 3))
    return sorted(
        groups.values(),
        key=lambda g: (-len(g.cases), catalog.get(g.rule_id, len(catalog)), g.rule_id),
    )


@dataclass(frozen=True)
class NextStep:
    """What to do after reading the report: one sentence and the commands that do it."""

    text: str
    commands: Sequence[str] = ()


BASELINE_FILE: Final = "expected-failures.txt"


def next_step(report: Mapping[str, Any], report_json: str | None = None) -> NextStep:
    """The next step for this report: remove stale baseline entries, fix or baseline new
    failures, or nothing. `report_json`: where the JSON report of the run was written, for
    the `baseline` command (REPORT.json when the run wrote none)."""
    baseline = report.get("baseline") or {}
    stale = [str(s) for s in baseline.get("stale") or ()]
    unknown = [str(u) for u in baseline.get("unknown") or ()]
    path = _text(baseline.get("path")) or BASELINE_FILE
    if stale or unknown:
        entries = ", ".join([*stale, *unknown])
        return NextStep(
            f"Remove from the baseline {path} the entries that now pass or match nothing "
            f"({entries}); the run fails until they are gone."
        )
    summary = report.get("summary") or {}
    counts = summary.get("cases") or {}
    # a case's own outcome, or a monitor's finding in a case that passed its own check
    failing = [o for o in ("failed", "warning") if counts.get(o) or rule_groups(report, o)]
    if not failing:
        if not summary.get("passed"):
            return NextStep(
                f"No case failed, but the run did not pass (exit status "
                f"{_text(summary.get('exit_status'))}): its output says why."
            )
        if counts.get("expected_failure"):
            return NextStep(
                f"Passed, held to the baseline {path}: an entry whose gap is fixed fails the "
                "run as stale until its line is removed, so the file only shrinks."
            )
        return NextStep("Passed: nothing to do.")
    source = report_json or "REPORT.json"
    commands = []
    if not report_json:
        commands.append("mcp-host-conformance run ... --report-json REPORT.json")
    commands.append(f"mcp-host-conformance baseline {source} -o {path}")
    commands.append(f"mcp-host-conformance run ... --expected-failures {path}")
    return NextStep(
        "Fix the rules above, or record them as known gaps so CI stays green while they are "
        "open and goes red on anything new:",
        commands,
    )
