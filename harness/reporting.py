"""Reports: turning pytest's verdicts into conformance outcomes, and showing them.

Strategy: pytest knows passed / failed / skipped; the suite speaks passed, failed,
warning, info, not applicable (and expected failure, with a baseline). The translation
happens once, where the report is made (`pytest_runtest_makereport`, in the process that
ran the case, so it also works in xdist workers), and travels with the report as user
properties: the requirement IDs, the case ID, the outcome, expected and actual. Everything
downstream (the terminal table, the JSON report, JUnit properties, the baseline audit and
the exit status) reads those properties only, in the process that prints (the xdist
controller or the only process), through pure functions at the bottom of this module.

Rewriting pytest's verdict: a SHOULD failure without --strict and any INFO case must not
fail the run, so their failed reports become passed (call phase) or skipped (setup phase,
so pytest does not run the body with half-made fixtures); a baselined failure becomes an
xfail (pytest's own "expected failure"). Stale and unknown baseline entries set the exit
status at session finish.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mcp_host_conformance.harness.adapter import Description
from mcp_host_conformance.harness.baseline import (
    Baseline,
    BaselineError,
    CaseRecord,
    audit,
    load_baseline,
)
from mcp_host_conformance.harness.requirements import AREAS, CORE_AREAS, REQUIREMENTS
from mcp_host_conformance.harness.outcomes import (
    EXPECTED_FAILURE,
    FAILED,
    INFO,
    NOT_APPLICABLE,
    PASSED,
    SKIPPED,
    UNCOVERED,
    WARNING,
    ConformanceFailure,
    case_outcome,
    severest_level,
    worst,
)

__all__ = [
    "REPORT_SCHEMA",
    "CaseResult",
    "ReportingPlugin",
    "build_report",
    "case_id_from_nodeid",
    "render_summary",
    "requirement_outcomes",
]

REPORT_SCHEMA = "mcp-host-conformance-report/1"

# User-property keys (they also become JUnit <property> elements).
P_REQUIREMENTS = "requirements"
P_CASE = "case_id"
P_OUTCOME = "outcome"
P_EXPECTED = "expected"
P_ACTUAL = "actual"
P_MESSAGE = "message"

# Table columns in order; the last three show only when some count is not zero.
COLUMNS = (PASSED, FAILED, WARNING, INFO, NOT_APPLICABLE)
OPTIONAL_COLUMNS = (EXPECTED_FAILURE, SKIPPED, UNCOVERED)
_HEADINGS = {NOT_APPLICABLE: "not applicable", EXPECTED_FAILURE: "expected failure"}
_MESSAGE_LINES = 12


def case_id_from_nodeid(nodeid: str) -> str:
    """The case ID of a node ID (same rule as `mcp_host_conformance.harness.outcomes.case_id`)."""
    path, _, rest = nodeid.partition("::")
    return f"{Path(path).stem}::{rest}"


@dataclass
class CaseResult:
    id: str
    nodeid: str
    requirements: list[str]
    outcome: str
    expected: str = ""
    actual: str = ""
    message: str = ""
    duration: float = 0.0


# ---- pure views of the result model --------------------------------------------------------


def requirement_outcomes(
    cases: Iterable[CaseResult], collected: Mapping[str, CaseRecord] | None = None
) -> dict[str, dict[str, Any]]:
    """Every catalog requirement: level, area, profile, rule, outcome, the cases naming it.

    Outcome is the worst of its cases that ran; "skipped" if its cases were all collected but
    not run; "uncovered" if no case names it."""
    ran: dict[str, list[CaseResult]] = {rid: [] for rid in REQUIREMENTS}
    names: dict[str, list[str]] = {rid: [] for rid in REQUIREMENTS}
    for case in cases:
        for rid in case.requirements:
            if rid in ran:
                ran[rid].append(case)
                names[rid].append(case.id)
    for record in (collected or {}).values():
        for rid in record.requirements:
            if rid in names and record.id not in names[rid]:
                names[rid].append(record.id)
    result = {}
    for rid, req in REQUIREMENTS.items():
        if ran[rid]:
            outcome = worst(case.outcome for case in ran[rid])
        else:
            outcome = SKIPPED if names[rid] else UNCOVERED
        result[rid] = {
            "level": req.level,
            "area": req.area,
            "profile": req.profile,
            "rule": req.rule,
            "outcome": outcome,
            "cases": names[rid],
        }
    return result


def build_report(
    cases: list[CaseResult],
    *,
    client: Description | None,
    strict: bool,
    exit_status: int,
    collected: Mapping[str, CaseRecord] | None = None,
    baseline: Baseline | None = None,
    stale: list[str] | None = None,
    unknown: list[str] | None = None,
) -> dict[str, Any]:
    """The JSON report (schema in docs/report-schema.md)."""
    requirements = requirement_outcomes(cases, collected)
    case_counts = Counter(case.outcome for case in cases)
    requirement_counts = Counter(entry["outcome"] for entry in requirements.values())
    return {
        "schema": REPORT_SCHEMA,
        "client": None
        if client is None
        else {"name": client.name, "version": client.version, "profiles": sorted(client.profiles)},
        "summary": {
            "passed": exit_status == 0,
            "exit_status": int(exit_status),
            "strict": strict,
            "cases": dict(sorted(case_counts.items())),
            "requirements": dict(sorted(requirement_counts.items())),
        },
        "requirements": requirements,
        "cases": [asdict(case) for case in cases],
        "baseline": None
        if baseline is None
        else {
            "path": baseline.path,
            "entries": list(baseline.entries),
            "expected_failures": [c.id for c in cases if c.outcome == EXPECTED_FAILURE],
            "stale": list(stale or []),
            "unknown": list(unknown or []),
        },
    }


def _table(requirements: Mapping[str, Mapping[str, Any]]) -> list[str]:
    by_area: dict[str, Counter[str]] = {area: Counter() for area in AREAS}
    for entry in requirements.values():
        by_area[entry["area"]][entry["outcome"]] += 1
    # Core areas always; a profile area only when some case names one of its requirements.
    areas = [a for a in AREAS if a in CORE_AREAS or set(by_area[a]) - {UNCOVERED}]
    total: Counter[str] = Counter()
    for area in areas:
        total.update(by_area[area])
    columns = list(COLUMNS) + [c for c in OPTIONAL_COLUMNS if total[c]]
    headings = ["area"] + [_HEADINGS.get(c, c) for c in columns]
    rows = [[area] + [str(by_area[area][c]) for c in columns] for area in areas]
    rows.append(["total"] + [str(total[c]) for c in columns])
    widths = [max(len(r[i]) for r in [headings, *rows]) for i in range(len(headings))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    return [line(headings), *(line(r) for r in rows)]


def _case_block(case: CaseResult) -> list[str]:
    lines = [f"{case.id}  [{' '.join(case.requirements)}]"]
    body = case.message.splitlines()[:_MESSAGE_LINES] or [
        f"expected: {case.expected}",
        f"actual: {case.actual}",
    ]
    lines += ["    " + text for text in body]
    return lines


def render_summary(report: Mapping[str, Any], cases: list[CaseResult]) -> list[str]:
    """The terminal summary: client, requirement table by area, failures, baseline problems."""
    lines: list[str] = []
    client = report["client"]
    if client:
        profiles = ", ".join(client["profiles"]) or "none"
        lines.append(f"client: {client['name']} {client['version']} (profiles: {profiles})")
    lines.append("requirements by area (a requirement's outcome is the worst of its cases):")
    lines += ["  " + text for text in _table(report["requirements"])]
    counts = report["summary"]["cases"]
    lines.append(
        "cases: " + ", ".join(f"{n} {_HEADINGS.get(k, k)}" for k, n in counts.items())
        if counts
        else "cases: none ran"
    )
    sections = [
        (FAILED, "failures (MUST)"),
        (WARNING, "warnings (SHOULD; fail the run with --strict)"),
        (EXPECTED_FAILURE, "expected failures (listed in the baseline)"),
    ]
    for outcome, title in sections:
        listed = [case for case in cases if case.outcome == outcome]
        if listed:
            lines.append("")
            lines.append(f"{title}:")
            for case in listed:
                lines += ["  " + text for text in _case_block(case)]
    baseline = report["baseline"]
    if baseline and (baseline["stale"] or baseline["unknown"]):
        lines.append("")
        lines.append(f"baseline {baseline['path']}:")
        lines += [f"  stale (now passes; remove it): {entry}" for entry in baseline["stale"]]
        lines += [
            f"  unknown (no such requirement or case): {entry}" for entry in baseline["unknown"]
        ]
    lines.append("")
    verdict = "PASSED" if report["summary"]["passed"] else "FAILED"
    lines.append(f"conformance run {verdict} (exit status {report['summary']['exit_status']})")
    return lines


# ---- the pytest side --------------------------------------------------------------------------


def _requirement_ids(item: pytest.Item) -> list[str]:
    ids: list[str] = []
    for mark in item.iter_markers("requirements"):
        for arg in mark.args:
            for rid in [arg] if isinstance(arg, str) else list(arg):
                if rid not in ids:
                    ids.append(rid)
    return ids


def _is_case(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("requirements") is not None
        or "conformance" in Path(str(item.path)).parent.parts
    )


def _set_property(item: pytest.Item, key: str, value: str) -> None:
    item.user_properties[:] = [(k, v) for k, v in item.user_properties if k != key]
    item.user_properties.append((key, value))


def _skip_reason(call: pytest.CallInfo[None]) -> str:
    excinfo = call.excinfo
    if excinfo is not None:
        return str(getattr(excinfo.value, "msg", "") or excinfo.value)
    return ""


def _exit_status_of(value: int | pytest.ExitCode) -> int:
    return int(value)


@dataclass
class _Accumulating:
    props: dict[str, str] = field(default_factory=dict)
    duration: float = 0.0


class ReportingPlugin:
    """The reporting hooks; registered by `mcp_host_conformance.harness.plugin` as
    "mcp-host-conformance-reporting"."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.client: Description | None = None
        self.strict = strict_mode(config)
        self.is_worker = hasattr(config, "workerinput")
        self.baseline: Baseline | None = None
        path = _option(config, "expected_failures", None)
        if path:
            try:
                self.baseline = load_baseline(path)
            except BaselineError as exc:
                raise pytest.UsageError(f"mcp-host-conformance: {exc}") from None
        self._running: dict[str, _Accumulating] = {}
        self._collected: dict[str, CaseRecord] = {}
        self.report: dict[str, Any] | None = None
        self.cases: list[CaseResult] = []

    def set_client(self, description: Description) -> None:
        """Name the client under test in the summary and the JSON report (called by the plugin
        once it has described the client)."""
        self.client = description

    # -- collection: which cases exist (for "unknown" baseline entries) --

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        if _is_case(item):
            cid = case_id_from_nodeid(item.nodeid)
            self._collected[item.nodeid] = CaseRecord(cid, tuple(_requirement_ids(item)), None)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        for nodeid in ids:
            self._collected.setdefault(nodeid, CaseRecord(case_id_from_nodeid(nodeid), (), None))

    # -- where a verdict is made: classify, rewrite --

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        if not _is_case(item):
            return (yield)
        rids = _requirement_ids(item)
        cid = case_id_from_nodeid(item.nodeid)
        _set_property(item, P_REQUIREMENTS, " ".join(rids))
        _set_property(item, P_CASE, cid)
        report = yield
        if hasattr(report, "wasxfail"):  # the case's own xfail marker: leave it to pytest
            return report
        known = [rid for rid in rids if rid in REQUIREMENTS]
        phase: str | None = None
        if report.skipped:
            phase = case_outcome("skipped", None, _skip_reason(call))
        elif report.failed:
            exc = call.excinfo.value if call.excinfo is not None else None
            at_stake = exc.ids if isinstance(exc, ConformanceFailure) else known
            phase = case_outcome("failed", severest_level(r for r in at_stake if r in REQUIREMENTS))
            self._record_failure(item, call, exc)
            phase = self._rewrite_failure(report, item, cid, at_stake, phase)
        elif report.when == "call":
            phase = case_outcome("passed", severest_level(known))
        if phase is not None:
            previous = dict(item.user_properties).get(P_OUTCOME)
            outcome = worst([phase] + ([previous] if previous else []))
            _set_property(item, P_OUTCOME, outcome)
            report.conformance_outcome = phase
        report.user_properties = list(item.user_properties)
        return report

    def _record_failure(
        self, item: pytest.Item, call: pytest.CallInfo[None], exc: BaseException | None
    ) -> None:
        if isinstance(exc, ConformanceFailure):
            _set_property(item, P_EXPECTED, exc.expected)
            _set_property(item, P_ACTUAL, exc.actual)
            _set_property(item, P_MESSAGE, str(exc))
        elif call.excinfo is not None:
            text = call.excinfo.exconly()
            _set_property(item, P_ACTUAL, text.splitlines()[0] if text else "")
            _set_property(item, P_MESSAGE, f"{call.when}: {text}")

    def _rewrite_failure(
        self,
        report: pytest.TestReport,
        item: pytest.Item,
        cid: str,
        at_stake: list[str],
        phase: str,
    ) -> str:
        if phase in (FAILED, WARNING) and self.baseline and self.baseline.covers(cid, at_stake):
            report.outcome = "skipped"
            report.wasxfail = f"expected failure, listed in {self.baseline.path}"
            return EXPECTED_FAILURE
        if phase == FAILED or (phase == WARNING and self.strict):
            return phase
        # A SHOULD failure without --strict, or an INFO case: recorded, never fails the run.
        if report.when == "setup":  # the body must not run with half-made fixtures
            report.outcome = "skipped"
            message = dict(item.user_properties).get(P_MESSAGE, "")
            first = message.splitlines()[0] if message else ""
            report.longrepr = (str(item.path), 0, f"{phase}: {first}")
        else:
            report.outcome = "passed"
            report.longrepr = None
        return phase

    def pytest_report_teststatus(self, report: pytest.TestReport) -> Any:
        if getattr(report, "conformance_outcome", None) == WARNING and not report.failed:
            return "warned", "W", "WARNED"
        return None

    # -- where results are gathered (controller or only process) --

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if P_CASE not in props:
            return
        acc = self._running.setdefault(report.nodeid, _Accumulating())
        acc.props.update({k: str(v) for k, v in props.items()})
        acc.duration += report.duration

    def _results(self) -> list[CaseResult]:
        results = []
        for nodeid, acc in self._running.items():
            p = acc.props
            results.append(
                CaseResult(
                    id=p[P_CASE],
                    nodeid=nodeid,
                    requirements=p.get(P_REQUIREMENTS, "").split(),
                    # a case whose reports stopped short (a crashed worker) counts as failed
                    outcome=p.get(P_OUTCOME, FAILED),
                    expected=p.get(P_EXPECTED, ""),
                    actual=p.get(P_ACTUAL, ""),
                    message=p.get(P_MESSAGE, ""),
                    duration=round(acc.duration, 6),
                )
            )
        return results

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        self.cases = self._results()
        collected = dict(self._collected)
        for case in self.cases:
            collected[case.nodeid] = CaseRecord(case.id, tuple(case.requirements), case.outcome)
        stale: list[str] = []
        unknown: list[str] = []
        if self.baseline is not None:
            stale, unknown = audit(self.baseline, collected.values(), REQUIREMENTS)
            if (stale or unknown) and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.cases and self.baseline is None:
            return  # not a conformance run: stay silent
        if self.client is None:
            self.client = _described_client(self.config)
        self.report = build_report(
            self.cases,
            client=self.client,
            strict=self.strict,
            exit_status=_exit_status_of(session.exitstatus),
            collected=collected,
            baseline=self.baseline,
            stale=stale,
            unknown=unknown,
        )
        path = _option(self.config, "report_json", None)
        if path:
            Path(path).write_text(json.dumps(self.report, indent=2) + "\n", "utf-8")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or self.report is None:
            return
        terminalreporter.section("mcp-host-conformance")
        for text in render_summary(self.report, self.cases):
            terminalreporter.write_line(text)
        path = _option(self.config, "report_json", None)
        if path:
            terminalreporter.write_line(f"JSON report: {path}")


def _described_client(config: pytest.Config) -> Description | None:
    """The client's description from the plugin, when nobody called `set_client` (the
    plugin caches it, so this describes the client at most once per process)."""
    plugin = sys.modules.get("mcp_host_conformance.harness.plugin")
    describe = getattr(plugin, "client_description", None)
    if describe is None:
        return None
    try:
        return describe(config)
    except Exception:  # a client that cannot be described already failed its cases
        return None


def strict_mode(config: pytest.Config) -> bool:
    """Whether SHOULD failures fail the run. pytest owns the option name `--strict` (pytest 9
    sets the "strict" ini value with it), so the suite reads pytest's own flag; the same rule
    as `mcp_host_conformance.harness.plugin.strict_mode`, kept here so reporting works
    without the plugin."""
    try:
        if config.getini("strict"):
            return True
    except ValueError:  # pytest 8: no "strict" ini value, `--strict` is an option
        pass
    return bool(_option(config, "strict", False))


def _option(config: pytest.Config, name: str, default: Any) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # the option is not registered (the plugin was not loaded)
        return default
