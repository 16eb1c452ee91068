"""The HTML report of one run (`--report-html PATH`): one self-contained page.

Strategy: a pure function of the JSON report (`render_html(report)`), so the page and the
JSON can never disagree. It shows the client and the verdict, a table of requirements by
area, and every failure, warning and expected failure with the rule's text, what was
expected and what the host did. Everything in it comes from the report, and much of that
from the host under test (its statuses, outputs, error messages), so every text is
escaped, the page loads nothing and runs nothing (no script, no external resource, and a
Content-Security-Policy that forbids both), and it reads the same in any browser.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["render_html"]

_ORDER = (
    "passed",
    "failed",
    "warning",
    "info",
    "not_applicable",
    "not_observed",
    "partial",
    "expected_failure",
    "skipped",
    "uncovered",
)
_HEADINGS = {
    "not_applicable": "not applicable",
    "not_observed": "not observed",
    "expected_failure": "expected failure",
}
_SECTIONS = (
    ("failed", "Failures (MUST)"),
    ("warning", "Warnings (SHOULD; fail the run with --strict)"),
    ("expected_failure", "Expected failures (listed in the baseline)"),
)
_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: .25em .6em; }
td.n { text-align: right; } .verdict-passed { color: #146c2e; } .verdict-failed { color: #b3261e; }
.case { border: 1px solid #ddd; border-radius: 4px; margin: .8em 0; padding: .6em .9em; }
.case h3 { font-size: 1em; margin: 0 0 .4em; font-family: monospace; }
.rule { color: #555; } dt { font-weight: bold; } dd { margin: 0 0 .4em 1em; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-size: .92em; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _by_area(
    requirements: Mapping[str, Mapping[str, Any]],
) -> tuple[list[str], dict[str, Counter[str]]]:
    areas: dict[str, Counter[str]] = {}
    for entry in requirements.values():
        areas.setdefault(str(entry.get("area")), Counter())[str(entry.get("outcome"))] += 1
    columns = [o for o in _ORDER if any(c[o] for c in areas.values())]
    columns += sorted({o for c in areas.values() for o in c} - set(columns))
    return columns, areas


def _summary_table(requirements: Mapping[str, Mapping[str, Any]]) -> list[str]:
    columns, areas = _by_area(requirements)
    head = "".join(f"<th>{_e(_HEADINGS.get(c, c))}</th>" for c in columns)
    rows = [f'<table id="summary"><thead><tr><th>area</th>{head}</tr></thead><tbody>']
    total: Counter[str] = Counter()
    for area, counts in areas.items():
        total.update(counts)
        cells = "".join(f'<td class="n">{counts[c]}</td>' for c in columns)
        rows.append(f"<tr><th>{_e(area)}</th>{cells}</tr>")
    cells = "".join(f'<td class="n">{total[c]}</td>' for c in columns)
    rows.append(f"<tr><th>total</th>{cells}</tr></tbody></table>")
    return rows


def _rules(ids: Iterable[str], requirements: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for rid in ids:
        entry = requirements.get(rid) or {}
        out.append(
            f'<p class="rule"><strong>{_e(rid)}</strong> ({_e(entry.get("level", "?"))}): '
            f"{_e(entry.get('rule', ''))}</p>"
        )
    return out


def _case(case: Mapping[str, Any], requirements: Mapping[str, Mapping[str, Any]]) -> list[str]:
    ids = [str(r) for r in case.get("requirements", [])]
    parts = [
        f'<section class="case" id="case-{_e(case.get("id"))}">',
        f"<h3>{_e(case.get('id'))} [{_e(' '.join(ids))}]</h3>",
        *_rules(ids, requirements),
        "<dl>",
    ]
    expected, actual = case.get("expected"), case.get("actual")
    if expected or actual:
        parts.append(f"<dt>expected</dt><dd><pre>{_e(expected)}</pre></dd>")
        parts.append(f"<dt>actual</dt><dd><pre>{_e(actual)}</pre></dd>")
    else:
        parts.append(f"<dt>what happened</dt><dd><pre>{_e(case.get('message'))}</pre></dd>")
    parts += ["</dl>", "</section>"]
    return parts


def _interruption(interrupted: Mapping[str, Any]) -> list[str]:
    cut, never = interrupted.get("cut_short") or [], interrupted.get("not_run") or []
    parts = [
        f'<p id="interrupted">the run was interrupted ({_e(interrupted.get("by"))}): '
        f"{_e(interrupted.get('finished'))} case(s) finished, {len(cut)} cut short (none of "
        f"their rules checked), {len(never)} never ran</p><ul>"
    ]
    parts += [f"<li>cut short: {_e(cid)}</li>" for cid in cut]
    parts += [f"<li>not run: {_e(cid)}</li>" for cid in never]
    return [*parts, "</ul>"]


def render_html(report: Mapping[str, Any]) -> str:
    """The whole page for a JSON report (schema mcp-host-conformance-report/1)."""
    client = report.get("client") or {}
    summary = report.get("summary") or {}
    requirements = report.get("requirements") or {}
    cases = report.get("cases") or []
    passed = bool(summary.get("passed"))
    interrupted = summary.get("interrupted") or {}
    verdict = "INTERRUPTED" if interrupted else "PASSED" if passed else "FAILED"
    name = f"{client.get('name', 'unknown client')} {client.get('version', '')}".strip()
    environment = report.get("environment") or {}
    network = environment.get("network")
    body = [
        f"<h1>MCP host conformance: {_e(name)}</h1>",
        f'<p id="verdict" class="verdict-{"passed" if passed else "failed"}"><strong>'
        f"conformance run {verdict}</strong> "
        f"(exit status {_e(summary.get('exit_status'))}"
        f"{', strict' if summary.get('strict') else ''})</p>",
    ]
    if interrupted:
        body += _interruption(interrupted)
    profiles = ", ".join(str(p) for p in client.get("profiles") or []) or "none"
    body.append(f"<p>profiles claimed: {_e(profiles)}</p>")
    if network:
        reason = environment.get("network_reason")
        body.append(f"<p>network: {_e(network)}{f' ({_e(reason)})' if reason else ''}</p>")
    body.append("<h2>Requirements by area</h2>")
    body += _summary_table(requirements)
    counts = summary.get("cases") or {}
    listed = ", ".join(f"{n} {_HEADINGS.get(k, k)}" for k, n in counts.items())
    body.append(f"<p>cases: {_e(listed or 'none ran')}</p>")
    for outcome, title in _SECTIONS:
        chosen = [c for c in cases if c.get("outcome") == outcome]
        if chosen:
            body.append(f'<h2 id="{outcome}">{_e(title)}: {len(chosen)}</h2>')
            for case in chosen:
                body += _case(case, requirements)
    baseline = report.get("baseline") or {}
    stale, unknown = baseline.get("stale") or [], baseline.get("unknown") or []
    if stale or unknown:
        body.append(f"<h2>Baseline {_e(baseline.get('path'))}</h2><ul>")
        body += [f"<li>stale (now passes; remove it): {_e(s)}</li>" for s in stale]
        body += [f"<li>unknown (no such requirement or case): {_e(u)}</li>" for u in unknown]
        body.append("</ul>")
    head = (
        '<meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>MCP host conformance: {_e(name)}</title><style>{_STYLE}</style>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head><body>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )
