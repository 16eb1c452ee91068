#!/usr/bin/env python3
"""Install the pinned fast-agent in its own virtual environment, once.

Usage:
    python examples/fast-agent/install.py          # makes examples/fast-agent/.venv

fast-agent 0.10 needs Python 3.12 or newer and brings a large set of dependencies of its own,
so it gets a virtual environment beside this file (`.venv`), whatever interpreter runs the
suite. The interpreter is `$FAST_AGENT_PYTHON` if set, else the first Python 3.12 or newer
found: `python3.13`, `python3.12` on PATH, then pyenv's installed versions. The packages are
`requirements.txt` (every one pinned), installed with uv when it is on PATH (seconds from
its cache), else pip. A stamp in `.venv` names the SHA-256 of `requirements.txt` and the
interpreter, so a second call with nothing changed does nothing; a lock keeps two callers
(parallel tox environments) from installing at once. Exit status: 0 ready, 1 the install
failed, 2 no suitable interpreter.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv"
REQUIREMENTS = HERE / "requirements.txt"
STAMP = ".installed-stamp"
LOCK = HERE / ".venv.lock"
MINIMUM = (3, 12)


def _version(python: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 2:
        return None
    return int(parts[0]), int(parts[1])


def _candidates() -> list[str]:
    chosen = os.environ.get("FAST_AGENT_PYTHON")
    if chosen:
        return [chosen]
    found = [p for p in (shutil.which("python3.13"), shutil.which("python3.12")) if p]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for version in sorted((pyenv_root / "versions").glob("3.1[2-9]*"), reverse=True):
        found.append(str(version / "bin" / "python3"))
    return found


def interpreter() -> str | None:
    """The first Python >= 3.12 that runs (a pyenv shim for a version not selected does not)."""
    for python in _candidates():
        version = _version(python)
        if version is not None and version >= MINIMUM:
            return python
    return None


def digest(python: str) -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes() + b"\0" + python.encode()).hexdigest()


def install(python: str) -> int:
    if VENV.exists():
        shutil.rmtree(VENV)
    uv = shutil.which("uv")
    if uv:
        steps = [
            [uv, "venv", "-q", "--python", python, str(VENV)],
            [uv, "pip", "install", "-q", "--python", str(VENV / "bin" / "python")]
            + ["-r", str(REQUIREMENTS)],
        ]
    else:
        steps = [
            [python, "-m", "venv", str(VENV)],
            [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
        ]
    for step in steps:
        status = subprocess.run(step).returncode
        if status != 0:
            return status
    (VENV / STAMP).write_text(digest(python) + "\n")
    return 0


def main() -> int:
    python = interpreter()
    if python is None:
        print(
            "fast-agent install: no Python 3.12 or newer found (set FAST_AGENT_PYTHON)",
            file=sys.stderr,
        )
        return 2
    with open(LOCK, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        try:
            if (VENV / STAMP).read_text().strip() == digest(python):
                print(f"fast-agent install: {VENV} up to date", flush=True)
                return 0
        except OSError:
            pass
        print(f"fast-agent install: {VENV} with {python}", flush=True)
        return 1 if install(python) else 0


if __name__ == "__main__":
    raise SystemExit(main())
