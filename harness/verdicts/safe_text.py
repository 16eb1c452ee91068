"""Text from the client under test, made safe to print on a terminal, in a file or a report.

Strategy: anything the harness prints that a host, a driver or a server wrote (a driver's
stderr, a status line or a result quoted in a failure message) may carry terminal control
sequences that redraw the screen or fake a prompt. `visible()` keeps newlines and tabs and
shows every other control character (C0, DEL, C1, and the bidirectional overrides and
isolates) as an escape you can read, so nothing reaches the terminal as a control.
`inline()` is for a label that must stay on its line (a client's name or version, a path in
an error line): it shows line breaks and tabs as escapes too, and bounds the length. Any of
that text may also be of any size: `cut()` keeps its head and tail with a marker saying how
much is gone between, so one case quoting 30 MB cannot make a 30 MB report.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["FIELD_LIMIT", "LABEL_LIMIT", "MESSAGE_LIMIT", "cut", "inline", "visible"]

# Characters of one host-supplied field a report keeps (expected, actual, a reason, a
# figure, a monitor's expected and actual), of a failure message (the rule with expected and
# actual), and of a label (a client's name or version, a path named in an error).
FIELD_LIMIT: Final = 4096
MESSAGE_LIMIT: Final = 8192
LABEL_LIMIT: Final = 200

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# ... and everything that ends a line somewhere (str.splitlines breaks at \x1c-\x1e, \x85,
# U+2028 and U+2029 too): a label holds none of them raw.
_LINE_CONTROLS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"<U+{code:04X}>"


def visible(text: str) -> str:
    """`text` with every control character but newline and tab shown as an escape."""
    return _CONTROLS.sub(_shown, text)


def _marker(count: int) -> str:
    return f" … [{count:,} characters cut] … "


def cut(text: str, limit: int = FIELD_LIMIT) -> str:
    """`text` if it has at most `limit` characters; else its head and its tail around a
    marker saying how many characters were cut (`… [12,345,678 characters cut] …`), at most
    `limit` characters in all."""
    if len(text) <= limit:
        return text
    room = limit - len(_marker(len(text)))  # the marker of the most that could be cut
    if room < 2:
        return text[:limit]
    head = room - room // 2
    tail = room // 2
    return text[:head] + _marker(len(text) - head - tail) + text[len(text) - tail :]


def inline(text: object, limit: int = LABEL_LIMIT) -> str:
    """`text` on one line: every control character, line breaks and tabs included, shown as
    an escape; then cut to `limit` characters."""
    return cut(_LINE_CONTROLS.sub(_shown, str(text)), limit)
