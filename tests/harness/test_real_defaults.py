"""The slow cases observe a host's real default timeouts: they start it with none and time
what it does, never reading what describe() declares (a host declaring 10 s and keeping 3 s
fails DISC-3's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BOUND = 300.0


def test_a_declared_default_the_host_does_not_keep_fails_the_slow_case(tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "pytest", "--pyargs", "mcp_host_conformance.conformance",
        "--mcphc-client", "tests.harness.outside_zoo:SHORT_REAL_DEFAULT", "--mcphc-run-slow",
        "-k", "default_connect_timeout", "-p", "no:randomly", "-p", "no:cacheprovider", "-q",
        "--mcphc-report-json", str(tmp_path / "report.json"),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=BOUND)
    report = json.loads((tmp_path / "report.json").read_text())
    (case,) = report["cases"]
    assert case["outcome"] == "failed", done.stdout[-3000:]
    assert case["failed_requirements"] == ["DISC-3"]
    assert "about 10 s" in case["expected"] and "start took" in case["actual"]
