"""A broken client is the reference client with seams patched, wherever it is defined: its
interactive command (CRED-5 runs it in a pseudo-terminal, in a process of its own) carries
the same patches, found from the module that defined the client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp_host_conformance.zoo.client import find
from tests.harness import outside_zoo

REPO = Path(__file__).resolve().parents[2]
BOUND = 300.0


def test_the_client_is_found_from_where_it_was_defined() -> None:
    module, file = outside_zoo.SLOW_TO_STOP.defined_in
    assert module == "tests.harness.outside_zoo" and file == outside_zoo.__file__
    assert find(f"{module}:outside-the-zoo", file) is outside_zoo.SLOW_TO_STOP


def test_its_interactive_add_works_from_another_directory(tmp_path: Path) -> None:
    """The CRED-5 case against it passes: its `mcp add` runs with the same patches, from
    the case's project directory, where `tests.harness.outside_zoo` is not importable."""
    argv = [
        sys.executable, "-m", "pytest", "--pyargs", "mcp_host_conformance.conformance",
        "--mcphc-client", "tests.harness.outside_zoo:SLOW_TO_STOP", "-k", "echo_off",
        "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "--mcphc-timeout-scale", "3",
        "--mcphc-report-json", str(tmp_path / "report.json"),
    ]  # fmt: skip
    # `python -m pytest` from the repository makes `tests` importable for loading the
    # client; the interactive command runs in the case's project dir, where it is not.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=BOUND)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["requirements"]["CRED-5"]["outcome"] == "passed", done.stdout[-3000:]
