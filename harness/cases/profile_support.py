"""What the optional profiles' cases read from journals and answers, written once.

Strategy: the profile cases observe rules through the same journals as the core cases; the
few readings they share (how many calls of one tool a server received, which tools a review
showed, where an output says it is untrusted) live here, as pure functions of journal
entries and records, so each case states its rule and not its plumbing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

from mcp_host_conformance.harness.cases.mock_contract import Journal
from mcp_host_conformance.harness.cases.observe import output_text
from mcp_host_conformance.harness.contract.adapter import PendingTool, ToolReview

__all__ = [
    "UNTRUSTED_LINE",
    "calls_of",
    "called_tools",
    "reviewed",
    "untrusted_marking",
]


def called_tools(journal: Journal) -> list[str]:
    """The tool name of every `tools/call` the server received, in order."""
    names = []
    for entry in journal.entries("tools/call", kind="rpc"):
        params = entry.params if isinstance(entry.params, dict) else {}
        names.append(str(params.get("name")))
    return names


def calls_of(journal: Journal, tool: str) -> int:
    """How many `tools/call` for `tool` the server received."""
    return called_tools(journal).count(tool)


def call_arguments(journal: Journal, tool: str) -> list[Any]:
    """The `arguments` of every `tools/call` for `tool`, as the server received them."""
    found = []
    for entry in journal.entries("tools/call", kind="rpc"):
        params = entry.params if isinstance(entry.params, dict) else {}
        if params.get("name") == tool:
            found.append(params.get("arguments"))
    return found


def reviewed(reviews: Iterable[ToolReview], server: str | None = None) -> dict[str, PendingTool]:
    """tool name -> how the last review that showed it presented it (of `server`, if given)."""
    shown: dict[str, PendingTool] = {}
    for review in reviews:
        for pending in review.tools:
            if server is None or pending.server == server:
                shown[pending.tool] = pending
    return shown


# UNTR-1 as the catalog documents it: the output handed to the model says `untrusted: true`,
# either as a member of a JSON object output or as a line of its own (`untrusted: true`,
# any case, maybe followed by the host's words) before the server's content.
UNTRUSTED_LINE: Final = re.compile(
    r"""^[ \t]*["'`]?untrusted["'`]?[ \t]*[:=][ \t]*true\b""", re.IGNORECASE | re.MULTILINE
)


def untrusted_marking(output: object, content: str) -> str | None:
    """Why this function_call_output is not marked untrusted as UNTR-1 documents it (None
    when it is). `content`: text the server returned, which the marking must precede."""
    structured: object = output if isinstance(output, dict) else None
    text = output_text(output)
    if structured is None:
        try:
            structured = json.loads(text)
        except (ValueError, RecursionError):
            structured = None
    if isinstance(structured, dict):
        if structured.get("untrusted") is True:
            return None
        return 'a JSON object output without `"untrusted": true`'
    found = UNTRUSTED_LINE.search(text)
    if found is None:
        return f"no `untrusted: true` in the output the model received ({text[:160]!r})"
    at = text.find(content) if content else -1
    if at != -1 and found.start() > at:
        return "`untrusted: true` only after the server's content (a host's marking comes first)"
    return None
