"""Broken clients for RETRY (uncertain outcomes) and TURN (limits inside one turn)."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    replaced,
    replaced_after,
    replaced_when,
    same_until,
)
from mcp_host_conformance.zoo.sessions import calls_in_history
from mcp_host_conformance.zoo.turn import RUN_CALL, call_limit

_SEND_CALL = "mcp_host_conformance.reference_client.turn.Conversation.send_call"


def _unknown_with(words):
    """A call's outcome is unknown, its output naming one of `words`."""

    def differs(outcome, *args, **kwargs) -> bool:
        from mcp_host_conformance.reference_client import results

        kind, answer = outcome
        return (
            kind == "return"
            and answer.status == results.UNKNOWN
            and any(word in answer.output for word in words)
        )

    return differs


def _send_again(original):
    async def call(outcome, self, server, tool, arguments):
        return await original(self, server, tool, arguments)

    return call


# "it was probably lost"
_retry_after_timeout = replaced_after(_SEND_CALL, _unknown_with(["call timeout"]))(_send_again)


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


# "a 5xx is transient"
_retry_on_server_error = replaced_after(_SEND_CALL, _unknown_with(["(HTTP 5"]))(_send_again)


def _call_lost_first_time(outcome, transport, message) -> bool:
    """A call whose server went away, before the client restarted it once (its own state)."""
    from mcp_host_conformance.reference_client.transports import TransportError

    kind, error = outcome
    return (
        kind == "raise"
        and isinstance(error, TransportError)
        and message.get("method") == "tools/call"
        and not getattr(transport, "zoo_restarted", False)
    )


@replaced_after(
    "mcp_host_conformance.reference_client.transports.stdio.StdioTransport.request",
    _call_lost_first_time,
)
def _restart_crashed_server(original):
    async def request(outcome, self, message):
        self.zoo_restarted = True  # "the server crashed: start it again and carry on"
        self._broken = None
        await self.connect()
        return await original(self, message)

    return request


def _session_lost_at_call(outcome, self, name, arguments) -> bool:
    """A call the server answered 404 (its session lost), over HTTP."""
    from mcp_host_conformance.reference_client.transports import TransportError

    kind, error = outcome
    return (
        kind == "raise"
        and isinstance(error, TransportError)
        and "(HTTP 404)" in str(error)
        and hasattr(self.transport, "_session_id")
    )


@replaced_after(
    "mcp_host_conformance.reference_client.rpc.RpcSession.call_tool", _session_lost_at_call
)
def _reinitialize_and_resend(original):
    async def call_tool(outcome, self, name, arguments):
        # as the SDKs do on 404 "Session not found": a new session, and the request again
        self.transport._session_id = None
        await self.initialize()
        return await original(self, name, arguments)

    return call_tool


_RESUME_STREAM = "mcp_host_conformance.reference_client.transports.http.HttpTransport.resume_stream"


def _resumed(outcome, self, *args, **kwargs) -> bool:
    """Any resumption: what `_remember_request` keeps is read there alone."""
    return True


@same_until(_RESUME_STREAM, _resumed)
@replaced("mcp_host_conformance.reference_client.transports.http.HttpTransport.request")
def _remember_request(original):
    async def request(self, message):
        if not getattr(self, "zoo_reposting", False):
            self.zoo_message = message
        return await original(self, message)

    return request


@replaced(_RESUME_STREAM)
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


def _any_output_with(words):
    def differs(outcome, *args, **kwargs) -> bool:
        kind, answer = outcome
        return kind == "raise" or any(word in answer.output for word in words)

    return differs


def _forget_acknowledgement_when(*words):
    # the same as the reference's until a call ends with one of `words` in its output
    @same_until(RUN_CALL, _any_output_with(words))
    @replaced(RUN_CALL)
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
        # APR-1: the call sent again is unapproved (monitor calls-wait-for-approval)
        {"RETRY-1", "APR-1"},
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
        (call_limit(1000),),
        target="TURN-1",
    ),
    BrokenClient(
        "retries-on-server-error",
        "Sends a call answered with an HTTP 5xx status once more.",
        # APR-1: the call sent again is unapproved (monitor calls-wait-for-approval)
        {"RETRY-1", "APR-1"},
        (_retry_on_server_error,),
        target="RETRY-1",
    ),
    BrokenClient(
        "restarts-crashed-stdio-server",
        "When a stdio server exits during a call, starts it again and sends the call again.",
        # APR-1: the call sent again is unapproved; STDIO-5: the server started again is left
        # running (monitors)
        {"RETRY-1", "APR-1", "STDIO-5"},
        (_restart_crashed_server,),
        target="RETRY-1",
    ),
    BrokenClient(
        "resends-call-after-lost-session",
        "When a call is answered 404 (the server lost the session), initializes a new session "
        "and sends the call again, as an SDK that recovers sessions does.",
        # APR-1: the call sent again was approved once (monitor calls-wait-for-approval)
        {"RETRY-1", "APR-1"},
        (_reinitialize_and_resend,),
        target="RETRY-1",
    ),
    BrokenClient(
        "resends-call-on-reconnect",
        "When an SSE stream closes before the response, POSTs the request again instead of "
        "resuming the stream with Last-Event-ID.",
        # APR-1: the call POSTed again was approved once (monitor calls-wait-for-approval)
        {"RETRY-1", "APR-1"},
        (_remember_request, _repost_on_reconnect),
        target="RETRY-1",
    ),
    BrokenClient(
        "resends-unknown-call-on-resume",
        "Reopening a session, sends the recorded calls whose outcome was unknown once more.",
        # APR-1, SESS-2: the resent call is unapproved, while reopening; STDIO-5: one resent to a
        # silent stdio server leaves it running (monitors)
        {"RETRY-1", "APR-1", "SESS-2", "STDIO-5"},
        (_resend_unknown_on_resume,),
        target="RETRY-1",
    ),
    BrokenClient(
        "no-acknowledgement-after-timeout",
        "Asks for the acknowledgement after a lost connection, but not after a timeout.",
        {"RETRY-2"},
        (_forget_acknowledgement_when("call timeout"),),
    ),
    BrokenClient(
        "no-acknowledgement-after-cancel",
        "Asks for no acknowledgement after a call the user cancelled (the user knows).",
        {"RETRY-2"},
        (_forget_acknowledgement_when("cancelled"),),
    ),
]
