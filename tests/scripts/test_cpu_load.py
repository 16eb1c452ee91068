"""scripts/cpu_load.py: its burners run while the command runs and are gone afterwards."""

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.stdio_server import pid_alive, process_state

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "cpu_load.py"
_spec = importlib.util.spec_from_file_location("cpu_load", _PATH)
cpu_load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_load)


def _cpu_ticks(pid: int) -> int:
    # utime + stime, the 14th and 15th fields; the command name may hold spaces, so count from
    # the last ')'
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def _burns(pid: int, bound: float = 30.0) -> bool:
    """Whether the process spends CPU: its ticks move within the bound (a sleeper's never do)."""
    start, deadline = _cpu_ticks(pid), time.monotonic() + bound
    while time.monotonic() < deadline:
        if _cpu_ticks(pid) > start:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("session_each", [False, True])
def test_burners_spin_during_the_block_and_are_reaped_after_it(session_each):
    with cpu_load.burning(2, session_each=session_each) as pids:
        assert len(pids) == 2
        assert all(process_state(pid) == "running" and _burns(pid) for pid in pids)
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
