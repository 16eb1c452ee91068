"""Scenarios a monitor once misjudged on the reference host, replayed through the command as a
host author replays a file: the reference host follows every rule, so no monitor may see one
broken in them."""

from __future__ import annotations

import json
import os
import re
import shlex
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


def test_the_replay_command_a_finding_prints_gives_its_verdict(tmp_path: Path) -> None:
    """Copied as printed (the client and the timeout scale of the run included), the replay
    command fails the same rule; without the client it would have replayed the scenario
    against the reference host and passed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MCP_HOST_"))}
    explore = [
        *(sys.executable, "-m", "mcp_host_conformance", "explore"),
        *("--client", "world-readable-config", "--scenarios", "6", "--timeout-scale", "2"),
        *("--network", "host", "--out", str(tmp_path / "found")),
    ]
    done = subprocess.run(explore, cwd=tmp_path, env=env, capture_output=True, text=True)
    printed = re.search(r"replay with (mcp-host-conformance explore [^)]*)\)", done.stdout)
    assert printed, done.stdout[-3000:]
    words = shlex.split(printed.group(1))
    assert words[2:4] == ["--client", "world-readable-config"]
    assert "--timeout-scale" in words
    again = subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance", *words[1:], "--network", "host"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 1 and "CFG-3 failed" in again.stdout, again.stdout[-3000:]
