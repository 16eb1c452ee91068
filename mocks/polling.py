"""SSE polling (resumability, MCP 2025-11-25): one request's stream, closed and resumed.

Strategy: pure bookkeeping, no I/O. A polled request's SSE stream is planned up front as
segments, one per HTTP connection that carries part of it: the POST gets the first, each
GET with `Last-Event-ID` the next. A segment is some events and an ending: "close" (the
server closes the connection without ending the stream: the client must poll again),
"end" (the stream is complete) or "stall" (held open, nothing sent). Every event has an id
`<stream>-<n>` (n counts from 0 within the stream, the stream key is unique in its mock),
so an id names its stream and its place in it. Resuming from any id replays the events
after it on this stream (and only this stream), then serves the next planned segment.
A segment ending in "close" ends with a priming event: an id, the `retry` field, and
empty data, as the spec asks before such a close.

    deliver      POST: priming, close   GET: result, end
    stall        POST: priming, close   GET: nothing, held open
    error        POST: priming, close   GET: JSON-RPC error, end
    close-again  POST: priming, close   GET: priming, close   GET: result, end
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp_host_conformance.mocks._http import sse_event

Message = dict[str, Any]


@dataclass
class Segment:
    messages: list[Message | None]  # None: a priming event (id, retry, empty data)
    ending: str  # "close" | "end" | "stall"


@dataclass
class Delivery:
    """What one connection of a polled stream carries: these events, then its ending."""

    events: list[bytes]
    ending: str
    last_event_id: str | None  # the id of the last event on this stream so far


def segments(variant: str, first: list[Message], final: list[Message]) -> list[Segment]:
    """The plan of a polled stream. `first`: replies sent before the first close (other
    requests of the same POST); `final`: the polled replies (empty for "stall")."""
    # The priming event comes first; after other replies, one more before the close, so
    # the last event before it carries an id and the retry field.
    opening = Segment([None, *first, None] if first else [None], "close")
    if variant == "stall":
        return [opening, Segment([], "stall")]
    if variant == "close-again":
        return [opening, Segment([None], "close"), Segment(list(final), "end")]
    if variant in ("deliver", "error", "refuse-resume"):
        return [opening, Segment(list(final), "end")]
    raise ValueError(f"unknown polling variant {variant!r}")


@dataclass
class PolledStream:
    key: str
    retry_ms: int
    plan: list[Segment]
    sent: list[bytes] = field(default_factory=list)  # every event emitted, in order
    served: int = 0  # segments served so far

    def event_id(self, n: int) -> str:
        return f"{self.key}-{n}"

    def _emit(self, segment: Segment) -> list[bytes]:
        out = []
        for message in segment.messages:
            event_id = self.event_id(len(self.sent))
            if message is None:
                event = sse_event("", None, id=event_id, retry=self.retry_ms)
            else:
                event = sse_event(json.dumps(message, separators=(",", ":")), id=event_id)
            self.sent.append(event)
            out.append(event)
        return out

    def _last_id(self) -> str | None:
        return self.event_id(len(self.sent) - 1) if self.sent else None

    def open(self) -> Delivery:
        """The first connection (the POST's response)."""
        return self._next([])

    def resume(self, last_event_id: str) -> Delivery | None:
        """A GET with `Last-Event-ID`; None if that id was never sent on this stream."""
        position = self.position(last_event_id)
        if position is None:
            return None
        return self._next(self.sent[position + 1 :])

    def position(self, last_event_id: str) -> int | None:
        key, _, number = last_event_id.strip().rpartition("-")
        if key != self.key or not number.isdigit() or len(number) > 9:
            return None
        position = int(number)
        return position if position < len(self.sent) else None

    def _next(self, replayed: list[bytes]) -> Delivery:
        if self.served < len(self.plan):
            segment = self.plan[self.served]
            self.served += 1
            events = replayed + self._emit(segment)
            return Delivery(events, segment.ending, self._last_id())
        # Nothing planned is left: replay, and end as the last segment did (a stalled
        # stream stays stalled; a finished one ends again at once).
        return Delivery(replayed, self.plan[-1].ending, self._last_id())

    @property
    def finished(self) -> bool:
        return self.served >= len(self.plan) and self.plan[-1].ending == "end"


def stream_key(last_event_id: str) -> str:
    """The stream an event id names (`<stream>-<n>` -> `<stream>`)."""
    return last_event_id.strip().rpartition("-")[0]
