"""Codex's MCP tool approval, shown as Codex's own terminal UI shows it.

Strategy: Codex asks for an MCP call's approval with an `mcpServer/elicitation/request`
whose `_meta.codex_approval_kind` is `mcp_tool_call`. Its terminal UI turns that request
into a menu (codex-rs/tui, bottom_pane/mcp_server_elicitation.rs): "Approve Once", then
"Approve this session" and "Always allow" when `_meta.persist` offers them, then "Cancel",
with the first entry selected, so Enter approves. The adapter shows the same menu and
picks from it as a person would: an empty answer is Enter (the selected entry), "y" picks
"Approve Once", and anything else picks "Cancel", the one refusal the menu offers. The
answer sent back is what that entry sends in Codex's UI.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_host_conformance.harness.contract.adapter import Confirmation

__all__ = ["APPROVE_ONCE", "CANCEL", "approval_menu", "chosen_response"]

APPROVE_ONCE = "Approve Once"
APPROVE_SESSION = "Approve this session"
ALWAYS_ALLOW = "Always allow"
CANCEL = "Cancel"
_RESPONSES: dict[str, dict[str, Any]] = {
    APPROVE_ONCE: {"action": "accept", "content": None, "_meta": None},
    APPROVE_SESSION: {"action": "accept", "content": None, "_meta": {"persist": "session"}},
    ALWAYS_ALLOW: {"action": "accept", "content": None, "_meta": {"persist": "always"}},
    CANCEL: {"action": "cancel", "content": None, "_meta": None},
}


def _offers(persist: Any, mode: str) -> bool:
    return persist == mode or (isinstance(persist, list) and mode in persist)


def approval_menu(params: dict[str, Any]) -> tuple[Confirmation, list[str]] | None:
    """The confirmation and menu entries for an MCP tool approval request; None for any
    other elicitation."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or meta.get("codex_approval_kind") != "mcp_tool_call":
        return None
    choices = [APPROVE_ONCE]
    if _offers(meta.get("persist"), "session"):
        choices.append(APPROVE_SESSION)
    if _offers(meta.get("persist"), "always"):
        choices.append(ALWAYS_ALLOW)
    choices.append(CANCEL)
    arguments = json.dumps(meta.get("tool_params"), indent=2, ensure_ascii=False)
    message = str(params.get("message", ""))
    menu = "\n".join(f"{'>' if k == 0 else ' '} {k + 1}. {c}" for k, c in enumerate(choices))
    confirmation = Confirmation(
        server=str(params.get("serverName", "")),
        destination="",  # Codex's approval does not say where the call goes
        tool=str(meta.get("tool_name", "")),
        arguments=arguments,
        warning="",
        text=f"{message}\n{arguments}\n{menu}",
        choices=tuple(choices),
        default=choices[0],  # selected when the menu opens: Enter picks it
    )
    return confirmation, choices


def chosen_response(answer: str, choices: list[str]) -> dict[str, Any]:
    """What Codex's UI answers for the entry the person picked with `answer`."""
    if answer == "":
        picked = choices[0]  # Enter: the selected entry
    elif answer == "y":
        picked = APPROVE_ONCE
    else:
        picked = CANCEL
    return dict(_RESPONSES[picked])
