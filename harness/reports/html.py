"""The HTML report of one run (`--report-html PATH`): one self-contained page, read in ten
seconds.

Strategy: a pure function of the JSON report (`render_html(report)`), so the page and the
JSON can never disagree. The first screen answers the two questions a reader opens it with:
did the host pass, and which rules did it break. So it starts with the verdict, the next
step (the baseline command), a filter, and the failed MUST rules grouped by the rule that
caused them (`root_causes`: a case that stopped at another rule's precondition is folded
under that rule and labelled so), each with its full text; a rule's cases and their evidence
(expected, actual, a monitor's finding) are one click away in a `<details>`. SHOULD
warnings, the baseline's expected failures, partial rules, the table by area and the
environment follow below. What was taken from pytest-html and Allure: docs/report-schema.md.

Everything in it comes from the report, and much of that from the host under test (its
statuses, outputs, error messages), so every text is escaped, long values are shown as head
and tail around a visible marker (`safe_text.cut`), and the page loads nothing: a
Content-Security-Policy allows no source at all but its own inline style and the one inline
script whose hash it names (the filter, a few lines that work offline); host text can never
become a script.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from mcp_host_conformance.harness.reports.root_causes import (
    MONITOR,
    PRECONDITION,
    RuleGroup,
    Showing,
    label,
    next_step,
    rule_groups,
    statement,
)
from mcp_host_conformance.harness.verdicts.safe_text import cut, visible

__all__ = ["SHOWN", "render_html"]

# Characters of one value shown at once; a longer value shows its head and tail around the
# marker, and the whole of what the report kept one click further.
SHOWN: Final = 1200
# Findings of one monitor in one case shown (a monitor can see a rule broken for every tool).
_PER_CASE: Final = 8

_SECTIONS: Final = (
    ("failed", "Failed MUST rules", "fail the run"),
    ("warning", "SHOULD warnings", "fail the run only with --strict"),
    ("expected_failure", "Expected failures", "listed in the baseline: they pass"),
)
_CUT_MARK = re.compile(r" … \[[\d,]+ characters cut\] … ")
_CODE = re.compile(r"`([^`]+)`")

_STYLE: Final = """
body { font: 15px/1.4 system-ui, sans-serif; margin: 0 auto; padding: .8em 1.2em;
  max-width: 76em; color: #1d1d1f; }
h1 { font-size: 1.25em; margin: .2em 0; } h2 { font-size: 1.1em; margin: 1.2em 0 .4em; }
#verdict { font-size: 1.15em; margin: .3em 0; }
.passed { color: #146c2e; } .failed { color: #b3261e; } .warning { color: #8a5a00; }
.expected_failure { color: #555; }
.facts { color: #555; margin: .2em 0; font-size: .92em; }
#next-step { background: #f4f6fa; border-left: 4px solid #3b5bdb; padding: .35em .8em;
  margin: .5em 0; }
#next-step p { margin: .1em 0; } #next-step pre { margin: .2em 0; }
#filter { margin: .5em 0; display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
#filter input[type=search] { font: inherit; padding: .15em .4em; width: 22em; }
details.rule { border: 1px solid #ddd; border-radius: 4px; margin: .25em 0;
  padding: .2em .6em; }
details.rule > summary { cursor: pointer; }
details.rule[open] > summary { margin-bottom: .3em; }
.rid { font-family: ui-monospace, monospace; font-weight: bold; }
.level { font-size: .8em; border: 1px solid currentColor; border-radius: 3px;
  padding: 0 .25em; }
.count { color: #555; font-size: .9em; white-space: nowrap; }
ol.cases { margin: 0; padding-left: 1.4em; }
ol.cases > li { margin: .4em 0; }
.cid { font-family: ui-monospace, monospace; }
.tag { font-size: .8em; background: #eee; border-radius: 3px; padding: 0 .3em; }
.tag.precondition { background: #fff1cc; } .tag.monitor { background: #e7f0ff; }
ul.seen { margin: 0; padding-left: 1.1em; }
dl.evidence { margin: .2em 0 0; display: grid; grid-template-columns: max-content 1fr;
  gap: .1em .8em; }
dl.evidence dt { font-weight: bold; color: #444; } dl.evidence dd { margin: 0; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-size: .9em; }
mark.cut { background: #ffe08a; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: .2em .5em; }
td.n { text-align: right; } th { text-align: left; }
.hidden { display: none; } code { font-size: .92em; }
.decision { color: #444; margin: .1em 0 .3em; font-size: .92em; }
"""

# The filter: a text box that keeps the rules, and within a rule the cases, whose text holds
# what is typed; a checkbox per section. Only the page's own nodes are read; it is written
# here once, so its hash (named by the policy) never changes with the report.
_SCRIPT: Final = """
(function () {
  var box = document.getElementById("filter");
  var text = document.getElementById("filter-text");
  box.hidden = false;
  function apply() {
    var q = text.value.trim().toLowerCase();
    document.querySelectorAll("details.rule").forEach(function (rule) {
      var head = rule.querySelector("summary").textContent.toLowerCase();
      var any = false;
      rule.querySelectorAll("ol.cases > li").forEach(function (item) {
        var hit = !q || head.indexOf(q) >= 0 || item.textContent.toLowerCase().indexOf(q) >= 0;
        item.classList.toggle("hidden", !hit);
        any = any || hit;
      });
      rule.classList.toggle("hidden", !(any || !q || head.indexOf(q) >= 0));
    });
    document.querySelectorAll("#filter input[type=checkbox]").forEach(function (c) {
      var section = document.getElementById(c.value);
      if (section) { section.classList.toggle("hidden", !c.checked); }
    });
  }
  box.addEventListener("input", apply);
  box.addEventListener("change", apply);
})();
"""
_SCRIPT_HASH: Final = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _value(text: str) -> str:
    """A value as shown: escaped, its controls (but newline and tab) shown as escapes, at
    most SHOWN characters (head and tail), every cut marked visibly; when cut here, the
    whole kept text one click further."""
    text = visible(text)
    shown = _marked(cut(text, SHOWN))
    if len(text) <= SHOWN:
        return f"<pre>{shown}</pre>"
    return (
        f"<pre>{shown}</pre><details><summary>all {len(text):,} characters the report "
        f"kept</summary><pre>{_marked(text)}</pre></details>"
    )


def _catalog(text: str) -> str:
    """A rule's text from the catalog, escaped, its `code` spans set as code."""
    return _CODE.sub(r"<code>\1</code>", _e(text))


def _marked(text: str) -> str:
    parts = _CUT_MARK.split(text)
    marks = _CUT_MARK.findall(text)
    out = [_e(parts[0])]
    for mark, part in zip(marks, parts[1:], strict=True):
        out.append(f'<mark class="cut">{_e(mark)}</mark>{_e(part)}')
    return "".join(out)


def _client_name(report: Mapping[str, Any]) -> str:
    client = report.get("client") or {}
    return f"{client.get('name', 'unknown client')} {client.get('version', '')}".strip()


def _verdict(report: Mapping[str, Any], groups: Mapping[str, list[RuleGroup]]) -> str:
    summary = report.get("summary") or {}
    passed = bool(summary.get("passed"))
    found = []
    for outcome, noun in (("failed", "MUST rule"), ("warning", "SHOULD rule")):
        rules = groups.get(outcome) or []
        if rules:
            cases = {c for g in rules for c in g.cases}
            verb = "broken" if outcome == "failed" else "warned"
            found.append(
                f"{len(rules)} {noun}{'s' if len(rules) != 1 else ''} {verb}, seen in "
                f"{len(cases)} case{'s' if len(cases) != 1 else ''}"
            )
    expected = groups.get("expected_failure") or []
    if expected:
        found.append(
            f"{len(expected)} rule{'s' if len(expected) != 1 else ''} failing as the baseline "
            "expects"
        )
    baseline = report.get("baseline") or {}
    stale = len(baseline.get("stale") or ()) + len(baseline.get("unknown") or ())
    if stale:
        found.append(f"{stale} baseline entr{'ies' if stale != 1 else 'y'} stale or unknown")
    what = "; ".join(found) or "no rule broken"
    strict = ", strict" if summary.get("strict") else ""
    interrupted = summary.get("interrupted") or {}
    verdict = "INTERRUPTED" if interrupted else "PASSED" if passed else "FAILED"
    line = (
        f'<p id="verdict" class="{"passed" if passed else "failed"}"><strong>'
        f"conformance run {verdict}</strong>: {_e(what)} "
        f'<span class="facts">(exit status {_e(summary.get("exit_status"))}{strict})</span></p>'
    )
    return line + _interruption(interrupted) if interrupted else line


def _interruption(interrupted: Mapping[str, Any]) -> str:
    """What an interrupted run finished, cut short (none of their rules checked) and never
    ran: the verdict is on what finished only."""
    cut, never = interrupted.get("cut_short") or [], interrupted.get("not_run") or []
    items = [f"<li>cut short: {_e(cid)}</li>" for cid in cut]
    items += [f"<li>not run: {_e(cid)}</li>" for cid in never]
    return (
        f'<details id="interrupted" open><summary>the run was interrupted '
        f"({_e(interrupted.get('by'))}): {_e(interrupted.get('finished'))} case(s) finished, "
        f"{len(cut)} cut short (none of their rules checked), {len(never)} never ran"
        f"</summary><ul>{''.join(items)}</ul></details>"
    )


def _facts(report: Mapping[str, Any]) -> str:
    client = report.get("client") or {}
    profiles = ", ".join(str(p) for p in client.get("profiles") or []) or "none"
    environment = report.get("environment") or {}
    facts = [f"profiles claimed: {_e(profiles)}"]
    network = environment.get("network")
    if network:
        reason = environment.get("network_reason")
        facts.append(f"network: {_e(network)}{f' ({_e(reason)})' if reason else ''}")
    baseline = report.get("baseline") or {}
    if baseline:
        facts.append(f"baseline: {_e(baseline.get('path'))}")
    counts = (report.get("summary") or {}).get("cases") or {}
    listed = ", ".join(f"{n} {label(str(k))}" for k, n in counts.items())
    facts.append(f"cases: {_e(listed or 'none ran')}")
    return f'<p class="facts">{" · ".join(facts)}</p>'


def _next_step(report: Mapping[str, Any], report_json: str | None) -> str:
    step = next_step(report, report_json)
    commands = "".join(f"<pre>{_e(c)}</pre>" for c in step.commands)
    return (
        f'<section id="next-step"><p><strong>Next step:</strong> {_e(step.text)}</p>'
        f"{commands}</section>"
    )


def _filter(groups: Mapping[str, list[RuleGroup]]) -> str:
    boxes = []
    for outcome, title, _ in _SECTIONS:
        rules = groups.get(outcome) or []
        if rules:
            boxes.append(
                f'<label><input type="checkbox" value="{outcome}" checked> '
                f"{_e(title)} ({len(rules)})</label>"
            )
    return (
        '<form id="filter" hidden><input type="search" id="filter-text" '
        'placeholder="filter: a rule, a case, any text" aria-label="filter the rules and cases">'
        f"{''.join(boxes)}</form>"
    )


def _count(group: RuleGroup) -> str:
    cases = group.cases
    parts = [f"{len(cases)} case{'s' if len(cases) != 1 else ''}"]
    stopped = group.count(PRECONDITION)
    if stopped:
        parts.append(f"{stopped} of them stopped at it as a precondition")
    seen = group.count(MONITOR)
    if seen:
        parts.append(f"{seen} seen by a monitor")
    return "; ".join(parts)


def _evidence(expected: str, actual: str, message: str = "") -> str:
    if expected or actual:
        rows = (
            f"<dt>expected</dt><dd>{_value(expected)}</dd><dt>actual</dt><dd>{_value(actual)}</dd>"
        )
    else:
        rows = f"<dt>what happened</dt><dd>{_value(message)}</dd>"
    return f'<dl class="evidence">{rows}</dl>'


def _failure(showing: Showing) -> str:
    if showing.kind == PRECONDITION:
        own = " ".join(showing.case_rules) or "other rules"
        tag = (
            f'<span class="tag precondition">precondition</span> a case of {_e(own)}, '
            "stopped before its own check because this rule was broken first"
        )
    else:
        tag = '<span class="tag">failed on this rule</span>'
    evidence = _evidence(showing.expected, showing.actual, showing.message)
    return f'<div class="showing">{tag}{evidence}</div>'


def _findings(showings: list[Showing]) -> str:
    """A monitor's findings of the rule in one case: what it expected once, each thing it
    saw (at most _PER_CASE of them)."""
    first = showings[0]
    seen = "".join(f"<li>{_value(s.actual)}</li>" for s in showings[:_PER_CASE])
    more = len(showings) - _PER_CASE
    if more > 0:
        seen += f'<li class="facts">… and {more} more</li>'
    return (
        f'<div class="showing"><span class="tag monitor">monitor {_e(first.monitor)}</span>'
        f'<dl class="evidence"><dt>expected</dt><dd>{_value(first.expected)}</dd>'
        f'<dt>actual</dt><dd><ul class="seen">{seen}</ul></dd></dl></div>'
    )


def _case(cid: str, showings: list[Showing]) -> str:
    parts = [_failure(s) for s in showings if s.kind != MONITOR]
    by_monitor: dict[tuple[str, str], list[Showing]] = {}
    for s in showings:
        if s.kind == MONITOR:
            by_monitor.setdefault((s.monitor, s.expected), []).append(s)
    parts += [_findings(found) for found in by_monitor.values()]
    return f'<li><span class="cid">{_e(cid)}</span>{"".join(parts)}</li>'


def _rule(group: RuleGroup) -> str:
    by_case: dict[str, list[Showing]] = {}
    for showing in group.showings:
        by_case.setdefault(showing.case_id, []).append(showing)
    items = "".join(_case(cid, showings) for cid, showings in by_case.items())
    rule, decision = statement(group.text)
    decided = f'<p class="decision">Decision: {_catalog(decision)}</p>' if decision else ""
    return (
        f'<details class="rule" id="rule-{_e(group.outcome)}-{_e(group.rule_id)}">'
        f'<summary><span class="rid">{_e(group.rule_id or "no rule")}</span> '
        f'<span class="level">{_e(group.level)}</span> {_catalog(rule)} '
        f'<span class="count">({_e(_count(group))})</span></summary>'
        f'{decided}<ol class="cases">{items}</ol></details>'
    )


def _sections(groups: Mapping[str, list[RuleGroup]]) -> list[str]:
    out = []
    for outcome, title, meaning in _SECTIONS:
        rules = groups.get(outcome) or []
        if not rules:
            continue
        out.append(
            f'<section id="{outcome}"><h2 class="{outcome}">{_e(title)}: {len(rules)} '
            f'<span class="facts">({_e(meaning)}; the rule shown by the most cases first)'
            "</span></h2>"
        )
        out += [_rule(group) for group in rules]
        out.append("</section>")
    return out


def _baseline(report: Mapping[str, Any]) -> list[str]:
    baseline = report.get("baseline") or {}
    stale, unknown = baseline.get("stale") or [], baseline.get("unknown") or []
    if not (stale or unknown):
        return []
    out = [f'<section id="baseline"><h2>Baseline {_e(baseline.get("path"))}</h2><ul>']
    out += [f"<li>stale (now passes; remove it): {_e(s)}</li>" for s in stale]
    out += [f"<li>unknown (no such requirement or case): {_e(u)}</li>" for u in unknown]
    out.append("</ul></section>")
    return out


def _partial(requirements: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    for outcome, title, why in (
        (
            "partial",
            "Partial rules",
            "Not passed: some of their cases did not run, do not apply to this host or could "
            "not observe the rule here.",
        ),
        (
            "not_observed",
            "Rules not observed",
            "Not passed: they apply to this host, but no case could observe them here.",
        ),
    ):
        rows = [
            f'<li><span class="rid">{_e(rid)}</span>: {_e(entry.get("reason"))}</li>'
            for rid, entry in requirements.items()
            if entry.get("outcome") == outcome
        ]
        if rows:
            out += [
                f'<section id="{outcome}"><h2>{title}</h2><p class="facts">{why}</p><ul>',
                *rows,
                "</ul></section>",
            ]
    return out


def _by_area(
    requirements: Mapping[str, Mapping[str, Any]],
) -> tuple[list[str], dict[str, Counter[str]]]:
    order = ["passed", "partial", "failed", "warning", "info", "not_applicable", "not_observed"]
    areas: dict[str, Counter[str]] = {}
    for entry in requirements.values():
        areas.setdefault(str(entry.get("area")), Counter())[str(entry.get("outcome"))] += 1
    seen = {o for c in areas.values() for o in c}
    columns = [o for o in order if o in seen] + sorted(seen - set(order))
    return columns, areas


def _summary_table(requirements: Mapping[str, Mapping[str, Any]]) -> list[str]:
    columns, areas = _by_area(requirements)
    head = "".join(f"<th>{_e(label(c))}</th>" for c in columns)
    rows = [
        "<h2>Requirements by area</h2>",
        f'<table id="summary"><thead><tr><th>area</th>{head}</tr></thead><tbody>',
    ]
    total: Counter[str] = Counter()
    for area, counts in areas.items():
        total.update(counts)
        cells = "".join(f'<td class="n">{counts[c]}</td>' for c in columns)
        rows.append(f"<tr><th>{_e(area)}</th>{cells}</tr>")
    cells = "".join(f'<td class="n">{total[c]}</td>' for c in columns)
    rows.append(f"<tr><th>total</th>{cells}</tr></tbody></table>")
    return rows


def _environment(report: Mapping[str, Any]) -> list[str]:
    client = report.get("client") or {}
    summary = report.get("summary") or {}
    environment = report.get("environment") or {}
    rows: list[tuple[str, object]] = [
        ("client", client.get("name")),
        ("version", client.get("version")),
        ("profiles claimed", ", ".join(str(p) for p in client.get("profiles") or []) or "none"),
        ("strict", "yes" if summary.get("strict") else "no"),
        ("exit status", summary.get("exit_status")),
        ("report schema", report.get("schema")),
    ]
    rows += [
        (f"network: {key}", value)
        for key, value in environment.items()
        if isinstance(value, str | int | float | bool)
    ]
    cells = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return [f'<h2>Environment</h2><table id="environment">{cells}</table>']


def render_html(report: Mapping[str, Any], *, report_json: str | None = None) -> str:
    """The whole page for a JSON report (schema mcp-host-conformance-report/1).
    `report_json`: where the run wrote that report, named in the next step's command."""
    name = _client_name(report)
    requirements = report.get("requirements") or {}
    groups = {outcome: rule_groups(report, outcome) for outcome, _, _ in _SECTIONS}
    body: list[str] = [
        f"<header><h1>MCP host conformance: {_e(name)}</h1>",
        _verdict(report, groups),
        _facts(report),
        "</header>",
        _next_step(report, report_json),
        _filter(groups),
        *_sections(groups),
        *_baseline(report),
        *_partial(requirements),
        *_summary_table(requirements),
        *_environment(report),
    ]
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'"
    head = (
        '<meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>MCP host conformance: {_e(name)}</title><style>{_STYLE}</style>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head><body>\n'
        + "\n".join(body)
        + f"\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )
