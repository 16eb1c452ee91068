"""The console: what a person sees and types at a terminal (the UI the engine talks to).

Strategy: the engine (`HostEngine`) never touches a terminal; it calls `show`, `approve` and
`acknowledge`. `TerminalUI` implements them over a pair of text streams, and every text it
writes passes `display.terminal_safe` first (HARD-1), whoever built it. Blocking reads run
in a worker thread (`asyncio.to_thread`) so the event loop keeps serving connections and
timers while the person thinks. End of input always means "no": an approval read at EOF
is an empty answer (deny), an acknowledgement at EOF is declined.

Secrets are typed with echo off (CRED-5): `read_secret` turns off ECHO on the terminal for
the one line and restores it in a `finally`, even on Ctrl-C. When input is not a terminal
(a script, a test), the line is read as is; there is nothing to echo it to.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from mcp_host_conformance.reference_client.confirmation import ConfirmationView, is_approved
from mcp_host_conformance.reference_client.display import terminal_safe
from mcp_host_conformance.reference_client.tool_review import ReviewView

__all__ = ["TerminalUI", "read_secret"]


def _read_line(stream: TextIO) -> str | None:
    line = stream.readline()
    if line == "":
        return None  # end of input
    return line.rstrip("\r\n")


def read_secret(prompt: str, *, stdin: TextIO, stdout: TextIO) -> str | None:
    """Read one line with echo off when stdin is a terminal. None at end of input."""
    prompt = terminal_safe(prompt)
    if not stdin.isatty():
        stdout.write(prompt)
        stdout.flush()
        return _read_line(stdin)
    import termios

    fd = stdin.fileno()
    saved = termios.tcgetattr(fd)
    quiet = termios.tcgetattr(fd)
    quiet[3] &= ~termios.ECHO
    try:
        # Echo off before the prompt shows (as getpass does): whatever is typed once the
        # prompt is visible is hidden, and TCSAFLUSH drops only what was typed before it.
        termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
        stdout.write(prompt)
        stdout.flush()
        return _read_line(stdin)
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, saved)
        stdout.write("\n")  # the Enter the person typed was not echoed either
        stdout.flush()


class TerminalUI:
    """The UI protocol of `mcp_host_conformance.reference_client.engine` over text streams."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout

    def show(self, text: str) -> None:
        self.stdout.write(terminal_safe(text) + "\n")
        self.stdout.flush()

    async def _prompt(self, text: str) -> str | None:
        self.stdout.write(terminal_safe(text))
        self.stdout.flush()
        return await asyncio.to_thread(_read_line, self.stdin)

    async def approve(self, view: ConfirmationView) -> str:
        # view.text ends with the approval prompt; an empty answer (Enter or EOF) denies.
        answer = await self._prompt(view.text)
        if answer is None:
            self.stdout.write("\n")
            return ""
        return answer

    async def acknowledge(self, prompt: str) -> bool:
        answer = await self._prompt(prompt)
        return answer is not None and is_approved(answer)

    async def review_tool(self, view: ReviewView) -> bool:
        """One tool of a review (profile pinning): its text, then the prompt; only yes
        approves, like a call's confirmation."""
        answer = await self._prompt(view.text)
        return answer is not None and is_approved(answer)

    async def question(self, prompt: str = "You> ") -> str | None:
        """The next question, or None at end of input."""
        return await self._prompt(prompt)
