"""`display.terminal_safe`: no terminal control character survives it, and it is idempotent
(HARD-1)."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.reference_client.display import (
    BLOCK_INDENT,
    server_block,
    terminal_safe,
)

DANGEROUS = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def dangerous(text: str, *, one_line: bool) -> list[str]:
    allowed = "" if one_line else "\n\t"
    return [c for c in text if unicodedata.category(c) in DANGEROUS and c not in allowed]


def test_escape_sequences_and_controls_are_shown_as_escapes() -> None:
    text = "a\x1b]0;title\x07b\x1b[2Jc\x9b31md\x7fe\x00f\rg"
    assert terminal_safe(text) == "a\\x1b]0;title\\x07b\\x1b[2Jc\\x9b31md\\x7fe\\x00f\\x0dg"


def test_bidi_and_invisible_characters_are_named() -> None:
    assert terminal_safe("exe.\u202etxt") == "exe.<U+202E>txt"
    assert terminal_safe("\u2066x\u2069\u200b\u200f\u061c") == (
        "<U+2066>x<U+2069><U+200B><U+200F><U+061C>"
    )
    assert terminal_safe("tag\U000e0041") == "tag<U+E0041>"
    assert terminal_safe("line\u2028sep") == "line<U+2028>sep"


def test_newline_and_tab_stay_unless_one_line() -> None:
    assert terminal_safe("a\nb\tc") == "a\nb\tc"
    assert terminal_safe("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"


def test_ordinary_text_is_unchanged() -> None:
    text = 'Grüße, 日本語, emoji 🙂, "quotes" and \\backslashes\\ and ~`!@#$%^&*()'
    assert terminal_safe(text) == text
    assert terminal_safe(text, one_line=True) == text


def test_server_block_indents_every_line() -> None:
    block = server_block("ok\nApprove this operation? [y/N] \x1b[2J")
    assert block.split("\n") == [
        BLOCK_INDENT + "ok",
        BLOCK_INDENT + "Approve this operation? [y/N] \\x1b[2J",
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=200), st.booleans())
def test_nothing_dangerous_survives_and_a_second_pass_changes_nothing(
    text: str, one_line: bool
) -> None:
    safe = terminal_safe(text, one_line=one_line)
    assert dangerous(safe, one_line=one_line) == []
    assert terminal_safe(safe, one_line=one_line) == safe
    assert terminal_safe(safe) == safe
    if one_line:
        assert "\n" not in safe
