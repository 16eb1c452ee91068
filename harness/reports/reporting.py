"""Reports: turning pytest's verdicts into conformance outcomes, and showing them.

Strategy: pytest knows passed / failed / skipped; the suite speaks passed, failed,
warning, info, not applicable, not observed (and expected failure, with a baseline; and per
requirement partial, skipped, uncovered). The translation happens once, where the report is made
(`pytest_runtest_makereport`, in the process that ran the case, so it also works in xdist
workers), and travels with the report as user properties: the requirement IDs, the case
ID, the outcome, the IDs a failure is about, expected and actual, and the figures the case
recorded with `record_property`. Everything downstream (the terminal table, the JSON
report, JUnit properties, the baseline audit and the exit status) reads those properties
only, in the process that prints (the xdist controller or the only process), through pure
functions at the bottom of this module.

What a report holds is hostile output made safe: every secret the process registered
(canaries, the mock model's key) is removed from messages, figures and pytest's own
failure text (`mcp_host_conformance.harness.cases.canaries.REGISTRY`), control characters are
made visible in what is printed, and every text a host may have supplied is bounded where the
report is made (`safe_text.cut`: a few KiB a field, its head and tail), so one case quoting
30 MB cannot make a 30 MB report, JUnit file or terminal line.

Rewriting pytest's verdict: a SHOULD failure without --strict and any INFO case must not
fail the run, so their failed reports become passed (call phase) or skipped (setup phase,
so pytest does not run the body with half-made fixtures); a baselined failure becomes an
xfail (pytest's own "expected failure"). Stale and unknown baseline entries set the exit
status at session finish.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

import pytest

from mcp_host_conformance.harness.cases.canaries import REGISTRY
from mcp_host_conformance.harness.cases.items import (
    case_id,
    case_id_from_nodeid,
    is_case,
    option,
    requirement_ids,
    strict_mode,
)
from mcp_host_conformance.harness.contract.adapter import Description
from mcp_host_conformance.harness.reports.html import render_html
from mcp_host_conformance.harness.reports.interruption import (
    INTERRUPTED_BY,
    interrupted_by,
    interruption,
    reason_for,
)
from mcp_host_conformance.harness.reports.junit import JunitNames
from mcp_host_conformance.harness.reports.markdown import render_markdown
from mcp_host_conformance.harness.reports.report_files import unwritable_reports, write_report
from mcp_host_conformance.harness.sandbox.network import name_server_stopped
from mcp_host_conformance.harness.sandbox.network import observe as observe_network
from mcp_host_conformance.harness.verdicts.baseline import (
    DESELECTED,
    Baseline,
    BaselineError,
    CaseRecord,
    audit,
    load_baseline,
)
from mcp_host_conformance.harness.verdicts.outcomes import (
    EXPECTED_FAILURE,
    FAILED,
    INFO,
    NOT_APPLICABLE,
    NOT_OBSERVED,
    NOT_RUN,
    PARTIAL,
    PASSED,
    SKIPPED,
    UNCOVERED,
    WARNING,
    ConformanceFailure,
    Contribution,
    Finding,
    HarnessFailure,
    MonitorFailure,
    PreconditionFailure,
    case_outcome,
    requirement_outcome,
    severest_level,
    worst,
)
from mcp_host_conformance.harness.verdicts.requirements import AREAS, CORE_AREAS, REQUIREMENTS
from mcp_host_conformance.harness.verdicts.safe_text import (
    FIELD_LIMIT,
    LABEL_LIMIT,
    MESSAGE_LIMIT,
    cut,
    inline,
    visible,
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

REPORT_SCHEMA: Final = "mcp-host-conformance-report/1"

# User-property keys (they also become JUnit <property> elements).
P_REQUIREMENTS: Final = "requirements"
P_CASE: Final = "case_id"
P_OUTCOME: Final = "outcome"
P_AT_STAKE: Final = "failed_requirements"
P_PRECONDITION: Final = "precondition"
P_EXPECTED: Final = "expected"
P_ACTUAL: Final = "actual"
P_MESSAGE: Final = "message"
P_REASON: Final = "reason"
P_MONITORS: Final = "monitor_findings"  # JSON: the rule monitors' findings in this case
OWN_PROPERTIES: Final = frozenset(
    (P_REQUIREMENTS, P_CASE, P_OUTCOME, P_AT_STAKE, P_PRECONDITION)
    + (P_EXPECTED, P_ACTUAL, P_MESSAGE, P_REASON, P_MONITORS)
)
# What the rule monitors found at the end of a case's body (the plugin puts it here), and,
# when they alone failed the case, how its own checks ended.
FINDINGS: Final = pytest.StashKey[list[Finding]]()
MONITOR_VERDICT: Final = pytest.StashKey[MonitorFailure]()
WORKER_COLLECTED: Final = "mcp_host_conformance_collected"
# JUnit families whose test cases may hold <properties> (pytest's names for them).
JUNIT_FAMILIES_WITH_PROPERTIES: Final = ("xunit1", "legacy")

# Table columns in order; the optional ones show only when some count is not zero.
COLUMNS: Final = (PASSED, PARTIAL, FAILED, WARNING, INFO, NOT_APPLICABLE)
OPTIONAL_COLUMNS: Final = (NOT_OBSERVED, EXPECTED_FAILURE, SKIPPED, UNCOVERED)
_HEADINGS: Final = {
    NOT_APPLICABLE: "not applicable",
    NOT_OBSERVED: "not observed",
    EXPECTED_FAILURE: "expected failure",
}
_MESSAGE_LINES: Final = 12
_FIGURES_SHOWN: Final = 200  # characters of one figure in the terminal summary
# Characters of pytest's own text of a report (its failure text, each captured output) kept
# when it is longer: a host's text quoted there is bounded as the report's fields are.
_PYTEST_TEXT: Final = 2 * MESSAGE_LIMIT


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
    reason: str = ""  # why it was skipped or not applicable
    failed_requirements: list[str] = field(default_factory=list)  # what a failure is about
    precondition: bool = False  # the failure is a precondition of the case's own check
    figures: dict[str, Any] = field(default_factory=dict)  # what the case recorded
    # rules other than its own that a monitor saw broken in this case: rule, monitor,
    # expected, actual, outcome
    monitors: list[dict[str, str]] = field(default_factory=list)


# ---- pure views of the result model --------------------------------------------------------


def _contributions(case: CaseResult) -> dict[str, Contribution]:
    """What the case says about each requirement it touches (see docs/report-schema.md)."""
    found: dict[str, Contribution] = {}
    failing = case.outcome in (FAILED, WARNING, EXPECTED_FAILURE)
    if case.precondition and failing:
        for rid in case.requirements:
            found[rid] = Contribution(
                case.id, NOT_RUN, f"precondition failed: {' '.join(case.failed_requirements)}"
            )
        for rid in case.failed_requirements:
            found[rid] = Contribution(case.id, case.outcome)
        return _with_monitors(case, found)
    if failing and case.failed_requirements:
        # The failure says which rules it is about: those fail; the case's other rules were
        # not checked past it (a case of RES-1 and RES-7 that failed on RES-7's check says
        # nothing against RES-1).
        for rid in case.failed_requirements:
            found[rid] = Contribution(case.id, case.outcome)
        stopped = f"the case stopped at a failure of {' '.join(case.failed_requirements)}"
        for rid in case.requirements:
            found.setdefault(rid, Contribution(case.id, NOT_RUN, stopped))
        return _with_monitors(case, found)
    outcome, reason = case.outcome, case.reason
    for rid in [*case.requirements, *(case.failed_requirements if failing else [])]:
        found.setdefault(rid, Contribution(case.id, outcome, reason))
    return _with_monitors(case, found)


def _with_monitors(case: CaseResult, found: dict[str, Contribution]) -> dict[str, Contribution]:
    """A monitor's finding is the case's word on that rule too: the worse of the two."""
    for finding in case.monitors:
        rid, outcome = finding["rule"], finding["outcome"]
        known = found.get(rid)
        if (
            known is None
            or known.outcome in (NOT_RUN, SKIPPED, NOT_OBSERVED)
            or worst([known.outcome, outcome]) == outcome
        ):
            found[rid] = Contribution(case.id, outcome, f"monitor {finding['monitor']}")
    return found


def requirement_outcomes(
    cases: Iterable[CaseResult], collected: Mapping[str, CaseRecord] | None = None
) -> dict[str, dict[str, Any]]:
    """Every catalog requirement: level, area, profile, rule, outcome, the reason for a
    partial or skipped outcome, and the cases naming it.

    A case collected but never run (deselected, or the run stopped first) counts as a case
    that did not check its requirements."""
    by_rid: dict[str, list[Contribution]] = {rid: [] for rid in REQUIREMENTS}
    names: dict[str, list[str]] = {rid: [] for rid in REQUIREMENTS}
    seen: set[str] = set()
    for case in cases:
        seen.add(case.nodeid)
        for rid, contribution in _contributions(case).items():
            if rid in by_rid:
                by_rid[rid].append(contribution)
                if case.id not in names[rid]:
                    names[rid].append(case.id)
    for nodeid, record in (collected or {}).items():
        if nodeid in seen:
            continue
        reason = "deselected" if record.outcome == DESELECTED else "not run"
        for rid in record.requirements:
            if rid in by_rid and record.id not in names[rid]:
                by_rid[rid].append(Contribution(record.id, NOT_RUN, reason))
                names[rid].append(record.id)
    result = {}
    for rid, req in REQUIREMENTS.items():
        outcome, reason = requirement_outcome(by_rid[rid])
        result[rid] = {
            "level": req.level,
            "area": req.area,
            "profile": req.profile,
            "rule": req.rule,
            "outcome": outcome,
            "reason": reason,
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
    environment: Mapping[str, Any] | None = None,
    interrupted_by: str | None = None,
) -> dict[str, Any]:
    """The JSON report (schema in docs/report-schema.md); `interrupted_by`: what stopped the
    run, if something did (Ctrl-C, SIGTERM)."""
    requirements = requirement_outcomes(cases, collected)
    case_counts = Counter(case.outcome for case in cases)
    requirement_counts = Counter(entry["outcome"] for entry in requirements.values())
    return {
        "schema": REPORT_SCHEMA,
        "client": None if client is None else _client(client),
        "summary": {
            "passed": exit_status == 0,
            "exit_status": int(exit_status),
            "strict": strict,
            "cases": dict(sorted(case_counts.items())),
            "requirements": dict(sorted(requirement_counts.items())),
            "interrupted": interruption(
                interrupted_by, ((c.nodeid, c.id, c.reason) for c in cases), collected or {}
            ),
        },
        "environment": dict(environment or {}),
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


def _client(client: Description) -> dict[str, Any]:
    """The client as it described itself, each text bounded (JSON escapes the rest)."""
    return {
        "name": cut(str(client.name), LABEL_LIMIT),
        "version": cut(str(client.version), LABEL_LIMIT),
        "profiles": [cut(str(p), LABEL_LIMIT) for p in sorted(client.profiles)],
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
    lines += ["    " + visible(text) for text in body]
    return lines


def _figure(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return cut(visible(" ".join(text.split())), _FIGURES_SHOWN)


def render_summary(report: Mapping[str, Any], cases: Sequence[CaseResult]) -> list[str]:
    """The terminal summary: client, requirement table by area, failures, partial
    requirements, recorded figures, baseline problems, verdict."""
    lines: list[str] = []
    client = report["client"]
    if client:
        profiles = ", ".join(inline(p) for p in client["profiles"]) or "none"
        lines.append(
            f"client: {inline(client['name'])} {inline(client['version'])} (profiles: {profiles})"
        )
    network = (report.get("environment") or {}).get("network")
    if network:
        reason = report["environment"].get("network_reason")
        lines.append(visible(f"network: {network}" + (f" ({reason})" if reason else "")))
    lines.append(
        "requirements by area (a requirement's outcome is the worst of its cases; "
        "partial: what ran passed, but not all of its cases ran):"
    )
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
    seen_by_monitors = [(case, f) for case in cases for f in case.monitors]
    if seen_by_monitors:
        lines.append("")
        lines.append("rules broken where a rule monitor saw it (in a case of another rule):")
        for case, finding in seen_by_monitors:
            outcome = _HEADINGS.get(finding["outcome"], finding["outcome"])
            lines.append(
                f"  {finding['rule']} {outcome}, seen in {case.id} (monitor {finding['monitor']})"
            )
            lines.append("    " + visible(f"expected: {finding.get('expected', '')}"))
            lines.append("    " + visible(f"actual: {finding.get('actual', '')}"))
    partial = [(rid, e) for rid, e in report["requirements"].items() if e["outcome"] == PARTIAL]
    if partial:
        lines.append("")
        lines.append(
            "partial (not passed: some of their cases did not run, or do not apply to this host):"
        )
        lines += [f"  {rid}: {visible(entry['reason'])}" for rid, entry in partial]
    with_figures = [case for case in cases if case.figures]
    if with_figures:
        lines.append("")
        lines.append("figures (recorded by the cases, e.g. INFO requirements):")
        for case in with_figures:
            lines.append(f"  {case.id}  [{' '.join(case.requirements)}]")
            lines += [f"    {visible(k)}: {_figure(v)}" for k, v in case.figures.items()]
    baseline = report["baseline"]
    if baseline and (baseline["stale"] or baseline["unknown"]):
        lines.append("")
        lines.append(f"baseline {baseline['path']}:")
        lines += [f"  stale (now passes; remove it): {entry}" for entry in baseline["stale"]]
        lines += [
            f"  unknown (no such requirement or case): {visible(entry)}"
            for entry in baseline["unknown"]
        ]
    lines += _interruption_lines(report["summary"].get("interrupted"))
    lines.append("")
    verdict = "PASSED" if report["summary"]["passed"] else "FAILED"
    if report["summary"].get("interrupted"):
        verdict = "INTERRUPTED"
    lines.append(f"conformance run {verdict} (exit status {report['summary']['exit_status']})")
    return lines


def _interruption_lines(interrupted: Mapping[str, Any] | None) -> list[str]:
    """What an interrupted run finished, cut short and never ran."""
    if not interrupted:
        return []
    cut, never = interrupted["cut_short"], interrupted["not_run"]
    lines = [
        "",
        f"the run was interrupted ({interrupted['by']}): {interrupted['finished']} case(s) "
        f"finished, {len(cut)} cut short (none of their rules checked), {len(never)} never ran",
    ]
    lines += [f"  cut short: {cid}" for cid in cut]
    lines += [f"  not run: {cid}" for cid in never]
    return lines


# ---- the pytest side --------------------------------------------------------------------------


def _set_property(item: pytest.Item, key: str, value: object) -> None:
    item.user_properties[:] = [(k, v) for k, v in item.user_properties if k != key]
    item.user_properties.append((key, value))


def _carry(item: pytest.Item, report: pytest.TestReport) -> None:
    """Put what the case found on its report, in an attribute of the report's own (it
    travels from a worker with the report, as pytest's user properties do). pytest's user
    properties of the report stay empty unless JUnit's family has room for them in a test
    case (xunit1): xunit2, pytest's default, has none (junit.py names the case instead)."""
    props = [(k, v if k in OWN_PROPERTIES else _figure_value(v)) for k, v in item.user_properties]
    report.conformance_properties = props  # type: ignore[attr-defined]  # ours, on pytest's
    keeps = item.config.getini("junit_family") in JUNIT_FAMILIES_WITH_PROPERTIES
    report.user_properties = props if keeps else []


def carried(report: pytest.TestReport) -> list[tuple[str, object]]:
    """What a case put on its report (`_carry`); nothing for any other report."""
    found = getattr(report, "conformance_properties", None)
    if not isinstance(found, list | tuple):
        return []
    return [(str(pair[0]), pair[1]) for pair in found if isinstance(pair, list | tuple)]


def _case_of(report: pytest.TestReport) -> tuple[list[str], str] | None:
    """A case's requirement IDs and case ID, from what it carried; None for another test."""
    props = dict(carried(report))
    if P_CASE not in props:
        return None
    return str(props.get(P_REQUIREMENTS, "")).split(), str(props[P_CASE])


def _skip_reason(call: pytest.CallInfo[None]) -> str:
    excinfo = call.excinfo
    if excinfo is not None:
        return str(getattr(excinfo.value, "msg", "") or excinfo.value)
    return ""


def _kept(text: str, limit: int = FIELD_LIMIT) -> str:
    """What a report keeps of a text a host may have supplied: secrets removed, then cut to
    `limit` characters (head and tail)."""
    return cut(REGISTRY.redact(text), limit)


def _figure_value(value: object) -> object:
    """A recorded figure as it travels and is reported: JSON scalars as they are (text
    bounded), anything else as its text; secrets removed."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    return _kept(value if isinstance(value, str) else repr(value))


def _clean_report(report: pytest.TestReport) -> None:
    """Remove secrets (and raw control characters) from pytest's own failure text and the
    captured output of a report, before it is printed, sent to the controller or written."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason), kept in that shape
        path, line, reason = longrepr
        report.longrepr = (path, line, _kept(reason))
    elif longrepr is not None:
        text = str(longrepr)
        cleaned = _kept(text, _PYTEST_TEXT)
        if cleaned != text:
            report.longrepr = cleaned
    report.sections = [(title, _kept(body, _PYTEST_TEXT)) for title, body in report.sections]


def _findings(raw: object) -> list[dict[str, str]]:
    if not isinstance(raw, str):
        return []
    try:
        found = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(found, list):
        return []
    return [
        {k: str(v) for k, v in f.items()}
        for f in found
        if isinstance(f, dict) and {"rule", "monitor", "outcome"} <= f.keys()
    ]


@dataclass
class _Accumulating:
    props: dict[str, object] = field(default_factory=dict)
    duration: float = 0.0


def _record_of(item: pytest.Item, outcome: str | None = None) -> CaseRecord:
    return CaseRecord(case_id(item), tuple(requirement_ids(item)), outcome)


class ReportingPlugin:
    """The reporting hooks; registered by `mcp_host_conformance.harness.plugin.hooks` as
    "mcp-host-conformance-reporting". `describe` gives the client's description for the
    summary when it is known (the plugin's `described`; it must not describe anew). Report
    paths that cannot be written stop the run before it starts (pytest's `--junitxml` too
    with `junit`, in a run of the suite)."""

    def __init__(
        self,
        config: pytest.Config,
        describe: Callable[[], Description | None] | None = None,
        *,
        junit: bool = False,
    ) -> None:
        self.config = config
        self.client: Description | None = None
        self._describe = describe
        self.strict = strict_mode(config)
        self.is_worker = hasattr(config, "workerinput")
        self.baseline: Baseline | None = None
        path = option(config, "expected_failures", None)
        if path is not None:
            try:
                self.baseline = load_baseline(path)
            except BaselineError as exc:
                raise pytest.UsageError(f"mcp-host-conformance: {exc}") from None
        unwritable = None if self.is_worker else unwritable_reports(config, junit=junit)
        if unwritable is not None:
            raise pytest.UsageError(f"mcp-host-conformance: {unwritable}")
        if not self.is_worker and getattr(config.option, "xmlpath", None):
            config.pluginmanager.register(
                JunitNames(config, self._client, _case_of), "mcp-host-conformance-junit"
            )
        self.unwritten: dict[str, str] = {}  # option -> why its report could not be written
        self.harness_failed: list[str] = []  # how the harness itself failed, a line each
        self._running: dict[str, _Accumulating] = {}
        self._collected: dict[str, CaseRecord] = {}
        self.report: dict[str, Any] | None = None
        self.cases: list[CaseResult] = []

    def _client(self) -> Description | None:
        if self.client is None and self._describe is not None:
            self.client = self._describe()
        return self.client

    def set_client(self, description: Description) -> None:
        """Name the client under test in the summary and the JSON report."""
        self.client = description

    # -- collection: which cases exist (stale / unknown baseline entries, partial) --

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        if is_case(item):
            self._collected[item.nodeid] = _record_of(item)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        for item in items:
            if is_case(item):
                self._collected[item.nodeid] = _record_of(item, DESELECTED)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        for nodeid in ids:
            self._collected.setdefault(nodeid, CaseRecord(case_id_from_nodeid(nodeid), (), None))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: a worker's collection (deselected cases included)."""
        raw = getattr(node, "workeroutput", {}).get(WORKER_COLLECTED)
        if not isinstance(raw, str):
            return
        for entry in json.loads(raw):
            record = CaseRecord(entry["id"], tuple(entry["requirements"]), entry["outcome"])
            known = self._collected.get(entry["nodeid"])
            if known is None or not known.requirements or record.outcome == DESELECTED:
                self._collected[entry["nodeid"]] = record

    # -- where a verdict is made: classify, rewrite --

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Any:  # pluggy's wrapper protocol: a generator yielding the report
        if not is_case(item):
            return (yield)
        rids = requirement_ids(item)
        cid = case_id(item)
        _set_property(item, P_REQUIREMENTS, " ".join(rids))
        _set_property(item, P_CASE, cid)
        report: pytest.TestReport = yield
        _clean_report(report)
        if hasattr(report, "wasxfail"):  # the case's own xfail marker: leave it to pytest
            _carry(item, report)
            return report
        known = [rid for rid in rids if rid in REQUIREMENTS]
        phase: str | None = None
        if call.excinfo is not None and call.excinfo.errisinstance(KeyboardInterrupt):
            phase = SKIPPED  # the run was stopped (Ctrl-C, SIGTERM): nothing was learnt
            _set_property(item, P_REASON, reason_for(interrupted_by(call.excinfo.value)))
        elif call.excinfo is not None and call.excinfo.errisinstance(HarnessFailure):
            phase = self._harness_failed(report, item, cid, str(call.excinfo.value))
        elif report.failed and report.when == "call" and MONITOR_VERDICT in item.stash:
            phase = self._monitors_only(report, item, cid, item.stash[MONITOR_VERDICT])
        elif report.skipped:
            reason = _skip_reason(call)
            phase = case_outcome("skipped", None, reason)
            _set_property(item, P_REASON, _kept(reason))
        elif report.failed:
            exc = call.excinfo.value if call.excinfo is not None else None
            at_stake = exc.ids if isinstance(exc, ConformanceFailure) else known
            at_stake = [r for r in at_stake if r in REQUIREMENTS]
            phase = case_outcome("failed", severest_level(at_stake))
            self._record_failure(item, call, exc, at_stake)
            phase = self._rewrite_failure(report, item, cid, at_stake, phase)
        elif report.when == "call":
            phase = case_outcome("passed", severest_level(known))
        if report.when == "call" and FINDINGS in item.stash:
            self._record_findings(item, cid, item.stash[FINDINGS])
        if phase is not None:
            previous = dict(item.user_properties).get(P_OUTCOME)
            outcome = worst([phase] + ([str(previous)] if previous else []))
            _set_property(item, P_OUTCOME, outcome)
            report.conformance_outcome = phase  # type: ignore[attr-defined]  # ours, on pytest's
        _carry(item, report)
        return report

    def _harness_failed(
        self, report: pytest.TestReport, item: pytest.Item, cid: str, why: str
    ) -> str:
        """The harness itself failed under the case (its worker died, its mock stopped):
        nothing was learnt of the host, so the case is not run, not failed, and a run that
        passed ends as an internal error."""
        reason = f"harness error: {why}"
        _set_property(item, P_REASON, _kept(reason))
        report.outcome = "skipped"
        report.longrepr = (str(item.path), 0, reason)
        self.harness_failed.append(f"the harness failed under {inline(cid)} (not run): {why}")
        return SKIPPED

    def _record_findings(self, item: pytest.Item, cid: str, findings: list[Finding]) -> bool:
        """Keep the monitors' findings with their outcomes (a rule's level, the baseline);
        whether any of them fails the run."""
        recorded = []
        for finding in findings:
            level = severest_level([finding.rule])
            outcome = case_outcome("failed", level)
            if (
                outcome in (FAILED, WARNING)
                and self.baseline
                and self.baseline.covers(cid, [finding.rule])
            ):
                outcome = EXPECTED_FAILURE
            recorded.append(
                {
                    **{k: _kept(v) for k, v in finding.to_json().items()},
                    "outcome": outcome,
                }
            )
        _set_property(item, P_MONITORS, json.dumps(recorded, ensure_ascii=False))
        return any(
            r["outcome"] == FAILED or (r["outcome"] == WARNING and self.strict) for r in recorded
        )

    def _monitors_only(
        self, report: pytest.TestReport, item: pytest.Item, cid: str, exc: MonitorFailure
    ) -> str:
        """The case's own checks passed (or it ended skipped) and monitors saw other rules
        broken: the case keeps its own outcome; the run fails only if a finding does."""
        if exc.reason:
            _set_property(item, P_REASON, _kept(exc.reason))
        if not self._record_findings(item, cid, exc.findings):
            if exc.own == PASSED:
                report.outcome, report.longrepr = "passed", None
            else:
                report.outcome = "skipped"
                report.longrepr = (str(item.path), 0, _kept(exc.reason))
        return exc.own

    def _record_failure(
        self,
        item: pytest.Item,
        call: pytest.CallInfo[None],
        exc: BaseException | None,
        at_stake: list[str],
    ) -> None:
        _set_property(item, P_AT_STAKE, " ".join(at_stake))
        _set_property(item, P_PRECONDITION, "yes" if isinstance(exc, PreconditionFailure) else "")
        if isinstance(exc, ConformanceFailure):
            _set_property(item, P_EXPECTED, _kept(exc.expected))
            _set_property(item, P_ACTUAL, _kept(exc.actual))
            _set_property(item, P_MESSAGE, _kept(str(exc), MESSAGE_LIMIT))
        elif call.excinfo is not None:
            text = _kept(call.excinfo.exconly(), MESSAGE_LIMIT)
            _set_property(item, P_ACTUAL, cut(text.splitlines()[0]) if text else "")
            _set_property(item, P_MESSAGE, cut(f"{call.when}: {text}", MESSAGE_LIMIT))

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
            message = str(dict(item.user_properties).get(P_MESSAGE, ""))
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
        props = dict(carried(report))
        if P_CASE not in props:
            return
        acc = self._running.setdefault(report.nodeid, _Accumulating())
        acc.props.update(props)
        acc.duration += report.duration

    def _results(self) -> list[CaseResult]:
        interrupted = self.config.stash.get(INTERRUPTED_BY, None)
        results = []
        for nodeid, acc in self._running.items():
            p = acc.props

            def text(key: str, props: Mapping[str, object] = p) -> str:
                value = props.get(key, "")
                return "" if value is None else str(value)

            outcome, reason = text(P_OUTCOME), text(P_REASON)
            if not outcome and interrupted is not None:  # a verdict the interruption cut off
                outcome, reason = SKIPPED, reason_for(interrupted)
            results.append(
                CaseResult(
                    id=text(P_CASE),
                    nodeid=nodeid,
                    requirements=text(P_REQUIREMENTS).split(),
                    # a case whose reports stopped short (a crashed worker) counts as failed
                    outcome=outcome or FAILED,
                    expected=text(P_EXPECTED),
                    actual=text(P_ACTUAL),
                    message=text(P_MESSAGE),
                    duration=round(acc.duration, 6),
                    reason=reason,
                    failed_requirements=text(P_AT_STAKE).split(),
                    precondition=bool(text(P_PRECONDITION)),
                    figures={k: v for k, v in p.items() if k not in OWN_PROPERTIES},
                    monitors=_findings(p.get(P_MONITORS)),
                )
            )
        return results

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            workeroutput: dict[str, Any] = getattr(self.config, "workeroutput", {})
            workeroutput[WORKER_COLLECTED] = json.dumps(
                [
                    {
                        "nodeid": nodeid,
                        "id": r.id,
                        "requirements": list(r.requirements),
                        "outcome": r.outcome,
                    }
                    for nodeid, r in self._collected.items()
                ]
            )
            return
        self.cases = self._results()
        collected = dict(self._collected)
        for case in self.cases:
            collected[case.nodeid] = CaseRecord(case.id, tuple(case.requirements), case.outcome)
        # a monitor's finding is what the case said of that rule too, for the audit
        heard = [
            CaseRecord(case.id, (finding["rule"],), finding["outcome"])
            for case in self.cases
            for finding in case.monitors
        ]
        if name_server_stopped():
            self.harness_failed.append(
                "the sealed network's name server stopped during the run: the names cases "
                "looked up after that went unanswered (their cases say not observed)"
            )
        if self.harness_failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        stale: list[str] = []
        unknown: list[str] = []
        if self.baseline is not None:
            stale, unknown = audit(self.baseline, [*collected.values(), *heard], REQUIREMENTS)
            if (stale or unknown) and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.cases and self.baseline is None:
            return  # not a conformance run: stay silent
        self._client()
        self.report = build_report(
            self.cases,
            client=self.client,
            strict=self.strict,
            exit_status=int(session.exitstatus),
            collected=self._collected,
            baseline=self.baseline,
            stale=stale,
            unknown=unknown,
            environment=observe_network().to_json(),
            interrupted_by=self.config.stash.get(INTERRUPTED_BY, None),
        )
        path = option(self.config, "report_json", None)
        if path:
            self._write(session, "--report-json", path, json.dumps(self.report, indent=2) + "\n")
        page = option(self.config, "report_html", None)
        if page:
            self._write(session, "--report-html", page, render_html(self.report, report_json=path))
        summary = option(self.config, "report_markdown", None)
        if summary:
            text = render_markdown(self.report, report_json=path, report_html=page)
            self._write(session, "--report-markdown", summary, text)

    def _write(self, session: pytest.Session, flag: str, path: str, text: str) -> None:
        """Write a report; if it cannot be (a full disk), one line for the summary, and a run
        that passed ends as the harness's internal error (what it was asked for is missing,
        and not for anything the host did); the reports still to come and the summary say
        that exit status, not the one the run had before."""
        problem = write_report(path, text)
        if problem is None:
            return
        self.unwritten[flag] = (
            f"mcp-host-conformance: {flag} {inline(path)}: not written: {problem}; the run fails"
        )
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            if self.report is not None:
                self.report["summary"].update(passed=False, exit_status=int(session.exitstatus))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or self.report is None:
            return
        terminalreporter.section("mcp-host-conformance")
        for text in render_summary(self.report, self.cases):
            terminalreporter.write_line(text)
        path = option(self.config, "report_json", None)
        if path and "--report-json" not in self.unwritten:
            terminalreporter.write_line(f"JSON report: {inline(path)}")
        page = option(self.config, "report_html", None)
        if page and "--report-html" not in self.unwritten:
            terminalreporter.write_line(f"HTML report: {inline(page)}")
        summary = option(self.config, "report_markdown", None)
        if summary and "--report-markdown" not in self.unwritten:
            terminalreporter.write_line(f"Markdown summary: {inline(summary)}")
        for line in self.harness_failed:
            terminalreporter.write_line(f"mcp-host-conformance: {line}", red=True)
        for line in self.unwritten.values():
            terminalreporter.write_line(line, red=True)
