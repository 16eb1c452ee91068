"""Stand-in browsers that record what a host asked them to open, and open nothing (CRED-6).

Strategy: "opens no browser" is seen, not assumed. A host opens a browser through the
`BROWSER` variable (Python's `webbrowser`, many command-line tools) or a command found on
PATH (`xdg-open`, `sensible-browser`, Node's `open` package, ...). The case gives the host
`BROWSER` naming a stand-in, and a PATH whose first directory holds stand-ins under all
those names; each one appends the command and its arguments to one log and exits 0. The
log and the scripts live once per process, at fixed paths: Python's `webbrowser` reads
`BROWSER` once per process and keeps what it found, so an in-process host must meet the
same stand-in in every case, from the first: the plugin sets this process's `BROWSER` for
the whole run (`guard_browser`), which also keeps any case from opening a real browser on
the machine running the suite; a case reads only the lines written since its `mark()`.
Where no directory lets a script run (every candidate mounted noexec), there is no watch
(`browser_watch()` returns None) and the case says so.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from mcp_host_conformance.harness.run.cleanup import RESOURCES

__all__ = ["BROWSER_COMMANDS", "BrowserWatch", "browser_watch", "guard_browser"]

# What hosts run to open a URL on Linux and elsewhere (the first is what BROWSER names).
BROWSER_COMMANDS = (
    "mcphc-browser",
    "xdg-open",
    "x-www-browser",
    "www-browser",
    "sensible-browser",
    "gnome-open",
    "kde-open",
    "open",
)
_SCRIPT = """#!/bin/sh
# A stand-in browser (mcp-host-conformance, CRED-6): records the request, opens nothing.
printf '%s %s\\n' "$(basename "$0")" "$*" >> '{log}'
exit 0
"""
_LINE_LIMIT = 500  # characters of one logged request kept


class BrowserWatch:
    """The stand-ins in `directory/bin` and their shared log."""

    def __init__(self, directory: Path) -> None:
        self.bin = directory / "bin"
        self.log = directory / "opened.log"
        self.browser = str(self.bin / BROWSER_COMMANDS[0])

    def install(self) -> bool:
        """Write the stand-ins; whether one really runs here (False on a noexec mount)."""
        self.bin.mkdir(parents=True, exist_ok=True)
        quoted = str(self.log).replace("'", "'\\''")
        for name in BROWSER_COMMANDS:
            path = self.bin / name
            path.write_text(_SCRIPT.replace("{log}", quoted), encoding="utf-8")
            path.chmod(0o755)
        self.log.touch()
        mark = self.mark()
        try:
            subprocess.run(
                [self.browser, "self-check"],
                check=True,
                timeout=10,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return self.opened_since(mark) == [f"{BROWSER_COMMANDS[0]} self-check"]

    def environ(self, path: str | None = None) -> dict[str, str]:
        """What to add to the host's environment: BROWSER, and PATH with the stand-ins first."""
        base = path if path is not None else os.environ.get("PATH", os.defpath)
        return {"BROWSER": self.browser, "PATH": f"{self.bin}{os.pathsep}{base}"}

    def mark(self) -> int:
        """Where the log ends now (pass it to `opened_since`)."""
        try:
            return self.log.stat().st_size
        except FileNotFoundError:
            return 0

    def opened_since(self, mark: int) -> list[str]:
        """Each request logged after `mark`: "COMMAND ARGUMENTS", cut to a sane length."""
        try:
            with self.log.open("rb") as f:
                f.seek(mark)
                data = f.read(1024 * 1024)
        except FileNotFoundError:
            return []
        lines = data.decode("utf-8", "replace").splitlines()
        return [line[:_LINE_LIMIT] for line in lines if line]


_lock = threading.Lock()
_watch: list[BrowserWatch | None] = []


def browser_watch() -> BrowserWatch | None:
    """This process's watch (made once), or None where no stand-in can run."""
    with _lock:
        if not _watch:
            _watch.append(_make())
        return _watch[0]


def _make() -> BrowserWatch | None:
    for parent in (RESOURCES.temp_root(), Path(tempfile.gettempdir())):
        try:
            directory = Path(tempfile.mkdtemp(prefix="mcphc-browser-", dir=parent))
        except OSError:
            continue
        RESOURCES.track_path(directory)
        watch = BrowserWatch(directory)
        try:
            if watch.install():
                return watch
        except OSError:
            pass
    return None


def guard_browser() -> Callable[[], None]:
    """Point this process's BROWSER at the stand-in for the run; returns the undo."""
    watch = browser_watch()
    if watch is None:
        return lambda: None
    previous = os.environ.get("BROWSER")
    os.environ["BROWSER"] = watch.browser

    def restore() -> None:
        if os.environ.get("BROWSER") != watch.browser:
            return  # changed since: not ours to undo
        if previous is None:
            del os.environ["BROWSER"]
        else:
            os.environ["BROWSER"] = previous

    return restore
