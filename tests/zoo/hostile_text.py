"""Broken clients for HARD (terminal control characters from servers).

Each replaces `display.terminal_safe`, wherever it is looked up for what is shown (the
terminal, the adapter's record, confirmations, status lines, turns, command output; not
`config`, which uses it to validate URLs), by one that neutralizes only part of what it
must: the common partial fixes.
"""

from __future__ import annotations

import re

from mcp_host_conformance.zoo.client import BrokenClient, Seam, pure

_CLIENT = "mcp_host_conformance.reference_client"
_SHOWN_BY = (
    *("display", "adapter", "cli", "confirmation", "console"),
    *("discovery", "engine", "server_commands", "turn"),
)
_TARGETS = tuple(f"{_CLIENT}.{module}.terminal_safe" for module in _SHOWN_BY)

# The strip-ansi pattern: CSI sequences only (ESC [ parameters intermediates final).
_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def _partial(handled: str, handled_one_line: str):
    """A `terminal_safe` that passes the characters matching `handled` (`handled_one_line`
    in one-line mode) to the real one and shows every other character as it came."""
    multi, single = re.compile(handled), re.compile(handled_one_line)

    @pure
    def make(original):
        def terminal_safe(text, *, one_line=False):
            pattern = single if one_line else multi
            return pattern.sub(lambda m: original(m.group(), one_line=one_line), text)

        return terminal_safe

    return make


@pure
def _strip_csi(original):
    lines = re.compile(r"[\n\t]")

    def terminal_safe(text, *, one_line=False):
        text = _CSI.sub("", text)
        if one_line:  # still one line: what it gets right
            text = lines.sub(lambda m: original(m.group(), one_line=True), text)
        return text

    return terminal_safe


# C0 (but newline and tab in multi-line text) and DEL; C1 and Unicode format characters
# (bidi overrides, isolates) pass raw.
_C0_ONLY = _partial(r"[\x00-\x08\x0b-\x1f\x7f]", r"[\x00-\x1f\x7f]")
# Every control character (C0, DEL, C1); Unicode format characters pass raw.
_CONTROLS_ONLY = _partial(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", r"[\x00-\x1f\x7f-\x9f]")

CLIENTS = [
    BrokenClient(
        "strips-ansi-csi-only",
        "Removes ANSI CSI sequences (ESC [ ...) from server text and shows the rest raw: OSC, "
        "other C0 controls, C1 and bidi overrides.",
        {"HARD-1"},
        tuple(Seam(target, _strip_csi) for target in _TARGETS),
    ),
    BrokenClient(
        "neutralizes-c0-only",
        "Neutralizes C0 controls and DEL in server text but shows C1 controls and bidi "
        "overrides raw.",
        {"HARD-1"},
        tuple(Seam(target, _C0_ONLY) for target in _TARGETS),
    ),
    BrokenClient(
        "keeps-bidi-controls",
        "Neutralizes every control character (C0, DEL, C1) in server text but shows bidi "
        "overrides and isolates raw.",
        {"HARD-1"},
        tuple(Seam(target, _CONTROLS_ONLY) for target in _TARGETS),
    ),
]
