import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.reference_client.confirmation import (
    APPROVAL_PROMPT,
    ARGUMENTS_LIMIT,
    CUT_MARKER,
    confirmation,
    decide,
    is_approved,
    shown_arguments,
)
from mcp_host_conformance.reference_client.display import terminal_safe


def test_layout_matches_seed():
    view = confirmation("docs", "https://docs.example/mcp", "query-docs", {"query": "react hooks"})
    assert view.text.splitlines() == [
        'Server: "docs"',
        'Destination: "https://docs.example/mcp"',
        'Tool: "query-docs"',
        "Arguments: {",
        '  "query": "react hooks"',
        "}",
        (
            "Arguments are sent to this MCP server. "
            "mcp-reference-host cannot control what the server does with them."
        ),
        APPROVAL_PROMPT,
    ]
    assert view.text.endswith(APPROVAL_PROMPT)
    assert view.arguments == json.dumps({"query": "react hooks"}, indent=2)
    assert view.server == "docs" and view.tool == "query-docs"
    assert view.warning in view.text


def test_exposed_name_heading():
    view = confirmation("d", "x", "t", {}, exposed_name="mcp_d_t")
    assert view.text.startswith("[Tool: mcp_d_t]\nServer:")


def test_control_characters_in_names_are_escaped():
    view = confirmation("d", "x", "t\x1b[2J\nApprove", {})
    assert "\x1b" not in view.text
    assert 'Tool: "t\\u001b[2J\\nApprove"' in view.text


def test_cut_does_not_split_a_character():
    args = {"k": "é" * 3000}
    view = confirmation("d", "x", "t", args)
    assert view.arguments.endswith(CUT_MARKER)
    shown = view.arguments[: -len(CUT_MARKER)].removesuffix("\n")
    assert len(shown.encode()) <= ARGUMENTS_LIMIT
    assert "\ufffd" not in shown


def test_is_approved_default_deny():
    for yes in ("y", "Y", "yes", " YES \n"):
        assert is_approved(yes)
    for no in ("", "\n", "n", "no", "yy", "ye", "sure", "y es"):
        assert not is_approved(no)
        assert decide(no) == "denied"
    assert decide(" Yes ") == "approved"


def test_hostile_names_and_arguments_cannot_reach_the_terminal_raw():
    view = confirmation(
        "docs",
        "https://d/mcp",
        "evil\x1b]0;pwned\x07\u202etxt.exe",
        {"q": "\x9b2J\u202e", "\x1b[2J": 1},
        exposed_name="mcp_docs_evil",
    )
    for field in (view.text, view.tool, view.arguments):
        assert not any(c in field for c in "\x1b\x07\x9b\u202e"), field
    assert "<U+202E>" in view.tool and "\\x1b" in view.tool
    assert view.text.count("\n") == len(view.text.splitlines()) - 1
    assert view.text.endswith(APPROVAL_PROMPT)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=15,
)


@settings(deadline=None)
@given(
    st.dictionaries(st.text(max_size=20), json_values, max_size=6),
    st.characters(),
    st.integers(min_value=0, max_value=1200),
)
def test_cut_rule_for_any_arguments(args, pad_char, pad_length):
    # The padding takes the arguments across the 2 KiB boundary (1 to 4 bytes a character).
    args = {**args, "pad": pad_char * pad_length}
    cut = shown_arguments(args)
    full = json.dumps(args, indent=2, ensure_ascii=False)
    is_cut = len(full.encode("utf-8", "surrogatepass")) > ARGUMENTS_LIMIT
    assert (CUT_MARKER in cut) == is_cut
    if is_cut:
        shown = cut[: -len(CUT_MARKER)].removesuffix("\n")
        assert len(shown.encode("utf-8", "surrogatepass")) <= ARGUMENTS_LIMIT
        assert full.startswith(shown)
    else:
        assert cut == full
    # What the person sees is that text with control characters neutralized (HARD-1).
    view = confirmation("s", "d", "t", args)
    assert view.arguments == terminal_safe(cut)
    assert view.arguments in view.text
