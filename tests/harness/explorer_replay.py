"""`mcp-host-conformance explore --replay` run as a host author runs it: in a child process,
the network unsealed, the test session's own variables left out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BOUND = 120.0  # seconds for a replay, on a loaded machine


def replay(
    client: str,
    scenarios: Path,
    cwd: Path,
    report: Path | None = None,
    client_path: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Replay the scenario file (or the folder of them) `scenarios` against `client` (an
    adapter of `client_path`, if given)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MCP_HOST_"))}
    return subprocess.run(
        [
            *(sys.executable, "-m", "mcp_host_conformance", "explore", "--client", client),
            *("--network", "host", "--timeout-scale", "2", "--replay", str(scenarios)),
            *(("--report-json", str(report)) if report is not None else ()),
            *(("--client-path", str(client_path)) if client_path is not None else ()),
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
