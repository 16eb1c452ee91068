"""Everything a run creates, removed however the run ends (SIGTERM as well as Ctrl-C).

Strategy: one registry per process (`RESOURCES`) tracks what outlives a single call: the
run's temp root (every case's HOME, project, session logs and stdio journals live under
it), files the mocks made for the whole process (the TLS mocks' CA directory), and the
process groups of driver commands. `cleanup()` is idempotent and runs at interpreter exit.

Signals: Ctrl-C makes pytest unwind (fixtures torn down, clients stopped, mocks closed, the
summary printed). `on_sigterm` makes SIGTERM do exactly the same: the first SIGTERM is
forwarded to this process's children (its workers, forked or pytest-xdist's, so they unwind
too) and raised as KeyboardInterrupt in the main thread; a second one cleans up at once and
exits 143.
Without it, SIGTERM killed the run on the spot and left HOMEs with `servers.json`, session
logs, journals and CA files in /dev/shm and /tmp.

Processes: a host or a driver may start something that leaves its process group and
session (setsid, as a daemon does), which no group kill reaches. Every process of a run is
a child subreaper (`start_run`, `forked`), so such an orphan comes back to the run process
above it, and each of them kills and reaps whatever is still below it when it ends
(`sweep`), sparing only the children it already had when the run began.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any, Final

__all__ = [
    "RESOURCES",
    "TMPDIR_ENV",
    "RunResources",
    "case_tmpdir",
    "children_of",
    "descendants",
    "forked",
    "install_sigterm",
    "remove_roots_of",
    "restore_sigterm",
    "start_run",
    "sweep",
]

TMPDIR_ENV: Final = "MCP_HOST_CONFORMANCE_TMPDIR"
_SHM = Path("/dev/shm")
_SHM_MIN_FREE = 256 * 1024 * 1024


def case_tmpdir(environ: Mapping[str, str] = os.environ) -> str | None:
    """Where the run's temp dirs go: $MCP_HOST_CONFORMANCE_TMPDIR, else /dev/shm when it is
    a roomy, writable, exec-allowed tmpfs, else None (the system default).

    Why: a client that fsyncs its configuration and session log (as it should) pays ~5 ms a
    sync on a disk, hundreds of times a run, on the case's critical path; on tmpfs a sync is
    free. What the client writes and what the case reads are the same either way.
    """
    chosen = environ.get(TMPDIR_ENV)
    if chosen:
        return chosen
    try:
        stat = os.statvfs(_SHM)
    except OSError:
        return None
    noexec = getattr(os, "ST_NOEXEC", 0)
    roomy = stat.f_bavail * stat.f_frsize >= _SHM_MIN_FREE
    if roomy and not stat.f_flag & (os.ST_RDONLY | noexec) and os.access(_SHM, os.W_OK | os.X_OK):
        return str(_SHM)
    return None


def children_of(pid: int) -> list[int]:
    """The live child processes of `pid` (read from /proc; empty where there is none)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(name))
    return found


class RunResources:
    """What this process created for the run; see the module comment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._root: Path | None = None
        self._paths: set[Path] = set()
        self._groups: set[int] = set()

    def temp_root(self) -> Path:
        """This process's run root (made on first use), under `case_tmpdir()`."""
        with self._lock:
            if self._root is None or not self._root.is_dir():
                self._root = Path(
                    tempfile.mkdtemp(prefix=_root_prefix(os.getpid()), dir=case_tmpdir())
                )
            return self._root

    def track_path(self, path: Path | str) -> None:
        """Remove `path` (a file or a directory) at cleanup."""
        with self._lock:
            self._paths.add(Path(path))

    def track_group(self, pgid: int) -> None:
        """Kill process group `pgid` at cleanup (until `untrack_group`)."""
        with self._lock:
            self._groups.add(pgid)

    def untrack_group(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def tracked(self) -> tuple[Path | None, frozenset[Path], frozenset[int]]:
        with self._lock:
            return self._root, frozenset(self._paths), frozenset(self._groups)

    def forget(self) -> None:
        """Track nothing, removing nothing: in a forked worker, whose parent owns what it
        inherited (the worker's own temp root and groups come next, on first use)."""
        self._lock = threading.Lock()  # a parent's thread may have held it at the fork
        self._root = None
        self._paths = set()
        self._groups = set()

    def cleanup(self) -> None:
        """Kill every tracked process group, remove every tracked path and the run root."""
        with self._lock:
            root, self._root = self._root, None
            paths, self._paths = set(self._paths), set()
            groups, self._groups = set(self._groups), set()
        own = os.getpgrp()
        for pgid in groups:
            if pgid > 1 and pgid != own:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for path in [*paths, *([root] if root else [])]:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    path.unlink()
                except OSError:
                    pass


def _root_prefix(pid: int) -> str:
    return f"mcphc-run-{pid}-"


def remove_roots_of(pid: int) -> None:
    """Remove the run roots a process made and could not remove itself (a worker that died
    mid-case, harness.workers): its cases' HOMEs, journals and logs."""
    base = Path(case_tmpdir() or tempfile.gettempdir())
    for root in base.glob(f"{_root_prefix(pid)}*"):
        if root.is_dir() and not root.is_symlink():
            shutil.rmtree(root, ignore_errors=True)


RESOURCES: Final = RunResources()
atexit.register(RESOURCES.cleanup)

# The processes a run leaves: none. A driver or a host may start processes that leave its
# process group and session (setsid: a daemon's first step), which no group kill reaches; an
# orphan goes to the nearest subreaper ancestor, so a run makes its processes subreapers
# (`start_run`) and kills whatever it still has below it when it ends (`sweep`), sparing the
# children that already ran when it began (a test process running a suite in-process).
_SWEEP_SECONDS: Final = 10.0
_spared: frozenset[int] | None = None  # None: no run began in this process, nothing to sweep


def start_run() -> None:
    """This process runs a suite: what it starts, and their orphans, come back to it."""
    global _spared
    from mcp_host_conformance.harness.run.orphans import become_subreaper

    become_subreaper()
    if _spared is None:
        _spared = frozenset(children_of(os.getpid()))


def descendants(pid: int, spared: frozenset[int] = frozenset()) -> list[int]:
    """Every live process below `pid` (children first), without `spared` and theirs."""
    found: list[int] = []
    below = [child for child in children_of(pid) if child not in spared]
    while below:
        found += below
        below = [grandchild for child in below for grandchild in children_of(child)]
    return found


def sweep() -> list[int]:
    """Kill every process below this one that the run left (see above) and reap them as they
    come to this process (each killed parent hands its own over); the pids killed. Bounded:
    SIGKILL cannot be refused, and the kernel hands the dead over at once."""
    global _spared
    spared, _spared = _spared, None
    if spared is None:
        return []
    from mcp_host_conformance.harness.run.orphans import parent_of, reap_if_ours

    killed: list[int] = []
    me = os.getpid()
    deadline = time.monotonic() + _SWEEP_SECONDS
    while time.monotonic() < deadline:
        left = [pid for pid in descendants(me, spared) if pid not in killed]
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.append(pid)
        for pid in killed:
            reap_if_ours(pid)
        if not left and all(parent_of(pid) is None for pid in killed):
            break
    return killed


_terminating = threading.Event()
_EXIT_ON_SECOND_SIGTERM: Final = 128 + signal.SIGTERM


def forked() -> None:
    """In a process forked from a run (harness.workers): this registry starts empty, a
    SIGTERM is this process's first, and what it leaves below it is its own to sweep."""
    global _terminating, _spared
    RESOURCES.forget()
    _terminating = threading.Event()
    if _spared is not None:
        from mcp_host_conformance.harness.run.orphans import become_subreaper

        become_subreaper()
        _spared = frozenset()


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM handler: the first one unwinds the run as Ctrl-C would; see above."""
    if _terminating.is_set():
        RESOURCES.cleanup()
        sweep()
        os._exit(_EXIT_ON_SECOND_SIGTERM)
    _terminating.set()
    for child in children_of(os.getpid()):
        try:
            os.kill(child, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    raise KeyboardInterrupt("SIGTERM")


SigtermHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


def install_sigterm() -> SigtermHandler:
    """Install `on_sigterm` (main thread only; elsewhere nothing happens); the previous
    handler, for `restore_sigterm`."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is on_sigterm:
        return None
    signal.signal(signal.SIGTERM, on_sigterm)
    return previous


def restore_sigterm(previous: SigtermHandler) -> None:
    if previous is None or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is on_sigterm:
        signal.signal(signal.SIGTERM, previous)
