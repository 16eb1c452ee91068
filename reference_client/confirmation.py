"""The confirmation shown before every MCP call (APR-2, APR-4, APR-5).

Strategy: approving a call is a decision about where the arguments go, so the text names
the configured server, its destination, and the server's own tool name (not the exposed
function name), then the arguments as pretty-printed JSON. Long arguments are cut after
2 KiB of UTF-8 (never inside a character) and visibly marked; the server still receives
them whole. Names are shown as JSON strings on one line and everything passes through
`display.terminal_safe`, so a hostile tool name or argument can neither send terminal
control sequences nor fake extra lines (HARD-1). Only an explicit yes approves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from mcp_host_conformance.reference_client.display import terminal_safe

__all__ = [
    "APPROVAL_PROMPT",
    "ARGUMENTS_LIMIT",
    "CUT_MARKER",
    "WARNING",
    "ApprovalDecision",
    "ConfirmationView",
    "confirmation",
    "decide",
    "is_approved",
    "shown_arguments",
]

APPROVAL_PROMPT = "Approve this operation? [y/N] "
ARGUMENTS_LIMIT = 2 * 1024
CUT_MARKER = "... [arguments cut at 2 KiB; the server receives them whole]"
WARNING = (
    "Arguments are sent to this MCP server. "
    "mcp-reference-host cannot control what the server does with them."
)


ApprovalDecision = Literal["approved", "denied"]


@dataclass(frozen=True)
class ConfirmationView:
    server: str
    destination: str
    tool: str
    arguments: str  # as shown: pretty JSON, maybe cut and then ending with CUT_MARKER
    warning: str
    text: str  # the whole confirmation as shown, ending with APPROVAL_PROMPT


def _quoted(value: str) -> str:
    return terminal_safe(json.dumps(value, ensure_ascii=False), one_line=True)


def _pretty(arguments: Any) -> str:
    try:
        return json.dumps(arguments, indent=2, ensure_ascii=False, default=repr)
    except (ValueError, TypeError, RecursionError):
        return repr(arguments)


def shown_arguments(arguments: Any) -> str:
    """Pretty JSON, cut after ARGUMENTS_LIMIT bytes of UTF-8 and then marked."""
    text = _pretty(arguments)
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= ARGUMENTS_LIMIT:
        return text
    # Decoding with "ignore" drops only the partial character at the cut.
    head = encoded[:ARGUMENTS_LIMIT].decode("utf-8", "ignore")
    return f"{head}\n{CUT_MARKER}"


def confirmation(
    server: str,
    destination: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    exposed_name: str | None = None,
) -> ConfirmationView:
    """The confirmation for one call. `exposed_name`, if given, heads it as `[Tool: NAME]`."""
    shown = terminal_safe(shown_arguments(arguments))
    lines = []
    if exposed_name is not None:
        lines.append(f"[Tool: {terminal_safe(exposed_name, one_line=True)}]")
    lines += [
        f"Server: {_quoted(server)}",
        f"Destination: {_quoted(destination)}",
        f"Tool: {_quoted(tool)}",
        f"Arguments: {shown}",
        WARNING,
        APPROVAL_PROMPT,
    ]
    return ConfirmationView(
        server=terminal_safe(server, one_line=True),
        destination=terminal_safe(destination, one_line=True),
        tool=terminal_safe(tool, one_line=True),
        arguments=shown,
        warning=WARNING,
        text="\n".join(lines),
    )


def is_approved(answer: str) -> bool:
    """Default deny: only "y" or "yes" (any case, surrounding blanks ignored) approves."""
    return answer.strip().lower() in ("y", "yes")


def decide(answer: str) -> ApprovalDecision:
    """What the person's answer at the prompt decides (APR-2: anything but yes denies)."""
    return "approved" if is_approved(answer) else "denied"
