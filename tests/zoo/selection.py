"""Run only the listed cases: the self-test's impact selection (tests/zoo_impact.py).

`-p mcp_host_conformance.zoo.selection` with MCP_ZOO_CASES naming a file of node IDs, one a
line: every other case is deselected (and reported so). Without the variable it does nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CASES_ENV = "MCP_ZOO_CASES"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = os.environ.get(CASES_ENV)
    if not listed:
        return
    wanted = set(Path(listed).read_text(encoding="utf-8").splitlines())
    keep = [item for item in items if item.nodeid in wanted]
    dropped = [item for item in items if item.nodeid not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
