#!/usr/bin/env python3
"""Print the table of broken clients (docs/broken-clients.md) from
`mcp_host_conformance.zoo.BROKEN`.

Usage: python scripts/zoo_table.py > /tmp/table.md   (then paste it over the table in the doc)

Strategy: the table is generated, never hand-edited, so it cannot drift from the zoo: one
row per broken client, sorted by its target requirement in catalog order (then by name),
with its full `fails` set in catalog order. `rows` and `table` are pure, for the tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping

from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS

_ORDER = {rid: index for index, rid in enumerate(REQUIREMENTS)}


def _catalog_order(rid: str) -> tuple[int, str]:
    return (_ORDER.get(rid, len(_ORDER)), rid)


def rows(clients: Mapping[str, object]) -> list[tuple[str, str, str, str]]:
    """(name, target, fails, description) per client, by target in catalog order, then name."""
    found = []
    for name, client in clients.items():
        fails = ", ".join(sorted(client.fails, key=_catalog_order))
        found.append((name, client.target, fails, client.description))
    return sorted(found, key=lambda row: (_catalog_order(row[1]), row[0]))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(found: Iterable[tuple[str, str, str, str]]) -> str:
    lines = [
        "| broken client | target | fails (exactly) | what it does wrong |",
        "|---|---|---|---|",
    ]
    for name, target, fails, description in found:
        lines.append(f"| `{name}` | {target} | {fails} | {_cell(description)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    import mcp_host_conformance.zoo

    sys.stdout.write(table(rows(mcp_host_conformance.zoo.BROKEN)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
