"""Orphans come back to the harness: a host that exits without reaping its stdio servers.

Strategy: when a process exits, the kernel hands its children to the nearest "child
subreaper" ancestor, else to init. Init reaps them at its own pace (at once on most
machines, a second or more on others), so whether a host that never reaped its stdio
server shows a zombie depended on the machine. The process that runs cases declares itself
a subreaper (prctl PR_SET_CHILD_SUBREAPER, Linux), so such a server comes back to the
harness instead: a zombie whose parent is now this process, although the host started it,
is proof that the host left it unreaped (STDIO-5), on any machine, at once. The harness
then reaps what it was handed (`reap_if_ours`), so nothing is left behind. A server still
running when its host exited came back the same way: the host neither stopped nor reaped it.
"""

from __future__ import annotations

import ctypes
import os
import select
import time

__all__ = ["become_subreaper", "handed_to_us", "parent_of", "reap_if_ours"]

_PR_SET_CHILD_SUBREAPER = 36
_DEATH_BOUND = 2.0  # seconds for a SIGKILLed child to become a zombie we can reap


def become_subreaper() -> bool:
    """Make this process the subreaper of everything it starts; False where it cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses


def parent_of(pid: int) -> int | None:
    """The parent pid of `pid` now (None when it is gone)."""
    fields = _stat(pid)
    return int(fields[1]) if fields and len(fields) > 1 else None


def handed_to_us(pid: int, original_parent: int | None) -> bool:
    """Whether `pid`, started by another process, now belongs to this one: its parent exited
    without reaping it (still running, or a zombie), and the kernel handed it here."""
    return parent_of(pid) == os.getpid() and original_parent not in (None, os.getpid())


def reap_if_ours(pid: int) -> None:
    """Reap `pid` if it is (or becomes, within a bound, once killed) our zombie child."""
    if parent_of(pid) != os.getpid():
        return
    deadline = time.monotonic() + _DEATH_BOUND
    while (_stat(pid) or ["Z"])[0] != "Z" and time.monotonic() < deadline:
        select.select([], [], [], 0.01)  # a killed process has no event to wait on
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
