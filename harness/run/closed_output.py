"""A run whose standard output is closed under it (`run | head`) goes on without it.

Why: Python ignores SIGPIPE, so the first line written after the reader went away raised
BrokenPipeError out of pytest's terminal, then again out of its INTERNALERROR report: the
run stopped wherever it was, a traceback on stderr, exit status 1 (as if a host had failed a
rule), and the fixtures and reports never finished. What the run has to say on its standard
output is for a reader; with none left it is dropped, and the run judges its host and writes
its reports as it would have. `kept_going` wraps `sys.stdout` for the run (pytest's terminal
takes it at configuration), and `sys.stderr`: a write or flush that finds the pipe closed is
dropped, and every descriptor of the process on that pipe is pointed at /dev/null, so what
else writes there (pytest's capture, the interpreter's flush at exit, a forked worker) does
not fail either. A pipe that is full and never read is
not closed: a write to it waits, as any program's does (SIGTERM still ends the run).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

__all__ = ["ClosedOutput", "kept_going"]


class ClosedOutput:
    """A text stream that drops what it cannot write because its reader went away."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.closed_under_us = False

    def _dropped(self, exc: OSError) -> bool:
        if exc.errno not in (errno.EPIPE, errno.ECONNRESET):
            return False
        self.closed_under_us = True
        try:
            _silence(self._stream.fileno())
        except (OSError, ValueError):  # no descriptor to point elsewhere: still dropped
            pass
        return True

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            if not self._dropped(exc):
                raise
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if not self._dropped(exc):
                raise

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno, ...: the stream's
        return getattr(self._stream, name)


def _silence(fd: int) -> None:
    """Point `fd`, and every descriptor of this process on the same closed pipe (pytest's
    capture keeps a copy of the standard output it writes to directly; stderr too, after
    `2>&1`), at /dev/null."""
    closed = os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else None
    same = [fd]
    if closed is not None:
        for name in os.listdir("/proc/self/fd"):
            try:
                if int(name) != fd and os.readlink(f"/proc/self/fd/{name}") == closed:
                    same.append(int(name))
            except (OSError, ValueError):  # gone meanwhile (listdir's own descriptor)
                continue
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for each in same:
            os.dup2(devnull, each)
    finally:
        os.close(devnull)


@contextmanager
def kept_going() -> Iterator[ClosedOutput]:
    """`sys.stdout` and `sys.stderr` drop their output once their reader is gone, inside
    the block; what is yielded says whether either was (`closed_under_us`)."""
    out, err = sys.stdout, sys.stderr
    wrapped, wrapped_err = ClosedOutput(out), ClosedOutput(err)
    sys.stdout, sys.stderr = wrapped, wrapped_err
    try:
        yield wrapped
    finally:
        # What is still buffered is written now, through the wrappers: a reader that went
        # away after the last write would otherwise fail the interpreter's own flush at exit
        # (status 120, "Exception ignored ... BrokenPipeError").
        for stream in (wrapped, wrapped_err):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        sys.stdout, sys.stderr = out, err
        wrapped.closed_under_us |= wrapped_err.closed_under_us
