"""What a person sees when approving a tool (profiles `pinning`, `instruction-flagging`).

Strategy: approving a tool is approving its text, so the review shows the text the model
will read: the server, the tool's own name, its title and description, its annotations and
its input schema (pretty JSON, cut after a few KiB and marked), and, for a tool that changed
since it was approved, a line diff of the definition before and now, so the person sees
what the server changed rather than rereading all of it. Flags (FLAG-1) come first, where
the eye lands, each with the words that triggered it. Everything is server-written, so
every line passes `display.terminal_safe` and server text is indented
(`display.server_block`), like a tool result: nothing a server writes can draw a line that
looks like the host's own prompt. Pure: the console and the adapter render the same view.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_host_conformance.reference_client.display import server_block, terminal_safe

__all__ = ["REVIEW_PROMPT", "ReviewView", "review_view"]

REVIEW_PROMPT = "Enable this tool? [y/N] "
SCHEMA_LIMIT = 4 * 1024
DIFF_LINES = 60
FLAG_MARK = "!! FLAGGED"


@dataclass(frozen=True)
class ReviewView:
    server: str
    tool: str
    change: str  # "new" | "changed"
    flags: tuple[str, ...]
    text: str  # the whole review item as shown, ending with REVIEW_PROMPT


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _cut(text: str, limit: int) -> str:
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= limit:
        return text
    head = encoded[:limit].decode("utf-8", "ignore")
    return f"{head}\n... [cut at {limit // 1024} KiB]"


def _quoted(value: str) -> str:
    return terminal_safe(json.dumps(value, ensure_ascii=False), one_line=True)


def _diff(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    lines = list(
        difflib.unified_diff(
            _pretty(dict(before)).splitlines(),
            _pretty(dict(now)).splitlines(),
            "approved",
            "now",
            lineterm="",
            n=1,
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... ({len(lines) - DIFF_LINES} more lines of changes)"]
    return lines


def review_view(
    server: str,
    definition: Mapping[str, Any],
    change: str,
    flags: Sequence[str] = (),
    approved_definition: Mapping[str, Any] | None = None,
    position: tuple[int, int] | None = None,
) -> ReviewView:
    """The review item for one pending tool."""
    name = str(definition.get("name", ""))
    counter = f" ({position[0]} of {position[1]})" if position else ""
    why = "new: never approved" if change == "new" else "CHANGED since you approved it"
    lines = [
        f"Tool review{counter}: server {_quoted(server)}, tool {_quoted(name)} ({why})",
    ]
    if flags:
        lines.append(f"  {FLAG_MARK}: this tool's text reads like instructions to the model:")
        lines += [f"    - {terminal_safe(flag, one_line=True)}" for flag in flags]
        lines.append("    Approve it only if you trust this server and that text is harmless.")
    title = definition.get("title")
    if isinstance(title, str) and title:
        lines.append(f"  Title: {_quoted(title)}")
    description = definition.get("description")
    lines.append("  Description:")
    lines.append(
        server_block(description) if isinstance(description, str) and description else "    (none)"
    )
    annotations = definition.get("annotations")
    if annotations is not None:
        lines.append(
            f"  Annotations: {terminal_safe(_cut(_pretty(annotations), 512), one_line=True)}"
        )
    lines.append("  Input schema:")
    lines.append(server_block(_cut(_pretty(definition.get("inputSchema")), SCHEMA_LIMIT)))
    if change == "changed" and approved_definition is not None:
        lines.append("  What changed (- approved, + now):")
        lines.append(server_block("\n".join(_diff(approved_definition, definition))))
    lines.append(REVIEW_PROMPT)
    return ReviewView(
        server=terminal_safe(server, one_line=True),
        tool=terminal_safe(name, one_line=True),
        change=change,
        flags=tuple(terminal_safe(f, one_line=True) for f in flags),
        text="\n".join(lines),
    )
