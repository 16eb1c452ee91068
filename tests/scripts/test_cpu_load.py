"""scripts/cpu_load.py: its burners run while the command runs and are gone afterwards."""

import importlib.util
import subprocess
import sys
from pathlib import Path

from mcp_host_conformance.mocks.stdio_server import pid_alive

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "cpu_load.py"
_spec = importlib.util.spec_from_file_location("cpu_load", _PATH)
cpu_load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_load)


def test_burners_spin_during_the_block_and_are_reaped_after_it():
    with cpu_load.burning(2) as procs:
        assert len(procs) == 2
        assert all(p.poll() is None for p in procs)
        pids = [p.pid for p in procs]
    assert all(p.returncode is not None for p in procs)
    assert not any(pid_alive(pid) for pid in pids)


def test_the_command_runs_under_load_and_its_status_is_returned():
    done = subprocess.run(
        [sys.executable, str(_PATH), "--per-core", "1", "--", sys.executable, "-c", "exit(3)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "burners running" in done.stderr
