"""Broken clients for SESS (sessions and replay)."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    Seam,
    pure,
    replaced,
    replaced_when,
)


@replaced("mcp_host_conformance.reference_client.turn.Conversation.record")
def _outputs_not_saved(original):
    def record(self, item):
        if item.get("type") == "function_call_output" and self.session is not None:
            session, self.session = self.session, None
            try:
                original(self, item)
            finally:
                self.session = session
            return
        original(self, item)

    return record


def calls_in_history(original, self) -> bool:
    """A `HostEngine.start` that looks at the calls of a resumed session: one that has any."""
    return any(item.get("type") == "function_call" for item in self.conversation.history)


@replaced_when("mcp_host_conformance.reference_client.engine.HostEngine.start", calls_in_history)
def _replay_on_resume(original):
    import json

    from mcp_host_conformance.reference_client.transports import McpError

    async def start(self):
        statuses = await original(self)
        # "Refresh" the recorded calls' results by calling them again.
        for item in list(self.conversation.history):
            offered = (
                self.discovery.offered.get(item.get("name"))
                if item.get("type") == "function_call"
                else None
            )
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


def _resumed(original, self, servers, **options) -> bool:
    return bool(options.get("history"))  # none and an empty one start the same history


@replaced_when("mcp_host_conformance.reference_client.engine.HostEngine.__init__", _resumed)
def _forget_history(original):
    def init(self, servers, **options):
        options["history"] = None
        original(self, servers, **options)

    return init


@replaced_when("mcp_host_conformance.reference_client.engine.HostEngine.start", calls_in_history)
def _drop_unknown_tools(original):
    from mcp_host_conformance.reference_client import builtins

    async def start(self):
        statuses = await original(self)
        known = set(self.discovery.offered) | set(builtins.NAMES)
        dropped = {
            item.get("call_id")
            for item in self.conversation.history
            if item.get("type") == "function_call" and item.get("name") not in known
        }
        self.conversation.history[:] = [
            item
            for item in self.conversation.history
            if item.get("type") not in ("function_call", "function_call_output")
            or item.get("call_id") not in dropped
        ]
        return statuses

    return start


# The items of every session this process wrote, by id: "reopening a session we have open
# in memory is faster than reading it back".
_SESSIONS_IN_MEMORY: dict[str, list] = {}


@replaced("mcp_host_conformance.reference_client.sessions.SessionLog.append")
def _lossy_append(original):
    def append(self, item):
        _SESSIONS_IN_MEMORY.setdefault(self.id, []).append(item)
        # ...and the file gets a slimmer record: call ids are "internal", left out
        original(self, {k: v for k, v in item.items() if k != "call_id"})

    return append


@replaced("mcp_host_conformance.reference_client.sessions.SessionLog.open")
def _open_from_memory(original):
    def open_(cls, environ, session_id, *, redactor=None):
        log, items, warnings = original(environ, session_id, redactor=redactor)
        if session_id in _SESSIONS_IN_MEMORY:
            items = list(_SESSIONS_IN_MEMORY[session_id])
            warnings = []
        return log, items, warnings

    return classmethod(open_)


CLIENTS = [
    BrokenClient(
        "outputs-not-saved",
        "Does not save tool outputs in the session file.",
        {
            "SESS-1",
            "SESS-3",
            "SESS-4",
        },  # reopened, the calls have only a synthesized unknown output
        (_outputs_not_saved,),
    ),
    BrokenClient(
        "replays-calls-on-resume",
        "Calls the recorded MCP calls again when a session is reopened.",
        # APR-1: the replayed calls are not approved; STDIO-5: a replay stalled on a silent stdio
        # server leaves it running after stop (monitors)
        {
            "RETRY-1",
            "SESS-2",
            "APR-1",
            "STDIO-5",
        },  # RETRY-1: its restarted host reopens calls that ended unknown
        (_replay_on_resume,),
        target="RETRY-1",
    ),
    BrokenClient(
        "forgets-history-on-resume",
        "Reopens a session but sends none of its earlier items to the model.",
        # SESS-2/4 cases also check the reopened history is sent; RETRY-2's reopened session
        # no longer holds the unknown call that needs an acknowledgement
        {"RETRY-2", "SESS-2", "SESS-3", "SESS-4"},
        (_forget_history,),
        target="SESS-3",
    ),
    BrokenClient(
        "drops-calls-of-missing-tools",
        "On reopening, drops recorded calls (and outputs) of tools that are no longer offered.",
        {"SESS-3", "SESS-4"},  # SESS-3 reopens with the server removed, so its tool is not offered
        (_drop_unknown_tools,),
        target="SESS-4",
    ),
    BrokenClient(
        "forgets-pending-acknowledgement-on-resume",
        "A reopened session does not ask for the acknowledgement of its last, unknown call.",
        {"RETRY-2"},
        (
            Seam(
                "mcp_host_conformance.reference_client.turn.pending_in_history",
                pure(lambda original: lambda items: False),
            ),
        ),
    ),
    BrokenClient(
        "session-cache-in-memory",
        "Saves sessions without call ids and reopens them from an in-memory copy when it "
        "has one: fine in the same process, lost in a new one.",
        # their reopened requests lack the earlier call (a new process); RETRY-2's reopened
        # session lost the unknown output that needs an acknowledgement
        {"RETRY-2", "SESS-3", "SESS-4"},
        (_lossy_append, _open_from_memory),
        target="SESS-3",
    ),
]
