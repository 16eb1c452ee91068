"""Broken clients for RETRY (uncertain outcomes) and TURN (limits inside one turn)."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import BrokenClient, Seam, constant, replaced, replaced_when
from mcp_host_conformance.zoo.sessions import calls_in_history


@replaced("mcp_host_conformance.reference_client.turn.Conversation.send_call")
def _retry_after_timeout(original):
    from mcp_host_conformance.reference_client import results

    async def call(self, server, tool, arguments):
        outcome = await original(self, server, tool, arguments)
        if outcome.status == results.UNKNOWN and "call timeout" in outcome.output:
            outcome = await original(self, server, tool, arguments)  # "it was probably lost"
        return outcome

    return call


def _asks_for_acknowledgement(original, self) -> bool:
    return original(self) != "send"  # it only looks at the rules' state


@replaced_when(
    "mcp_host_conformance.reference_client.turn_rules.TurnRules.before_question",
    _asks_for_acknowledgement,
)
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


@replaced("mcp_host_conformance.reference_client.turn.Conversation.send_call")
def _retry_on_server_error(original):
    from mcp_host_conformance.reference_client import results

    async def call(self, server, tool, arguments):
        outcome = await original(self, server, tool, arguments)
        if outcome.status == results.UNKNOWN and "(HTTP 5" in outcome.output:
            outcome = await original(self, server, tool, arguments)  # "a 5xx is transient"
        return outcome

    return call


@replaced("mcp_host_conformance.reference_client.transports.stdio.StdioTransport.request")
def _restart_crashed_server(original):
    from mcp_host_conformance.reference_client.transports import TransportError

    async def request(self, message):
        try:
            return await original(self, message)
        except TransportError:
            if message.get("method") != "tools/call" or getattr(self, "zoo_restarted", False):
                raise
            self.zoo_restarted = True  # "the server crashed: start it again and carry on"
            self._broken = None
            await self.connect()
            return await original(self, message)

    return request


@replaced("mcp_host_conformance.reference_client.transports.http.HttpTransport.request")
def _remember_request(original):
    async def request(self, message):
        if not getattr(self, "zoo_reposting", False):
            self.zoo_message = message
        return await original(self, message)

    return request


@replaced("mcp_host_conformance.reference_client.transports.http.HttpTransport.resume_stream")
def _repost_on_reconnect(original):
    async def resume_stream(self, request_id, stream, lost):
        message = getattr(self, "zoo_message", None)
        if message is None or message.get("id") != request_id or self.__dict__.get("zoo_reposting"):
            return await original(self, request_id, stream, lost)
        self.zoo_reposting = True  # "reconnect": the request again, on a new stream
        try:
            return await self.request(message)
        finally:
            self.zoo_reposting = False

    return resume_stream


@replaced_when("mcp_host_conformance.reference_client.engine.HostEngine.start", calls_in_history)
def _resend_unknown_on_resume(original):
    import json

    from mcp_host_conformance.reference_client.transports import McpError

    async def start(self):
        statuses = await original(self)
        history = self.conversation.history
        unknown = {
            item.get("call_id")
            for item in history
            if item.get("type") == "function_call_output"
            and str(item.get("output", "")).lower().startswith("status: unknown")
        }
        for item in history:  # "recover": the calls whose outcome was never known, once more
            if item.get("type") != "function_call" or item.get("call_id") not in unknown:
                continue
            offered = self.discovery.offered.get(item.get("name"))
            server = self.discovery.servers.get(offered.server) if offered else None
            if server is not None:
                try:
                    await server.session.call_tool(
                        offered.tool["name"], json.loads(item["arguments"])
                    )
                except (McpError, ValueError):
                    pass
        return statuses

    return start


def _forget_acknowledgement_when(*words):
    def make(original):
        async def run_call(self, call, report):
            pending = self.rules.pending_acknowledgement
            outcome = await original(self, call, report)
            if any(w in outcome.output for w in words):
                self.rules.pending_acknowledgement = pending  # "that one needs no acknowledgement"
            return outcome

        return run_call

    return make


CLIENTS = [
    BrokenClient(
        "retries-timed-out-call",
        "Sends a call that timed out once more.",
        {"RETRY-1"},
        (_retry_after_timeout,),
        target="RETRY-1",
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
    BrokenClient(
        "retries-on-server-error",
        "Sends a call answered with an HTTP 5xx status once more.",
        {"RETRY-1"},
        (_retry_on_server_error,),
    ),
    BrokenClient(
        "restarts-crashed-stdio-server",
        "When a stdio server exits during a call, starts it again and sends the call again.",
        {"RETRY-1"},
        (_restart_crashed_server,),
    ),
    BrokenClient(
        "resends-call-on-reconnect",
        "When an SSE stream closes before the response, POSTs the request again instead of "
        "resuming the stream with Last-Event-ID.",
        {"RETRY-1"},
        (_remember_request, _repost_on_reconnect),
    ),
    BrokenClient(
        "resends-unknown-call-on-resume",
        "Reopening a session, sends the recorded calls whose outcome was unknown once more.",
        {"RETRY-1"},
        (_resend_unknown_on_resume,),
    ),
    BrokenClient(
        "no-acknowledgement-after-timeout",
        "Asks for the acknowledgement after a lost connection, but not after a timeout.",
        {"RETRY-2"},
        (
            Seam(
                "mcp_host_conformance.reference_client.turn.Conversation.run_call",
                _forget_acknowledgement_when("call timeout"),
            ),
        ),
    ),
    BrokenClient(
        "no-acknowledgement-after-cancel",
        "Asks for no acknowledgement after a call the user cancelled (the user knows).",
        {"RETRY-2"},
        (
            Seam(
                "mcp_host_conformance.reference_client.turn.Conversation.run_call",
                _forget_acknowledgement_when("cancelled"),
            ),
        ),
    ),
]
