#!/usr/bin/env python3
"""Print the explorer's dimension catalogue as the Markdown table of docs/explorer.md.

Usage: python scripts/explorer_table.py   (a test checks the doc holds exactly this table)
"""

from __future__ import annotations

from mcp_host_conformance.harness.explorer.dimensions import DIMENSIONS


def table() -> str:
    lines = ["| dimension | what a host could branch on | values |", "|---|---|---|"]
    for d in DIMENSIONS:
        values = ", ".join(f"`{v}`" for v in d.values)
        lines.append(f"| `{d.name}` | {d.about} | {values} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(table(), end="")
