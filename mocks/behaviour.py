"""What a mock does with each JSON-RPC request, decided once for every transport.

Strategy: `decide` is a pure function of the spec, the tools served now, how many calls
were answered so far, and one well-formed request. It returns a `Plan`: the reply, and
what to do about it (wait first, never answer, send garbage instead, drop the connection,
answer through SSE polling, flood stderr first, switch tools afterwards), with the journal
events that go with it. The HTTP mock and the stdio mock only execute plans, each in its
own way (asyncio and sockets; pipes), so a misbehaviour means the same on both and is
written once. A field a transport cannot honour is documented on `Misbehaviour` (stderr is
stdio's, SSE polling is HTTP's). `Behaviour` holds the little state (the tools served,
the calls answered) and applies each plan's change under a lock.

Kept free of I/O and of the SDK: the stdio mock imports it at start.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

from mcp_host_conformance.mocks import _rpc
from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool

TYPE_CHECKING = False  # no `typing` at run time: the stdio mock imports this (stdio_server)
if TYPE_CHECKING:
    from typing import Any

GARBAGE = b"this is not JSON-RPC <<<garbage>>> \x01\x02 }{"
POLL_ERROR = (-32603, "Internal error: the call failed while its stream was closed")


@dataclass(frozen=True)
class Plan:
    """What to do with one request. `reply` is what is eventually sent, if anything."""

    reply: dict[str, Any] | None = None
    delay: float = 0.0  # seconds to wait before answering
    stall: bool = False  # never answer (the request was read and journalled)
    garbage: bool = False  # send GARBAGE instead of any reply
    drop: str | None = None  # "reset" | "close" | "stall": drop the connection, no answer
    poll: str | None = None  # HTTP: answer through SSE polling (see Misbehaviour.poll_call)
    http_status: int | None = None  # HTTP: this status instead of the reply (stdio: the reply)
    # HTTP: forget the session and answer 404 "Session not found" (stdio: the reply)
    session_lost: bool = False
    flood_stderr: int = 0  # stdio: bytes written to stderr before answering
    tools_after: tuple[Tool, ...] | None = None  # serve these afterwards; send list_changed
    counts_as_call: bool = False  # an answered tools/call (change_tools_after_call counts)
    barrier: str | None = None  # wait at this barrier (mocks.barrier) before anything else
    events: tuple[dict[str, Any], ...] = ()  # journal events, each {"event": name, ...}
    # notifications/progress sent before the reply, each after `progress_interval` seconds
    progress: tuple[dict[str, Any], ...] = ()
    progress_interval: float = 0.0

    @property
    def answers(self) -> bool:
        """Whether a reply is sent at all (garbage counts: something is sent)."""
        return not (self.stall or self.drop) and (self.garbage or self.reply is not None)


def polls(misbehaviour: Misbehaviour, message: dict[str, Any]) -> bool:
    """Whether this `tools/call` is answered through SSE polling."""
    if not misbehaviour.poll_call or message.get("method") != "tools/call":
        return False
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return not misbehaviour.poll_tools or name in misbehaviour.poll_tools


def _progress(
    tools: list[Tool], message: dict[str, Any]
) -> tuple[tuple[dict[str, Any], ...], float] | None:
    """The progress notifications a call's tool sends before its result: only for a call that
    asked for them (a `progressToken`), as real servers do."""
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    tool = next((t for t in tools if t.name == params.get("name")), None)
    if tool is None or not tool.reply.progress or not isinstance(token, str | int):
        return None
    total = tool.reply.progress
    notes = tuple(
        _rpc.notification(
            "notifications/progress",
            {"progressToken": token, "progress": n, "total": total, "message": f"step {n}"},
        )
        for n in range(1, total + 1)
    )
    return notes, tool.reply.progress_interval


def decide(
    spec: ServerSpec, tools: list[Tool], calls_answered: int, message: dict[str, Any]
) -> Plan:
    """The plan for one well-formed request (see `_rpc.classify`)."""
    bad = spec.misbehaviour
    method = message["method"]
    id_ = message.get("id")
    if bad.garbage or method == bad.garbage_at:
        return Plan(garbage=True, events=({"event": "garbage", "method": method},))
    if method == "tools/call" and bad.drop_call:
        return Plan(drop=bad.drop_call, events=({"event": f"call-dropped-{bad.drop_call}"},))
    if method in bad.stall:
        return Plan(stall=True, events=({"event": "stalled", "method": method, "id": id_},))
    if method == bad.fail_at:
        failed = _rpc.error(id_, _rpc.INTERNAL_ERROR, bad.fail_message)
        return Plan(reply=failed, events=({"event": "failed", "method": method},))
    reply: dict[str, Any] | None = _rpc.answer(dataclasses.replace(spec, tools=tools), message)
    events: list[dict[str, Any]] = []
    if method == bad.oversize_at and reply is not None and "result" in reply:
        reply = _rpc.padded_message(reply, bad.oversize_bytes, bad.oversize_fill)
        events.append({"event": "oversized", "method": method, "bytes": bad.oversize_bytes})
    fields: dict[str, Any] = {"delay": float(bad.delays.get(method, 0.0))}
    if method == "initialize" and bad.barrier:
        fields["barrier"] = bad.barrier
        events.append({"event": "barrier-wait", "address": bad.barrier})
    if method == "tools/call":
        fields["counts_as_call"] = True
        fields["flood_stderr"] = bad.stderr_flood
        progress = _progress(tools, message)
        if progress:
            fields["progress"], fields["progress_interval"] = progress
            events.append({"event": "progress", "count": len(progress[0])})
        if bad.change_tools_after_call and calls_answered == 0:
            fields["tools_after"] = tuple(bad.changed_tools)
            events.append({"event": "tools-changed", "count": len(bad.changed_tools)})
        if bad.call_http_status:
            fields["http_status"] = bad.call_http_status
            events.append({"event": "call-http-status", "status": bad.call_http_status})
        if bad.call_session_lost and calls_answered == 0:
            fields["session_lost"] = True
            events.append({"event": "session-lost", "method": method})
        if polls(bad, message):
            fields["poll"] = bad.poll_call
            if bad.poll_call == "stall":
                reply = None
            elif bad.poll_call == "error":
                reply = _rpc.error(id_, *POLL_ERROR)
    return Plan(reply=reply, events=tuple(events), **fields)


class Behaviour:
    """A mock's protocol state (the tools it serves, the calls it answered) and its plans."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self._tools = list(spec.tools)
        self._calls_answered = 0
        self._lock = threading.Lock()

    @property
    def tools(self) -> list[Tool]:
        with self._lock:
            return list(self._tools)

    def set_tools(self, tools: list[Tool]) -> None:
        with self._lock:
            self._tools = list(tools)

    def plan(self, message: dict[str, Any]) -> Plan:
        with self._lock:
            plan = decide(self.spec, self._tools, self._calls_answered, message)
            if plan.counts_as_call:
                self._calls_answered += 1
            if plan.tools_after is not None:
                self._tools = list(plan.tools_after)
        return plan
