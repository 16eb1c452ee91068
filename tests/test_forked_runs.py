"""The self-test's fork server (tests/forked_runs.py): a forked run is a run of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from mcp_host_conformance.harness.sandbox import network as sandbox
from mcp_host_conformance.mocks.stdio_server import process_state
from tests import forked_runs

CASES = """
import atexit, json, os, sys
from pathlib import Path

def test_sees_its_own_world():
    Path("seen.json").write_text(json.dumps({
        "cwd": os.getcwd(),
        "only_here": os.environ.get("FORKED_ONLY_HERE"),
        "only_caller": os.environ.get("FORKED_ONLY_CALLER"),
        "network": __import__(
            "mcp_host_conformance.harness.sandbox.network", fromlist=["observe"]
        ).observe(probe_dns=False).mode,
        "stdin": os.readlink("/proc/self/fd/0"),
    }))
    atexit.register(lambda: Path("atexit-ran").write_text("yes"))
    print("PRINTED-BY-THE-CASE")

def test_asserts_are_rewritten():
    value = 2
    assert value == 1
"""


def test_preload_imports_nothing_a_run_must_import_itself():
    assert forked_runs.preloaded_too_early() == []


def test_a_forked_run_has_its_own_directory_environment_output_and_exit(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKED_ONLY_CALLER", "caller")
    (tmp_path / "test_world.py").write_text(CASES)
    env = {k: v for k, v in os.environ.items() if k != "FORKED_ONLY_CALLER"}
    env["FORKED_ONLY_HERE"] = "here"
    output = tmp_path / "output.txt"
    argv = ["--disable-plugin-autoload", "-p", "no:cacheprovider", "-q", "test_world.py"]
    status = forked_runs.run(argv, tmp_path, env, output, bound=120)
    assert status == 1, output.read_text()  # one case failed
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["cwd"] == str(tmp_path)
    assert seen["only_here"] == "here" and seen["only_caller"] is None
    assert seen["stdin"] == "/dev/null"
    can_seal = sandbox._trial() is None
    assert seen["network"] == (sandbox.ISOLATED if can_seal else sandbox.HOST)
    assert (tmp_path / "atexit-ran").read_text() == "yes"
    text = output.read_text()
    assert "PRINTED-BY-THE-CASE" not in text  # captured by pytest, as in any run
    assert "assert 2 == 1" in text  # the case module was rewritten by the run's pytest
    assert "already imported" not in text


def test_a_run_past_its_bound_is_killed(tmp_path, monkeypatch):
    (tmp_path / "test_slow.py").write_text(
        "import os, time\n"
        "from pathlib import Path\n"
        "def test_slow():\n"
        "    Path('pid').write_text(str(os.getpid()))\n"
        "    time.sleep(600)\n"
    )
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    argv = ["--disable-plugin-autoload", "-p", "no:cacheprovider", "-q"]
    # The fork server started (its imports, seconds on a loaded machine) before the bound
    # counts: then the bound need only cover the fork, whose child's pid comes back at once.
    assert (
        forked_runs.run(
            [*argv, "test_one.py"], tmp_path, dict(os.environ), tmp_path / "one.txt", 120
        )
        == 0
    )
    killed: list[tuple[int, str]] = []  # each pid killed, and its working directory then
    kill = os.kill

    def noted(pid: int, sig: int) -> None:
        killed.append((pid, os.readlink(f"/proc/{pid}/cwd")))
        kill(pid, sig)

    monkeypatch.setattr(os, "kill", noted)
    started = time.monotonic()
    status = forked_runs.run(
        [*argv, "test_slow.py"], tmp_path, dict(os.environ), tmp_path / "out.txt", 3
    )
    assert status is None
    assert time.monotonic() - started < 60
    [(pid, cwd)] = killed
    # the run's own process: it moved to the run's directory
    assert cwd == os.path.realpath(tmp_path)
    if (tmp_path / "pid").exists():  # the case began before the bound: its process died
        assert int((tmp_path / "pid").read_text()) == pid
    deadline = time.monotonic() + 30
    while process_state(pid) != "gone" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_state(pid) == "gone"  # killed and reaped, not left a zombie


def test_a_child_that_dies_reports_a_crash(tmp_path):
    (tmp_path / "test_dies.py").write_text("import os\ndef test_dies():\n    os._exit(0)\n")
    argv = ["--disable-plugin-autoload", "-p", "no:cacheprovider", "-q", "test_dies.py"]
    status = forked_runs.run(argv, tmp_path, dict(os.environ), tmp_path / "out.txt", bound=120)
    assert status == forked_runs.CRASHED


def test_the_server_ends_with_its_caller_and_leaves_nothing(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    caller = (
        "import json, os, sys\n"
        "from pathlib import Path\n"
        "from tests import forked_runs\n"
        "here = Path(sys.argv[1])\n"
        "argv = ['-q', '-p', 'no:cacheprovider', 'test_one.py']\n"
        "status = forked_runs.run(argv, here, dict(os.environ), here / 'out.txt', 120)\n"
        "print(json.dumps([status, forked_runs._socket_path]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", caller, str(tmp_path)],
        cwd=forked_runs._ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    status, socket_path = json.loads(done.stdout.splitlines()[-1])
    assert status == 0
    folder = Path(socket_path).parent
    deadline = time.monotonic() + 30
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists(), "the fork server outlived its caller"


def test_a_server_that_is_gone_is_replaced(tmp_path, monkeypatch):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    monkeypatch.setattr(forked_runs, "_socket_path", str(tmp_path / "no-server-here"))
    argv = ["--disable-plugin-autoload", "-p", "no:cacheprovider", "-q", "test_one.py"]
    status = forked_runs.run(argv, tmp_path, dict(os.environ), tmp_path / "out.txt", bound=120)
    assert status == 0
    assert forked_runs._socket_path != str(tmp_path / "no-server-here")
