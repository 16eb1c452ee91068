"""Text from the client under test, made safe to print on a terminal.

Strategy: anything the harness prints that a host, a driver or a server wrote (a driver's
stderr, a status line or a result quoted in a failure message) may carry terminal control
sequences that redraw the screen or fake a prompt. `visible()` keeps newlines and tabs and
shows every other control character (C0, DEL, C1, and the bidirectional overrides and
isolates) as an escape you can read, so nothing reaches the terminal as a control.
"""

from __future__ import annotations

import re

__all__ = ["visible"]

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"<U+{code:04X}>"


def visible(text: str) -> str:
    """`text` with every control character but newline and tab shown as an escape."""
    return _CONTROLS.sub(_shown, text)
