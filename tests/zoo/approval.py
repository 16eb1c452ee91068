"""Broken clients for APR: approval."""

from __future__ import annotations

import dataclasses

from mcp_host_conformance.zoo.client import BrokenClient, constant, replaced


@replaced("mcp_host_conformance.reference_client.turn.Conversation.ask_approval")
def _yes_for_the_turn(original):
    async def approve(self, offered, view, report):
        if getattr(report, "zoo_approved", False):
            return "approved"  # one yes approves the rest of the turn
        decision = await original(self, offered, view, report)
        report.zoo_approved = decision == "approved"
        return decision

    return approve


@replaced("mcp_host_conformance.reference_client.confirmation.is_approved")
def _empty_is_yes(original):
    def is_approved(answer):
        return not answer.strip() or original(answer)

    return is_approved


@replaced("mcp_host_conformance.reference_client.turn.Conversation.ask_approval")
def _skip_read_only(original):
    async def approve(self, offered, view, report):
        if (offered.tool.get("annotations") or {}).get("readOnlyHint") is True:
            return "approved"
        return await original(self, offered, view, report)

    return approve


@replaced("mcp_host_conformance.reference_client.turn.Conversation.ask_approval")
def _never_ask(original):
    del original

    async def approve(self, offered, view, report):
        return "approved"

    return approve


@replaced("mcp_host_conformance.reference_client.confirmation.confirmation")
def _exposed_name(original):
    def confirmation(server, destination, tool, arguments, *, exposed_name=None):
        return original(
            server, destination, exposed_name or tool, arguments, exposed_name=exposed_name
        )

    return confirmation


@replaced("mcp_host_conformance.reference_client.turn.Conversation.ask_approval")
def _headers_in_confirmation(original):
    async def approve(self, offered, view, report):
        server = self.discovery.servers[offered.server]
        headers = getattr(server.session.transport, "_headers", {}) or {}
        if headers:
            shown = "\n".join(f"Header {k}: {v}" for k, v in headers.items())
            view = dataclasses.replace(view, text=f"{shown}\n{view.text}")
        return await original(self, offered, view, report)

    return approve


CLIENTS = [
    BrokenClient(
        "approves-rest-of-turn",
        "After the first approved call of a turn, the turn's later calls are not confirmed.",
        # APR-4 and CRED-3: their cases need a confirmation for each of two calls in one turn
        {"APR-1", "APR-4", "CRED-3"},
        (_yes_for_the_turn,),
        target="APR-1",
    ),
    BrokenClient(
        "empty-answer-approves",
        "An empty answer at the confirmation approves (default yes).",
        {"APR-2", "APR-3"},  # APR-3: its case answers the annotated tool's confirmation with ""
        (_empty_is_yes,),
        target="APR-2",
    ),
    BrokenClient(
        "skips-approval-readonly",
        "Calls tools annotated readOnlyHint: true without asking.",
        {"APR-3"},
        (_skip_read_only,),
    ),
    BrokenClient(
        "no-approval",
        "Never asks: every MCP call is sent at once.",
        {
            "APR-1",
            "APR-2",
            "APR-3",
            "APR-4",
            "APR-5",
            "CRED-3",
        },  # CRED-3: no confirmation to search
        (_never_ask,),
        target="APR-1",
    ),
    BrokenClient(
        "shows-exposed-tool-name",
        "The confirmation's Tool is the exposed function name, not the server's tool name.",
        {"APR-4"},
        (_exposed_name,),
    ),
    BrokenClient(
        "cuts-arguments-silently",
        "Cuts the shown arguments at 2 KiB without marking the cut.",
        {"APR-5"},
        (constant("mcp_host_conformance.reference_client.confirmation.CUT_MARKER", ""),),
        target="APR-5",
    ),
    BrokenClient(
        "header-in-confirmation",
        "Shows the server's configured headers in the confirmation text.",
        {"CRED-3"},
        (_headers_in_confirmation,),
    ),
]
