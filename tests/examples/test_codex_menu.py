"""examples/codex: an MCP approval request from Codex, shown and answered as Codex's own
terminal UI does (no Codex binary needed: the request is one Codex 0.171.0 sent)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "examples" / "codex" / "codex_adapter" / "menu.py"
_spec = importlib.util.spec_from_file_location("codex_menu", _PATH)
menu = importlib.util.module_from_spec(_spec)
sys.modules["codex_menu"] = menu
_spec.loader.exec_module(menu)

REQUEST = {
    "threadId": "01a22e4d-96a8-74b1-9749-001781610055",
    "turnId": "01a22e4d-96d0-7582-b621-5294b74ad02a",
    "serverName": "docs",
    "environmentId": None,
    "mode": "form",
    "_meta": {
        "codex_approval_kind": "mcp_tool_call",
        "persist": ["session", "always"],
        "tool_name": "query",
        "tool_params": {"q": "x"},
        "tool_params_display": [],
    },
    "message": 'Allow the docs MCP server to run tool "query"?',
    "requestedSchema": {"type": "object", "properties": {}},
}


def test_the_request_is_shown_as_codexs_menu_with_its_default():
    confirmation, choices = menu.approval_menu(REQUEST)
    assert choices == ["Approve Once", "Approve this session", "Always allow", "Cancel"]
    assert confirmation.choices == tuple(choices) and confirmation.default == "Approve Once"
    assert (confirmation.server, confirmation.tool) == ("docs", "query")
    assert confirmation.destination == ""  # Codex does not say where the call goes
    assert '"q": "x"' in confirmation.arguments and "> 1. Approve Once" in confirmation.text


def test_answers_pick_from_the_menu_as_a_person_would():
    _, choices = menu.approval_menu(REQUEST)
    accept = {"action": "accept", "content": None, "_meta": None}
    cancel = {"action": "cancel", "content": None, "_meta": None}
    assert menu.chosen_response("", choices) == accept  # Enter: Codex's default entry
    assert menu.chosen_response("y", choices) == accept
    for refusal in ("n", "no", "maybe"):
        assert menu.chosen_response(refusal, choices) == cancel


def test_other_elicitations_are_not_approvals():
    other = {**REQUEST, "_meta": {"some": "form"}}
    assert menu.approval_menu(other) is None
    without_persist = {**REQUEST, "_meta": {**REQUEST["_meta"], "persist": None}}
    assert menu.approval_menu(without_persist)[1] == ["Approve Once", "Cancel"]
