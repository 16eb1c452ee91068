"""Scenarios a monitor once misjudged on the reference host, replayed through the command as a
host author replays a file: the reference host follows every rule, so no monitor may see one
broken in them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_host_conformance.harness.explorer.scenario import (
    CallPlan,
    Scenario,
    ServerPlan,
    StepPlan,
    to_json,
)

BOUND = 120.0

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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MCP_HOST_"))}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "mcp_host_conformance", "explore", "--client", "reference"),
            *("--network", "host", "--timeout-scale", "2", "--replay", str(path)),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
