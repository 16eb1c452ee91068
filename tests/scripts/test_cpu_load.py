"""scripts/cpu_load.py: its burners run while the command runs and are gone afterwards."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.stdio_server import pid_alive, process_state

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "cpu_load.py"
_spec = importlib.util.spec_from_file_location("cpu_load", _PATH)
cpu_load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_load)


@pytest.mark.parametrize("session_each", [False, True])
def test_burners_spin_during_the_block_and_are_reaped_after_it(session_each):
    with cpu_load.burning(2, session_each=session_each) as pids:
        assert len(pids) == 2
        assert all(process_state(pid) == "running" for pid in pids)
        sessions = {os.getsid(pid) for pid in pids}
    assert not any(pid_alive(pid) for pid in pids)
    assert os.getsid(0) not in sessions  # never in the command's session (nor the terminal's)
    assert len(sessions) == (2 if session_each else 1)


def test_the_command_runs_under_load_and_its_status_is_returned():
    done = subprocess.run(
        [sys.executable, str(_PATH), "--per-core", "1", "--", sys.executable, "-c", "exit(3)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "burners running (one session)" in done.stderr
