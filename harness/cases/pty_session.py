"""A person at a terminal: run a host's interactive command in a pseudo-terminal (CRED-5).

Strategy: echo is a property of the terminal, not of the program's output, so the only
honest way to see whether a typed secret is echoed is to be the terminal: the command runs
on the slave side of a pty (its stdin, stdout, stderr and controlling terminal, through a
tiny `os.login_tty` trampoline so no `preexec_fn` runs in this threaded process), and the
master side is what the person sees and types into. Whatever the line discipline echoes
shows up in what is read from the master, exactly as on a screen. Stdlib only (`pty`,
`termios`, `select`), so the suite needs nothing beyond its own dependencies.

Typing waits for the prompt (the first output, bounded), then for the host to turn echo
off (read from the master, which shares the slave's termios on Linux), up to the caller's
`settle` bound: a host that prints something before hiding the input is never blamed for
our haste, however slow the machine; a host that never hides it is typed into once the
bound has passed (only such a host waits it out).
Every wait is bounded; a command still running at the end is killed with its session.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PLACEHOLDERS", "TerminalRun", "fill_template", "run_in_terminal", "terminal_environ"]

PLACEHOLDERS = ("{name}", "{url}", "{header}")

# Runs in the child: make the pty (already fds 0-2) its controlling terminal, then exec.
_LOGIN_TTY = "import os, sys; os.login_tty(0); os.execvp(sys.argv[1], sys.argv[1:])"
_POLL = 0.01  # seconds between looks at the terminal's echo flag during the settle


@dataclass
class TerminalRun:
    """What happened at the terminal."""

    shown: str  # everything the terminal showed, typed characters echoed included
    prompted: bool  # the command showed something before anything was typed
    typed: bool  # the answer was typed
    echo_off_when_typed: (
        bool | None
    )  # the terminal's ECHO flag was off as we typed (None: not typed)
    status: int | None  # the exit status; None if it did not end within the bound (then killed)


def fill_template(template: Sequence[str], **values: str) -> list[str]:
    """The argv from an `interactive_add` template: each `{key}` replaced by its value, in
    every argument (plain replacement, never `str.format`: other braces stay as written)."""
    argv = []
    for part in template:
        for key, value in values.items():
            part = part.replace("{" + key + "}", value)
        argv.append(part)
    return argv


def terminal_environ(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The harness's environment with HOME set to the case's home, no XDG_* directories
    (configuration stays under HOME) and a dumb terminal (no colour codes between characters)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    environ.update(HOME=str(home), TERM="dumb")
    environ.update(extra or {})
    return environ


def _echo_on(master: int) -> bool:
    try:
        return bool(termios.tcgetattr(master)[3] & termios.ECHO)
    except termios.error:  # the slave side is gone
        return False


def _read_some(master: int, into: bytearray, timeout: float) -> bool:
    """Read what is there within `timeout`; False at end of output (every slave fd closed)."""
    ready, _, _ = select.select([master], [], [], max(0.0, timeout))
    if not ready:
        return True
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: the slave side is closed
        return False
    if not chunk:
        return False
    into.extend(chunk)
    return True


def run_in_terminal(
    argv: Sequence[str],
    *,
    answer: str,
    env: Mapping[str, str],
    cwd: Path,
    prompt_bound: float,
    settle: float,
    end_bound: float,
) -> TerminalRun:
    """Run `argv` in a pseudo-terminal; at its first output type `answer` and Enter; read
    until it ends. `prompt_bound`: seconds to wait for the first output; `settle`: at most
    this long for echo to go off before typing; `end_bound`: seconds for it to end after."""
    master, slave = os.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _LOGIN_TTY, *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=dict(env),
            cwd=str(cwd),
            close_fds=True,
        )
    except OSError:
        os.close(master)
        raise
    finally:
        os.close(slave)
    shown = bytearray()
    open_ = True
    typed = False
    echo_off: bool | None = None
    try:
        deadline = time.monotonic() + prompt_bound
        while open_ and not shown and time.monotonic() < deadline:
            open_ = _read_some(master, shown, deadline - time.monotonic())
        prompted = bool(shown)
        if prompted and open_:
            settled = time.monotonic() + settle
            while open_ and _echo_on(master) and time.monotonic() < settled:
                open_ = _read_some(master, shown, _POLL)
            echo_off = not _echo_on(master)
            os.write(master, answer.encode("utf-8") + b"\r")  # Enter sends CR; ICRNL makes it \n
            typed = True
        deadline = time.monotonic() + end_bound
        while open_ and time.monotonic() < deadline:
            open_ = _read_some(master, shown, deadline - time.monotonic())
        try:
            status: int | None = process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = None
    finally:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # login_tty made it a session leader
            except (ProcessLookupError, PermissionError):
                process.kill()
            process.wait()
        os.close(master)
    return TerminalRun(shown.decode("utf-8", "replace"), prompted, typed, echo_off, status)
