"""Failures grouped by the rule that caused them (harness/reports/root_causes.py): a case
that stopped at another rule's precondition is that rule's, labelled; cases that failed on
one rule are one group; a monitor's finding is its rule's; the next step."""

from __future__ import annotations

from mcp_host_conformance.harness.reports.reporting import CaseResult, build_report
from mcp_host_conformance.harness.reports.root_causes import (
    CASE,
    MONITOR,
    PRECONDITION,
    label,
    next_step,
    rule_groups,
    statement,
)
from mcp_host_conformance.harness.verdicts.baseline import Baseline


def case(cid: str, rules: list[str], outcome: str = "failed", **fields) -> CaseResult:
    return CaseResult(
        id=cid, nodeid=f"conformance/{cid.replace('::', '.py::')}", requirements=rules,
        outcome=outcome, expected="e", actual="a", **fields,
    )  # fmt: skip


def finding(rule: str, outcome: str = "failed") -> dict[str, str]:
    return {"rule": rule, "monitor": "m", "expected": "x", "actual": "y", "outcome": outcome}


def report_of(cases: list[CaseResult], **kwargs) -> dict:
    return build_report(cases, client=None, strict=False, exit_status=1, **kwargs)


def test_a_precondition_failure_is_its_causes_and_is_labelled():
    report = report_of(
        [
            case("t_a::one", ["APR-4"], failed_requirements=["EXP-2"], precondition=True),
            case("t_e::own", ["EXP-2"], failed_requirements=["EXP-2"]),
            # a precondition of the case's own rule is a failure of that rule
            case("t_e::self", ["EXP-2"], failed_requirements=["EXP-2"], precondition=True),
        ]
    )
    (group,) = rule_groups(report, "failed")
    assert group.rule_id == "EXP-2" and group.level == "MUST"
    assert group.text.startswith("Otherwise (disallowed characters")
    assert [(s.case_id, s.kind) for s in group.showings] == [
        ("t_e::own", CASE),
        ("t_e::self", CASE),
        ("t_a::one", PRECONDITION),
    ]
    assert group.showings[2].case_rules == ("APR-4",)
    assert group.count(PRECONDITION) == 1


def test_cases_and_monitor_findings_of_one_rule_are_one_group_most_shown_first():
    report = report_of(
        [
            case("t_r::timeout", ["RES-6"], failed_requirements=["RES-6"]),
            case("t_n::redirect", ["NET-3"], failed_requirements=["NET-3"]),
            case("t_n::again", ["NET-3"], failed_requirements=["NET-3"]),
            case("t_a::x", ["APR-1"], "passed", monitors=[finding("RES-6"), finding("RES-6")]),
            case("t_a::y", ["APR-1"], "passed", monitors=[finding("RES-6")]),
        ]
    )
    groups = rule_groups(report, "failed")
    assert [g.rule_id for g in groups] == ["RES-6", "NET-3"]
    res6 = groups[0]
    assert res6.cases == ["t_r::timeout", "t_a::x", "t_a::y"]
    assert [s.kind for s in res6.showings] == [CASE, MONITOR, MONITOR, MONITOR]
    assert res6.count(MONITOR) == 2


def test_each_outcome_has_its_own_groups():
    report = report_of(
        [
            case("t_h::warn", ["HARD-1"], "warning", failed_requirements=["HARD-1"]),
            case("t_n::listed", ["NET-1"], "expected_failure", failed_requirements=["NET-1"]),
            case("t_a::x", ["APR-1"], "passed", monitors=[finding("STDIO-2", "expected_failure")]),
        ]
    )
    assert rule_groups(report, "failed") == []
    assert [g.rule_id for g in rule_groups(report, "warning")] == ["HARD-1"]
    assert [g.rule_id for g in rule_groups(report, "expected_failure")] == ["NET-1", "STDIO-2"]


def test_a_failure_that_names_no_rule_is_its_cases_rules_or_no_rule():
    report = report_of([case("t_a::crash", ["APR-1", "APR-2"]), case("t_x::worker_died", [])])
    groups = {g.rule_id: g for g in rule_groups(report, "failed")}
    assert set(groups) == {"APR-1", "APR-2", ""}
    assert groups[""].text == "a failure that names no rule of the catalog"


def test_a_report_from_elsewhere_is_read_without_trusting_its_shape():
    report = {
        "requirements": {},
        "cases": [
            "not a case",
            {"id": "c", "outcome": "failed", "failed_requirements": "X-1 X-2", "monitors": [7]},
            {"id": "d", "outcome": "not_observed", "requirements": ["Y-1"]},
        ],
    }
    groups = rule_groups(report, "failed")
    assert [(g.rule_id, g.level) for g in groups] == [("X-1", "?"), ("X-2", "?")]


def test_statement_and_label():
    assert statement("The rule. Decision: the detail.") == ("The rule.", "the detail.")
    assert statement("Only a rule.") == ("Only a rule.", "")
    assert label("not_applicable") == "not applicable"
    assert label("not_observed") == "not observed"  # an outcome added later reads by name
    assert label("some_new_outcome") == "some new outcome"


def test_the_next_step():
    failed = report_of([case("t_r::timeout", ["RES-6"], failed_requirements=["RES-6"])])
    step = next_step(failed, "out/r.json")
    assert step.commands == [
        "mcp-host-conformance baseline out/r.json -o expected-failures.txt",
        "mcp-host-conformance run ... --expected-failures expected-failures.txt",
    ]
    assert next_step(failed).commands[0] == (
        "mcp-host-conformance run ... --report-json REPORT.json"
    )
    # a monitor's finding in a case that passed its own check fails the run too
    seen = report_of([case("t_a::x", ["APR-1"], "passed", monitors=[finding("STDIO-2")])])
    assert next_step(seen).text.startswith("Fix the rules above")
    assert next_step(seen).commands[-1].endswith("--expected-failures expected-failures.txt")
    passed = build_report([], client=None, strict=False, exit_status=0)
    assert next_step(passed).text == "Passed: nothing to do."
    interrupted = build_report([], client=None, strict=False, exit_status=2)
    assert "exit status 2" in next_step(interrupted).text
    held = build_report(
        [case("t_n::listed", ["NET-1"], "expected_failure", failed_requirements=["NET-1"])],
        client=None,
        strict=False,
        exit_status=0,
        baseline=Baseline(path="gaps.txt", entries={"t_n::listed": 1}),
    )
    assert next_step(held).text.startswith("Passed, held to the baseline gaps.txt")
    stale = build_report(
        [],
        client=None,
        strict=False,
        exit_status=1,
        baseline=Baseline(path="gaps.txt", entries={"t_n::fixed": 1}),
        stale=["t_n::fixed"],
    )
    assert "Remove from the baseline gaps.txt" in next_step(stale).text
    assert "t_n::fixed" in next_step(stale).text
