"""scripts/npm_ready.py: `npm ci` once per set of pins, never twice at once in one directory.

npm itself is replaced by a fake on PATH that logs each call, empties node_modules as `npm ci`
does, and can be told to fail or to wait for the test before it finishes.
"""

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "npm_ready.py"
_spec = importlib.util.spec_from_file_location("npm_ready", _PATH)
npm_ready = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(npm_ready)

FAKE_NPM = """#!/bin/sh
# args: ci --prefix PREFIX --no-audit --no-fund
echo "$*" >> "$FAKE_NPM_LOG"
rm -rf "$3/node_modules" && mkdir "$3/node_modules"
if [ -n "$FAKE_NPM_GATE" ]; then
  echo started >> "$FAKE_NPM_LOG.started"
  read line < "$FAKE_NPM_GATE"
fi
exit "${FAKE_NPM_STATUS:-0}"
"""


@pytest.fixture
def prefix(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "npm"
    fake.write_text(FAKE_NPM)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(tmp_path / "npm.log"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"dependencies": {"a": "1.0.0"}}')
    (project / "package-lock.json").write_text('{"lockfileVersion": 3}')
    return project


def calls(prefix: Path) -> list[str]:
    log = prefix.parent / "npm.log"
    return log.read_text().splitlines() if log.exists() else []


def test_installs_once_then_again_only_when_the_pins_change(prefix):
    assert npm_ready.main([str(prefix)]) == 0
    assert calls(prefix) == [f"ci --prefix {prefix} --no-audit --no-fund"]
    assert npm_ready.main([str(prefix)]) == 0
    assert len(calls(prefix)) == 1  # up to date: nothing installed, nothing emptied
    (prefix / "package-lock.json").write_text('{"lockfileVersion": 3, "packages": {}}')
    assert npm_ready.main([str(prefix)]) == 0
    assert len(calls(prefix)) == 2
    (prefix / "package.json").write_text('{"dependencies": {"a": "2.0.0"}}')
    assert npm_ready.main([str(prefix)]) == 0
    assert len(calls(prefix)) == 3


def test_a_failed_install_leaves_no_stamp_and_its_status_is_returned(prefix, monkeypatch):
    monkeypatch.setenv("FAKE_NPM_STATUS", "7")
    assert npm_ready.main([str(prefix)]) == 7
    assert not npm_ready.up_to_date(prefix)
    monkeypatch.delenv("FAKE_NPM_STATUS")
    assert npm_ready.main([str(prefix)]) == 0  # tried again, not taken for installed
    assert len(calls(prefix)) == 2


def test_an_emptied_node_modules_is_installed_again(prefix):
    assert npm_ready.main([str(prefix)]) == 0
    (prefix / "node_modules" / npm_ready.STAMP).unlink()
    assert npm_ready.main([str(prefix)]) == 0
    assert len(calls(prefix)) == 2


def test_a_directory_without_pins_is_refused(tmp_path, prefix):
    assert npm_ready.main([str(tmp_path)]) == 2
    assert npm_ready.main(["--help"]) == 2
    assert calls(prefix) == []


def _blocked_on_lock(path: Path) -> bool:
    """Whether some process waits for a lock on `path` (a `->` line of /proc/locks)."""
    inode = f":{path.stat().st_ino} "
    return any(
        line.split(":", 1)[1].lstrip().startswith("->") and inode in line
        for line in Path("/proc/locks").read_text().splitlines()
        if ":" in line
    )


def test_a_second_caller_waits_for_the_first_and_installs_nothing(prefix, tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    env = {**os.environ, "FAKE_NPM_GATE": str(gate)}
    command = [sys.executable, str(_PATH), str(prefix)]
    # each in a group of its own: a failing check kills its fake npm too, not only itself
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    second = None
    try:
        started = Path(f"{tmp_path / 'npm.log'}.started")
        deadline = time.monotonic() + 60
        while not started.exists():  # the first is inside `npm ci`, holding the lock
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        second = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        while not _blocked_on_lock(prefix / npm_ready.LOCK):
            assert second.poll() is None, "the second caller did not wait for the lock"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with open(gate, "w") as release:  # the first's npm may finish now
            release.write("go\n")
        assert first.wait(timeout=60) == 0
        out, _ = second.communicate(timeout=60)
        assert second.returncode == 0
        assert "up to date" in out
        assert len(calls(prefix)) == 1
    finally:
        for proc in (first, second):
            if proc is not None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
