"""Server-sent events, parsed without I/O: the events of a stream, and where to resume it.

Strategy: a pure, incremental parser in the style of h11: `feed(bytes)` returns the events
completed by those bytes and keeps the rest; the transport does the reading. It follows
the event-stream interpretation of the SSE standard (lines end in CRLF, LF or CR; a line
starting with ":" is a comment; `data` lines are joined by LF; a blank line dispatches),
plus what resuming a stream needs (the 2025-11-25 MCP Streamable HTTP transport):
- `last_event_id`: the `id` of the last dispatched event (an `id` with NUL is ignored, an
  empty one resets it), which a client sends back as `Last-Event-ID` to resume;
- `retry_ms`: the last valid `retry` field (ASCII digits only), the time the server asks a
  client to wait before reconnecting.
An event without any `data` line is not dispatched (the standard's rule); one with an
empty `data` line, as a priming event often has, is, with `data == b""`: callers skip it.

Hostile input is bounded: NET-4's 1 MiB limit applies to one event's data and to any line
still being buffered, so a line that never ends cannot grow past it (MessageTooLarge). An
`id` longer than MAX_EVENT_ID_BYTES or not printable ASCII cannot be sent back in a header:
it makes the stream not resumable (`last_event_id` None) rather than failing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_host_conformance.reference_client.transports import MAX_MESSAGE_BYTES, MessageTooLarge

__all__ = ["MAX_EVENT_ID_BYTES", "SseEvent", "SseParser"]

MAX_EVENT_ID_BYTES = 1024
_MAX_RETRY_DIGITS = 12
_EOL = re.compile(rb"\r\n|\r|\n")
_HEADER_SAFE = re.compile(rb"[\x21-\x7e]+")  # what an HTTP header value can carry back


@dataclass(frozen=True)
class SseEvent:
    event: str  # the event type ("message" unless the stream named one)
    data: bytes  # the data lines joined by LF; b"" for an event without data
    id: str | None  # the stream's last event id once this event was dispatched


class SseParser:
    """Incremental SSE parser; one per stream (or per resumed stream: it keeps the cursor)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = MAX_MESSAGE_BYTES if limit is None else limit
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self._buffer = b""
        self._data: list[bytes] = []
        self._size = 0
        self._event = b""
        self._pending_id: str | None = None
        self._id_seen = False

    @property
    def held(self) -> int:
        """The bytes held of an event not yet dispatched and of a line not yet ended: what
        the limit bounds between two feeds."""
        return self._size + len(self._buffer)

    def restart(self) -> None:
        """A new connection continues the stream: forget any half-received event."""
        self._buffer = b""
        self._reset_event()

    def _reset_event(self) -> None:
        self._data, self._size, self._event = [], 0, b""
        self._pending_id, self._id_seen = None, False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events completed by `chunk`. Raises MessageTooLarge past the limit."""
        # What was buffered holds no line end but maybe a last CR (half of a CRLF): search
        # from there, not from the start, or a long line fed in small chunks costs a rescan
        # per chunk (a 1 MiB message in 4 KiB chunks took seconds).
        start = max(len(self._buffer) - 1, 0)
        self._buffer += chunk
        events: list[SseEvent] = []
        while True:
            end = _EOL.search(self._buffer, start)
            if end is None or (end.group() == b"\r" and end.end() == len(self._buffer)):
                break  # no whole line yet (a lone CR at the end may be half of CRLF)
            line, self._buffer = self._buffer[: end.start()], self._buffer[end.end() :]
            start = 0
            event = self._line(line)
            if event is not None:
                events.append(event)
        if self.held > self.limit:
            raise MessageTooLarge("SSE message")
        return events

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            return None
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self.limit:
                raise MessageTooLarge("SSE message")
        elif name == b"event":
            self._event = value
        elif name == b"id":
            if b"\0" not in value:
                self._id_seen = True
                self._pending_id = _usable_id(value)
        elif name == b"retry":
            if value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
                self.retry_ms = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        if self._id_seen:
            self.last_event_id = self._pending_id
        had_data = bool(self._data)
        event = SseEvent(
            (self._event or b"message").decode("utf-8", "replace"),
            b"\n".join(self._data),
            self.last_event_id,
        )
        self._reset_event()
        return event if had_data else None


def _usable_id(value: bytes) -> str | None:
    """The id as it can be sent back in Last-Event-ID, or None (unusable: not resumable)."""
    if not value:
        return None  # an empty id resets the last event id
    if len(value) > MAX_EVENT_ID_BYTES or not _HEADER_SAFE.fullmatch(value):
        return None
    return value.decode("ascii")
