"""What a person is shown: text with terminal control characters neutralized (HARD-1).

Strategy: tool names, results, error messages and status reasons are written by servers we
do not trust, and a terminal obeys what it is sent: an ESC sequence can set the window
title, clear the screen or move the cursor; a C1 CSI (U+009B) does the same on some
terminals; a bidi override (U+202E) makes `exe.txt` read as `txt.exe`. So every text shown
passes through `terminal_safe`, which replaces each such character by a visible escape
(`\\x1b`, `\\x9b`, `<U+202E>`) that a person can still read. It is the one function for
everything shown, in the terminal and in what the adapter reports alike, and it is
idempotent: applying it twice changes nothing, so each layer may apply it again.

Newline and tab stay in multi-line text (results are multi-line) but are escaped in
`one_line` mode (status lines, names). A server line could still read like one of our
prompts; `server_block` therefore indents every line of server-written text, and
`answer_block` every line of the model's answers (which may quote a server), so nothing from
outside starts a line at the left margin, where the host's own prompts are.

Neutralized: C0 controls (but newline and tab in multi-line text), DEL, C1 controls, and
the Unicode format characters (bidi overrides, embeddings, isolates and marks, zero-width
characters, invisible tag characters), line and paragraph separators and lone surrogates.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["ANSWER_INDENT", "BLOCK_INDENT", "answer_block", "server_block", "terminal_safe"]

BLOCK_INDENT = "  | "
ANSWER_INDENT = "  "

# Candidates only: runs of characters outside printable ASCII, newline and tab. Most text
# is ASCII, so the per-character decision below runs rarely, and once per distinct character.
_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]+")
_CANDIDATE_ONE_LINE = re.compile(r"[^\x20-\x7e]+")
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


@functools.lru_cache(maxsize=4096)
def _escaped_char(char: str) -> str:
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    if unicodedata.category(char) in _ESCAPED_CATEGORIES:
        return f"<U+{code:04X}>"
    return char


def _escape(match: re.Match[str]) -> str:
    return "".join(map(_escaped_char, match.group()))


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """`text` with every terminal control character replaced by a visible escape.

    `one_line`: newline and tab are escaped too, so the text cannot start another line.
    """
    pattern = _CANDIDATE_ONE_LINE if one_line else _CANDIDATE
    return pattern.sub(_escape, text)


def _indented(text: str, indent: str) -> str:
    return "\n".join(indent + line for line in terminal_safe(text).split("\n"))


def server_block(text: str) -> str:
    """Server-written, multi-line text as shown: neutralized, every line indented."""
    return _indented(text, BLOCK_INDENT)


def answer_block(text: str) -> str:
    """The model's answer as shown: neutralized, every line indented."""
    return _indented(text, ANSWER_INDENT)
