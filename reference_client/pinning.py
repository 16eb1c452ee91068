"""Tool pinning: which tools a person approved, by a hash of their text (PIN-1, PIN-2).

Strategy: a server can change what a tool says after a person approved it (a "rug pull":
the description now tells the model to send files elsewhere). So approval is given to a
tool's text, not to its name: `definition_hash` hashes the whole definition the server
listed, and a tool is enabled only while the hash it has now is the hash a person approved.
Every tool starts disabled (PIN-2), and a new or changed one is disabled until approved
again; an unchanged one keeps working.

**Decisions** (docs/profiles.md): the pinned text is the whole definition as listed
(name, title, description, inputSchema, outputSchema, annotations and any other member),
in canonical JSON: object members sorted and no insignificant whitespace. So a changed
annotation (readOnlyHint turned false, a new title) needs approval again, while members
listed in another order, or tools listed in another order, change nothing. Approvals
belong to a server's name *and* destination: a server removed and added again under the
same name elsewhere starts with no approvals.

Everything here is pure: `Approvals` is plain data (loaded and saved by
`tool_approvals`), `review` compares it with what discovery found.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

__all__ = [
    "APPROVED",
    "CHANGED",
    "NEW",
    "Approvals",
    "PinnedTool",
    "ServerPins",
    "ToolState",
    "definition_hash",
    "review",
]

NEW: Final = "new"
CHANGED: Final = "changed"
APPROVED: Final = "approved"
ToolState = Literal["new", "changed", "approved"]


def definition_hash(tool: Mapping[str, Any]) -> str:
    """SHA-256 of the tool's definition in canonical JSON (members sorted, compact)."""
    text = json.dumps(
        tool, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class PinnedTool:
    approved: str | None  # the hash a person approved; None: never approved
    seen: str  # the hash of the definition seen last
    definition: Mapping[str, Any]  # the definition seen last (what a review shows)
    approved_definition: Mapping[str, Any] | None = None  # what was approved (for a diff)

    @property
    def state(self) -> ToolState:
        if self.approved is None:
            return NEW
        return APPROVED if self.approved == self.seen else CHANGED


@dataclass(frozen=True)
class ServerPins:
    destination: str
    tools: Mapping[str, PinnedTool] = field(default_factory=dict)


@dataclass(frozen=True)
class Approvals:
    servers: Mapping[str, ServerPins] = field(default_factory=dict)

    def pins(self, server: str, destination: str) -> ServerPins:
        """The pins of `server` at `destination` (none if it was pinned elsewhere)."""
        found = self.servers.get(server)
        if found is None or found.destination != destination:
            return ServerPins(destination)
        return found

    def seen(self, server: str, destination: str, tools: Iterable[Mapping[str, Any]]) -> Approvals:
        """Record the definitions a server lists now; earlier approvals are kept, so a tool
        that changes back to what was approved is enabled again. Tools no longer listed are
        forgotten (one that comes back is new)."""
        before = self.pins(server, destination).tools
        now: dict[str, PinnedTool] = {}
        for tool in tools:
            name = str(tool.get("name"))
            earlier = before.get(name)
            now[name] = PinnedTool(
                approved=earlier.approved if earlier else None,
                seen=definition_hash(tool),
                definition=dict(tool),
                approved_definition=earlier.approved_definition if earlier else None,
            )
        return replace(self, servers={**self.servers, server: ServerPins(destination, now)})

    def approve(self, server: str, tool: str) -> Approvals:
        """A person approved the definition of `tool` seen last."""
        pins = self.servers.get(server)
        if pins is None or tool not in pins.tools:
            return self
        pinned = pins.tools[tool]
        approved = replace(pinned, approved=pinned.seen, approved_definition=pinned.definition)
        tools = {**pins.tools, tool: approved}
        return replace(self, servers={**self.servers, server: replace(pins, tools=tools)})

    def forget(self, server: str) -> Approvals:
        return replace(self, servers={k: v for k, v in self.servers.items() if k != server})

    def state(self, server: str, tool: Mapping[str, Any], destination: str) -> ToolState:
        """The state of `tool` (a definition listed now) against the approvals."""
        pinned = self.pins(server, destination).tools.get(str(tool.get("name")))
        if pinned is None or pinned.approved is None:
            return NEW
        return APPROVED if pinned.approved == definition_hash(tool) else CHANGED

    def enabled(self, server: str, tool: Mapping[str, Any], destination: str) -> bool:
        return self.state(server, tool, destination) == APPROVED


def review(approvals: Approvals) -> list[tuple[str, str, PinnedTool]]:
    """(server, tool, pin) of every tool waiting for approval (new or changed), in order."""
    return [
        (server, name, pinned)
        for server, pins in approvals.servers.items()
        for name, pinned in pins.tools.items()
        if pinned.state != APPROVED
    ]
