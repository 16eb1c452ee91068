"""The names a host may offer an MCP tool under (EXP-1, EXP-2), read by EXP-2's case and by
the exposed-names monitor alike: the pattern every name matches, and the guessed
replacements EXP-2 forbids for a `mcp_<server>_<tool>` that does not match it (its case
and its monitor must not disagree on what a guess is)."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["COUNTED", "DISALLOWED", "NAME_PATTERN", "guessed", "guesses", "is_valid"]

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")  # always fullmatch: `$` accepts "x\n"
DISALLOWED = re.compile(r"[^A-Za-z0-9_-]")
COUNTED = re.compile(r"(.*?)[_-]?\d{1,2}")  # a name made unique with a small counter


def is_valid(name: str) -> bool:
    return NAME_PATTERN.fullmatch(name) is not None


def guesses(server: str, name: str) -> set[str]:
    """The replacements EXP-2 forbids for an awkward `mcp_<server>_<tool>`: disallowed
    characters replaced by `_` or `-` or dropped, before or after transliteration (é -> e),
    lower-cased or not, cut at 64."""
    raw = f"mcp_{server}_{name}"
    transliterated = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode()
    found = set()
    for base in (raw, transliterated):
        for replacement in ("_", "-", ""):
            guess = DISALLOWED.sub(replacement, base)
            found.update({guess[:64], guess.lower()[:64]})
    return found


def guessed(offered: str, server: str, name: str) -> bool:
    """Whether `offered` is a guess, or a guess (cut to make room) with a small counter."""
    candidates = guesses(server, name)
    if offered in candidates:
        return True
    counted = COUNTED.fullmatch(offered)
    stem = counted.group(1) if counted else None
    return bool(stem) and any(
        g.startswith(stem) and len(stem) >= len(g) - 6 for g in candidates if stem
    )
