"""Broken clients for RETRY (uncertain outcomes) and TURN (limits inside one turn)."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import BrokenClient, constant, replaced


@replaced("mcp_host_conformance.reference_client.turn.Conversation.send_call")
def _retry_after_timeout(original):
    from mcp_host_conformance.reference_client import results

    async def call(self, server, tool, arguments):
        outcome = await original(self, server, tool, arguments)
        if outcome.status == results.UNKNOWN and "call timeout" in outcome.output:
            outcome = await original(self, server, tool, arguments)  # "it was probably lost"
        return outcome

    return call


@replaced("mcp_host_conformance.reference_client.turn_rules.TurnRules.before_question")
def _no_acknowledgement(original):
    del original
    return lambda self: "send"  # whatever happened before, the question goes out


@replaced("mcp_host_conformance.reference_client.turn_rules.TurnRules.acknowledge")
def _decline_ends_session(original):
    def acknowledge(self, accepted):
        if getattr(self, "zoo_declined", False):
            return False  # the session stays closed, whatever the person answers now
        if not accepted:
            self.zoo_declined = True
        return original(self, accepted)

    return acknowledge


CLIENTS = [
    BrokenClient(
        "retries-timed-out-call",
        "Sends a call that timed out once more.",
        {"RETRY-1"},
        (_retry_after_timeout,),
    ),
    BrokenClient(
        "no-acknowledgement",
        "Sends the next question after an unknown result without asking for acknowledgement.",
        {"RETRY-2", "RETRY-3"},  # RETRY-3: there is no acknowledgement to decline
        (_no_acknowledgement,),
        target="RETRY-2",
    ),
    BrokenClient(
        "decline-ends-session",
        "Once the acknowledgement is declined, no later question is ever sent.",
        {"RETRY-3"},
        (_decline_ends_session,),
    ),
    BrokenClient(
        "no-call-limit",
        "Has no limit on tool calls per turn.",
        {"TURN-1"},
        (constant("mcp_host_conformance.reference_client.turn_rules.MAX_CALLS_PER_TURN", 1000),),
        target="TURN-1",
    ),
]
