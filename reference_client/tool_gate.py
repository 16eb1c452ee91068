"""The gate between discovered tools and the model (profiles `pinning`, `instruction-flagging`).

Strategy: discovery finds what each server lists; with pinning switched on, the gate
records those definitions against the approvals file (a new tool, or one whose text
changed, waits for a person; `pinning.Approvals`) and hands the policy the approvals, so
only approved tools are offered and callable (PIN-1, PIN-2). A review walks the waiting
tools one by one, shows each as `tool_review.review_view` renders it (with the flags of
`flagging.flags` when instruction-flagging is on, FLAG-1), asks the person, and saves the
answers when the review ends, however it ends (an answer that fails, a cancel), so an
approval applies to the next start too; a review killed midway is asked again, which fails
closed. The approvals file is read and written here; the rules are in `pinning`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_host_conformance.reference_client import flagging
from mcp_host_conformance.reference_client.discovery import Discovery
from mcp_host_conformance.reference_client.pinning import Approvals, review
from mcp_host_conformance.reference_client.policy import ProfilePolicy
from mcp_host_conformance.reference_client.profiles import INSTRUCTION_FLAGGING, PINNING
from mcp_host_conformance.reference_client.tool_approvals import ApprovalStore
from mcp_host_conformance.reference_client.tool_review import ReviewView, review_view

__all__ = ["ToolGate"]

ReviewAnswer = Callable[[ReviewView], Awaitable[bool]]


class ToolGate:
    def __init__(self, environ: Mapping[str, str], policy: ProfilePolicy) -> None:
        self.policy = policy
        self.pinning = policy.settings.has(PINNING)
        self.flagging = policy.settings.has(INSTRUCTION_FLAGGING)
        self.store = ApprovalStore(environ) if self.pinning else None
        self._servers: dict[str, str] = {}  # the connected servers: name -> destination

    def flags(self, tool: Mapping[str, Any]) -> list[str]:
        return flagging.flags(tool) if self.flagging else []

    def record(self, discovery: Discovery) -> list[str]:
        """Record what the connected servers list now; notices for the person."""
        self._servers = {name: s.destination for name, s in discovery.servers.items()}
        notices: list[str] = []
        if self.store is not None:
            approvals = self.store.load()
            for name, server in discovery.servers.items():
                approvals = approvals.seen(name, server.destination, server.tools)
            self.store.save(approvals)
            self.policy.approvals = approvals
            waiting = self.waiting()
            if waiting:
                notices.append(
                    f"{len(waiting)} MCP tool(s) wait for your approval (new, or changed since "
                    "you approved them) and cannot be called until then: "
                    + ", ".join(f"{server}/{tool}" for server, tool, _pin in waiting[:8])
                    + (" ..." if len(waiting) > 8 else "")
                    + ". Review them with /review."
                )
        elif self.flagging:
            for name, server in discovery.servers.items():
                for tool in server.tools:
                    found = self.flags(tool)
                    if found:
                        notices.append(
                            f"!! FLAGGED: tool {tool.get('name')!s} of {name} reads like "
                            f"instructions to the model: {'; '.join(found)}"
                        )
        return notices

    def waiting(self) -> list[tuple[str, str, Any]]:
        """(server, tool, pin) of every tool of a connected server that waits for approval."""
        return [
            entry
            for entry in review(self.policy.approvals)
            if entry[0] in self._servers
            and self.policy.approvals.servers[entry[0]].destination == self._servers[entry[0]]
        ]

    async def review(self, answer: ReviewAnswer) -> list[tuple[ReviewView, bool]]:
        """Ask the person about each waiting tool; the approvals given are saved once the
        review ends, however it ends (an answer that fails, a cancel): one write, not one a
        tool, which on a busy disk made a review of 256 tools take over a minute (each save
        rewrites the whole file and syncs it twice)."""
        if self.store is None:
            return []
        waiting = self.waiting()
        shown: list[tuple[ReviewView, bool]] = []
        before = self.policy.approvals
        try:
            for index, (server, tool, pin) in enumerate(waiting, start=1):
                view = review_view(
                    server,
                    pin.definition,
                    pin.state,
                    self.flags(pin.definition),
                    pin.approved_definition,
                    (index, len(waiting)),
                )
                approved = await answer(view)
                shown.append((view, approved))
                if approved:
                    approvals: Approvals = self.policy.approvals.approve(server, tool)
                    self.policy.approvals = approvals
        finally:
            if self.policy.approvals is not before:
                self.store.save(self.policy.approvals)
        return shown
