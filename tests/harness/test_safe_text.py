"""Host text made safe: visible controls, labels on one line, bounded fields."""

from hypothesis import given
from hypothesis import strategies as st

from mcp_host_conformance.harness.verdicts.safe_text import (
    FIELD_LIMIT,
    LABEL_LIMIT,
    cut,
    inline,
    visible,
)


def test_visible_keeps_newlines_and_shows_every_other_control():
    assert visible("a\nb\tc\x1b[2J\x85\u202e") == "a\nb\tc\\x1b[2J\\x85<U+202E>"


def test_short_text_is_not_cut():
    assert cut("x" * FIELD_LIMIT) == "x" * FIELD_LIMIT


def test_long_text_keeps_its_head_and_tail_and_says_how_much_is_gone():
    text = "H" * 15_000_000 + "T" * 15_000_000
    shown = cut(text)
    assert len(shown) <= FIELD_LIMIT
    head, _, rest = shown.partition(" … [")
    count, _, tail = rest.partition(" characters cut] … ")
    assert set(head) == {"H"} and set(tail) == {"T"}
    assert len(head) + int(count.replace(",", "")) + len(tail) == len(text)


@given(st.text(), st.integers(min_value=0, max_value=300))
def test_cut_is_bounded_and_leaves_short_text_alone(text, limit):
    shown = cut(text, limit)
    assert len(shown) <= limit or (len(text) <= limit and shown == text)
    if len(text) <= limit:
        assert shown == text


@given(st.text())
def test_a_label_is_one_line_without_controls_and_bounded(text):
    label = inline(text)
    assert len(label) <= LABEL_LIMIT
    assert label.splitlines() in ([label], [])
    assert label == visible(label)
    assert "\t" not in label


def test_a_label_shows_line_breaks_as_escapes():
    assert inline("x\nAPR-1\r\u2028\x1b[2J") == "x\\x0aAPR-1\\x0d<U+2028>\\x1b[2J"
