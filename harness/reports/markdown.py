"""The Markdown summary of one run (`--report-markdown PATH`), for any CI that shows Markdown
(a GitHub job summary: `cat PATH >> $GITHUB_STEP_SUMMARY`).

Strategy: the HTML page's first screen as text, a pure function of the JSON report like the
page (`render_markdown(report)`): the verdict; each failed MUST rule with its full text and
the case that showed it (its expected and actual); the SHOULD warnings the same way; the
baseline's state; the next step. Rules are grouped by cause as on the page
(`root_causes`). Everything a host supplied is one line, bounded, inside a code span whose
fence no backtick in it can close, so no host text becomes Markdown or HTML; the rules'
own text comes from the catalog. The whole is bounded (a job summary takes at most 1 MiB):
at most `RULES_SHOWN` rules a section, the rest counted and left to the HTML report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from mcp_host_conformance.harness.reports.root_causes import (
    CASE,
    MONITOR,
    PRECONDITION,
    RuleGroup,
    Showing,
    label,
    next_step,
    rule_groups,
    statement,
)
from mcp_host_conformance.harness.verdicts.safe_text import LABEL_LIMIT, inline

__all__ = ["RULES_SHOWN", "VALUE_SHOWN", "render_markdown"]

RULES_SHOWN: Final = 40  # rules listed in one section
VALUE_SHOWN: Final = 300  # characters of one expected or actual value
_SECTIONS: Final = (
    ("failed", "Failed MUST rules"),
    ("warning", "SHOULD warnings (fail the run only with --strict)"),
)
_BACKTICKS = re.compile(r"`+")
_CATALOG_CODE = re.compile(r"(`[^`]*`)")


def _code(text: object, limit: int = VALUE_SHOWN) -> str:
    """`text` as one inline code span: one line, bounded, controls shown as escapes, fenced
    by more backticks than any run in it (CommonMark), so nothing in it is read as Markdown."""
    shown = inline(text, limit)
    if not shown:
        return "(empty)"
    longest = max((len(run) for run in _BACKTICKS.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {shown} {fence}"


def _catalog(text: str) -> str:
    """A rule's text from the catalog: its code spans kept, `<` and `&` outside them escaped
    (GitHub reads raw HTML in Markdown)."""
    parts = _CATALOG_CODE.split(text)
    return "".join(
        part if index % 2 else part.replace("&", "&amp;").replace("<", "&lt;")
        for index, part in enumerate(parts)
    )


def _example(group: RuleGroup) -> Showing:
    """The showing that best shows the rule: a case that failed on it, else one it stopped,
    else a monitor's finding."""
    for kind in (CASE, PRECONDITION, MONITOR):
        for showing in group.showings:
            if showing.kind == kind:
                return showing
    return group.showings[0]


def _how(showing: Showing) -> str:
    if showing.kind == PRECONDITION:
        own = " ".join(showing.case_rules) or "other rules"
        return f" (a case of {own}, stopped at this rule as its precondition)"
    if showing.kind == MONITOR:
        return f" (monitor {_code(showing.monitor, LABEL_LIMIT)})"
    return ""


def _rule(group: RuleGroup) -> list[str]:
    rule, _ = statement(group.text)
    cases = group.cases
    shown = _example(group)
    others = len(cases) - 1
    more = f" and {others} other case{'s' if others != 1 else ''}" if others > 0 else ""
    lines = [
        f"- **{group.rule_id or 'no rule'}** ({group.level}) {_catalog(rule)}",
        f"  - shown by {_code(shown.case_id, LABEL_LIMIT)}{_how(shown)}{more}",
    ]
    if shown.expected or shown.actual:
        lines.append(f"  - expected: {_code(shown.expected)}")
        lines.append(f"  - actual: {_code(shown.actual)}")
    elif shown.message:
        lines.append(f"  - what happened: {_code(shown.message)}")
    return lines


def _section(title: str, groups: list[RuleGroup]) -> list[str]:
    lines = ["", f"### {title}: {len(groups)}", ""]
    for group in groups[:RULES_SHOWN]:
        lines += _rule(group)
    hidden = len(groups) - RULES_SHOWN
    if hidden > 0:
        lines.append(f"- … and {hidden} more rules (the HTML report lists them all)")
    return lines


def _baseline(report: Mapping[str, Any]) -> list[str]:
    baseline = report.get("baseline")
    if not baseline:
        return ["", "### Baseline", "", "None (`--expected-failures`): every failure counts."]
    expected = baseline.get("expected_failures") or []
    stale = baseline.get("stale") or []
    unknown = baseline.get("unknown") or []
    lines = [
        "",
        "### Baseline",
        "",
        f"{_code(baseline.get('path'), LABEL_LIMIT)}: {len(expected)} expected "
        f"failure{'s' if len(expected) != 1 else ''} (listed, so they pass)"
        + ("; up to date." if not (stale or unknown) else "."),
    ]
    excused = [g.rule_id for g in rule_groups(report, "expected_failure") if g.rule_id]
    if excused:
        lines.append("- the rules it excuses in this run: " + ", ".join(excused[:RULES_SHOWN]))
    if stale:
        lines.append("- stale (now passes; remove it): " + ", ".join(_code(s) for s in stale))
    if unknown:
        lines.append(
            "- unknown (no such requirement or case): " + ", ".join(_code(u) for u in unknown)
        )
    return lines


def render_markdown(
    report: Mapping[str, Any],
    *,
    report_json: str | None = None,
    report_html: str | None = None,
) -> str:
    """The summary for a JSON report (schema mcp-host-conformance-report/1). `report_json`,
    `report_html`: where the run wrote those reports, named in the next step and at the end."""
    client = report.get("client") or {}
    summary = report.get("summary") or {}
    name = f"{client.get('name', 'unknown client')} {client.get('version', '')}".strip()
    groups = {outcome: rule_groups(report, outcome) for outcome, _ in _SECTIONS}
    passed = bool(summary.get("passed"))
    found = []
    for outcome, noun, verb in (("failed", "MUST", "broken"), ("warning", "SHOULD", "warned")):
        rules = groups[outcome]
        if rules:
            cases = len({c for g in rules for c in g.cases})
            found.append(
                f"{len(rules)} {noun} rule{'s' if len(rules) != 1 else ''} {verb}, seen in "
                f"{cases} case{'s' if cases != 1 else ''}"
            )
    lines = [
        f"## MCP host conformance: {_code(name, LABEL_LIMIT)}",
        "",
        f"**{'PASSED' if passed else 'FAILED'}**: {'; '.join(found) or 'no rule broken'} "
        f"(exit status {summary.get('exit_status')}{', strict' if summary.get('strict') else ''})",
    ]
    for outcome, title in _SECTIONS:
        if groups[outcome]:
            lines += _section(title, groups[outcome])
    lines += _baseline(report)
    step = next_step(report, report_json)
    lines += ["", "### Next step", "", step.text]
    if step.commands:
        lines += ["", "```sh", *step.commands, "```"]
    counts = summary.get("cases") or {}
    facts = [
        "cases: " + (", ".join(f"{n} {label(str(k))}" for k, n in counts.items()) or "none ran"),
        "profiles claimed: "
        + (", ".join(_code(p, LABEL_LIMIT) for p in client.get("profiles") or []) or "none"),
    ]
    network = (report.get("environment") or {}).get("network")
    if network:
        facts.append(f"network: {_code(network, LABEL_LIMIT)}")
    if report_html:
        facts.append(f"every case and its evidence: the HTML report {_code(report_html)}")
    lines += ["", "; ".join(facts) + "."]
    return "\n".join(lines) + "\n"
