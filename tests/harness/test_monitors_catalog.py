"""The monitors' catalog and its documentation agree: docs/monitors.md has a row for every
rule of the catalog, naming its monitor or saying why only a targeted case checks it, and
every monitor of the registry stands in the rows of the rules it can fail."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_host_conformance.harness.monitors.watch import MONITORS
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "monitors.md"
ROW = re.compile(r"^\| ([A-Z]+-\d+(?:, [A-Z]+-\d+)*) \| ([^|]+) \| ([^|]+) \|$")


def _rows() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in DOC.read_text("utf-8").splitlines():
        found = ROW.match(line)
        if found:
            for rid in found.group(1).split(", "):
                rows[rid] = (found.group(2).strip(), found.group(3).strip())
    return rows


def test_every_rule_has_a_row() -> None:
    rows = _rows()
    missing = sorted(set(REQUIREMENTS) - set(rows))
    assert not missing, f"docs/monitors.md has no row for {missing}"
    for rid, (_monitor, why) in rows.items():
        assert rid in REQUIREMENTS, f"docs/monitors.md names {rid}, which is not in the catalog"
        assert why, f"{rid}: the row says nothing of what is watched, or why nothing is"


def test_every_monitor_stands_in_the_rows_of_its_rules() -> None:
    rows = _rows()
    for monitor in MONITORS:
        for rid in monitor.rules:
            assert monitor.name in rows[rid][0], (
                f"monitor {monitor.name} fails {rid}, but {rid}'s row names {rows[rid][0]!r}"
            )
    named = {m.name for m in MONITORS}
    for rid, (monitor, _why) in rows.items():
        for name in re.findall(r"[a-z]+(?:-[a-z0-9]+)+", monitor):
            assert name in named, f"{rid}'s row names {name}, which is no monitor"
