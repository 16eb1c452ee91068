"""Scenarios a monitor once misjudged on the reference host, replayed through the command as a
host author replays a file: the reference host follows every rule, so no monitor may see one
broken in them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_host_conformance.harness.explorer.scenario import (
    CallPlan,
    Scenario,
    ServerPlan,
    StepPlan,
    to_json,
)
from tests.harness.explorer_replay import replay

MISJUDGED = {
    # its one tool gone after the first call, docs lists none in the next session: none of
    # its tools is offered because it has none, not because another server failed
    "tools-gone-beside-a-failed-server": Scenario(
        servers=(
            ServerPlan("docs", tools_change="a-tool-disappears"),
            ServerPlan("files", failure="rejects-401"),
        ),
        steps=(
            StepPlan("start"),
            StepPlan("ask", calls=(CallPlan("docs", "query"),), answers=("y",)),
            StepPlan("restart-fresh"),
            StepPlan("ask", turn="no-call"),
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(MISJUDGED))
def test_the_reference_host_breaks_no_rule_in_it(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(to_json(MISJUDGED[name])), "utf-8")
    done = replay("reference", path, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
