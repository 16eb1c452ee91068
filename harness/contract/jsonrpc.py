"""One side of a newline-delimited JSON-RPC 2.0 connection: the driver protocol's framing.

Strategy: both ends of the driver protocol (the harness in `harness/run/driver.py`, a Python
driver in `harness/contract/driver_server.py`) send requests, answer requests and match responses to
what they asked, so that machinery lives here once, as a `Peer` over a pair of byte
streams. The other side is hostile input (a driver is part of the client under test; a
harness may be anything that speaks the protocol), so every resource is bounded:

- ONE reader thread parses every line (at most `MAX_LINE` bytes, strict UTF-8, nesting
  bounded by the interpreter's recursion limit, caught) and never blocks on anything but
  its input: it completes pending requests, answers what cannot be served at once
  (unknown methods, bad params, a notification is ignored), and queues the rest.
- Requests from the other side wait in a bounded queue for the owner to take them
  (`next_request`): a peer that sends more than that without waiting for answers is
  failed with the reason, never given a thread per message. One writer thread sends from
  a bounded queue; when it is full, whoever sends waits for it (backpressure), and a peer
  that never reads is ended by its owner's bound on the call.
- Any failure (end of input, a broken line, a flood, an answer to nothing) marks the peer
  failed once, fails every pending request with the reason, and tells the owner
  (`on_failure`), who decides what else to do (the harness kills the driver's processes).

`strict=False` (the driver side) keeps going after a line it cannot parse or a response it
did not expect, answering or ignoring them as JSON-RPC says; `strict=True` (the harness
side) treats them as the other side's failure.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import IO, Any, Final

__all__ = [
    "ADAPTER_FAILED",
    "CALLBACK_FAILED",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_LINE",
    "MAX_QUEUED",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Peer",
    "Pending",
    "RemoteError",
    "Request",
    "RequestId",
    "WireError",
    "frame",
    "parse_line",
]

MAX_LINE: Final = 32 * 1024 * 1024  # one message; larger is a protocol violation
MAX_QUEUED: Final = 64  # requests from the other side not yet taken, messages not yet sent

# JSON-RPC error codes used by the protocol.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
ADAPTER_FAILED: Final = -32000  # the adapter (the host under test) raised
CALLBACK_FAILED: Final = -32001  # the harness's approve/acknowledge callback raised
BUSY: Final = -32002  # too many requests in flight

RequestId = int | str
Message = dict[str, Any]


class WireError(ValueError):
    """A message or a value does not have the shape the protocol requires."""


class RemoteError(Exception):
    """The other side answered a request with a JSON-RPC error."""

    def __init__(self, code: int | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _close_quietly(stream: IO[bytes]) -> None:
    try:
        stream.close()
    except (OSError, ValueError):
        pass


def frame(message: Message) -> bytes:
    """One message as one line (JSON never contains a raw newline)."""
    return (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")


def _preview(line: bytes | str, limit: int = 120) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


def parse_line(line: bytes | str) -> Message:
    """A JSON-RPC 2.0 message from one line; WireError (never anything else) if it is not one.

    Strict UTF-8 (the protocol's encoding; JSON's own detection of UTF-16/32 is not used),
    at most MAX_LINE bytes, and nesting only as deep as the decoder's recursion bound
    (about a thousand levels: a protocol message needs a handful)."""
    if isinstance(line, str):
        text = line
        if len(text) > MAX_LINE:
            raise WireError(f"a message over {MAX_LINE} bytes")
    else:
        if len(line) > MAX_LINE:
            raise WireError(f"a message over {MAX_LINE} bytes")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireError(f"not UTF-8 (byte {exc.start}): {_preview(line)}") from None
    try:
        message = json.loads(text)
    except RecursionError:
        raise WireError("JSON nested too deeply") from None
    except ValueError as exc:
        raise WireError(f"not JSON ({exc.__class__.__name__}): {_preview(text)}") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise WireError(f"not a JSON-RPC 2.0 message: {_preview(text)}")
    is_request = isinstance(message.get("method"), str)
    is_response = "id" in message and ("result" in message or "error" in message)
    if not (is_request or is_response):
        raise WireError(f"neither a request nor a response: {_preview(text)}")
    return message


def _error_text(error: Any) -> tuple[int | None, str]:
    if isinstance(error, dict):
        code = error.get("code")
        text = error.get("message")
        return (code if isinstance(code, int) else None), (
            text if isinstance(text, str) else repr(error)[:200]
        )
    return None, repr(error)[:200]


@dataclass(frozen=True)
class Request:
    """A request from the other side, waiting to be served."""

    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass
class Pending:
    """A request this side sent, until its response (or the peer's failure) arrives."""

    method: str
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: RemoteError | None = None
    failure: str | None = None  # the peer failed before answering


class Peer:
    """One end of the connection; see the module comment."""

    def __init__(
        self,
        incoming: IO[bytes],
        outgoing: IO[bytes],
        *,
        name: str,
        strict: bool,
        accepts: Collection[str] | None = None,
        id_prefix: str | None = None,
        on_failure: Callable[[str], None] | None = None,
        end_reason: Callable[[], str] | None = None,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        self.name = name  # who the other side is, in failure reasons ("the driver")
        self._incoming = incoming
        self._outgoing = outgoing
        self._strict = strict
        self._accepts = None if accepts is None else frozenset(accepts)
        self._id_prefix = id_prefix
        self._on_failure = on_failure
        self._end_reason = end_reason or (lambda: f"{name} closed the connection")
        self._max_queued = max_queued
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._pending: dict[RequestId, Pending] = {}
        self._requests: deque[Request] = deque()
        self._sending: deque[bytes] = deque()
        self._closing = False  # no new messages; the writer sends what is queued, then stops
        self.failure: str | None = None
        self._reader = threading.Thread(target=self._read, name=f"{name} reader", daemon=True)
        self._writer = threading.Thread(target=self._write, name=f"{name} writer", daemon=True)

    def start(self) -> Peer:
        self._reader.start()
        self._writer.start()
        return self

    # -- sending --

    def _enqueue(self, message: Message) -> bool:
        """Queue a message for the writer. When the queue is full this waits for the writer
        (backpressure, the reader included): a writer that never drains is a peer that does
        not read its input, which the owner's own bound ends by failing the peer."""
        data = frame(message)
        with self._lock:
            self._lock.wait_for(
                lambda: (
                    len(self._sending) < self._max_queued
                    or self.failure is not None
                    or self._closing
                )
            )
            if self.failure is not None or self._closing:
                return False
            self._sending.append(data)
            self._lock.notify_all()
        return True

    def request(self, method: str, params: dict[str, Any]) -> Pending:
        """Send a request; its `Pending` completes with the response or the peer's failure."""
        pending = Pending(method)
        with self._lock:
            if self.failure is not None:
                pending.failure = self.failure
                pending.done.set()
                return pending
            number = next(self._ids)
            rid: RequestId = number if self._id_prefix is None else f"{self._id_prefix}{number}"
            self._pending[rid] = pending
        if not self._enqueue({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}):
            with self._lock:
                self._pending.pop(rid, None)
                pending.failure = self.failure or f"the connection to {self.name} is closed"
            pending.done.set()
        return pending

    def reply(self, rid: RequestId | None, result: Any) -> None:
        self._enqueue({"jsonrpc": "2.0", "id": rid, "result": result})

    def reply_error(self, rid: RequestId | None, code: int, text: str) -> None:
        self._enqueue({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}})

    def _write(self) -> None:
        try:
            while True:
                with self._lock:
                    while not self._sending and not self._closing and self.failure is None:
                        self._lock.wait()
                    if self.failure is not None or not self._sending:
                        return  # failed, or closing with nothing left to send
                    data = self._sending.popleft()
                    self._lock.notify_all()  # room in the queue
                try:
                    self._outgoing.write(data)
                    self._outgoing.flush()
                except (OSError, ValueError):
                    self.fail(self._end_reason())
                    return
        finally:
            # Only this thread ever closes the stream it writes: closing it from another
            # thread could block on the stream's lock while a write is stuck.
            _close_quietly(self._outgoing)

    # -- receiving --

    def next_request(self, timeout: float | None = None) -> Request | None:
        """The next request from the other side, in arrival order; None once the peer has
        failed or closed (or after `timeout` seconds with nothing)."""
        with self._lock:
            if not self._requests and self.failure is None:
                self._lock.wait_for(lambda: self._requests or self.failure is not None, timeout)
            return self._requests.popleft() if self._requests else None

    def _read(self) -> None:
        try:
            self._read_lines()
        finally:
            _close_quietly(self._incoming)  # only the reader closes what it reads

    def _read_lines(self) -> None:
        while True:
            try:
                line = self._incoming.readline(MAX_LINE + 1)
            except (OSError, ValueError):
                line = b""
            if not line:
                self.fail(self._end_reason())
                return
            if len(line) > MAX_LINE:
                self.fail(f"{self.name} sent a message over {MAX_LINE} bytes")
                return
            if not line.strip():
                continue
            try:
                message = parse_line(line)
            except WireError as exc:
                if self._strict:
                    self.fail(f"{self.name} broke the protocol: {exc}")
                    return
                self.reply_error(None, PARSE_ERROR, str(exc))
                continue
            if "method" in message:
                self._on_request(message)
            elif not self._on_response(message):
                return

    def _on_request(self, message: Message) -> None:
        rid = message.get("id")
        method = message["method"]
        if rid is None or not isinstance(rid, int | str) or isinstance(rid, bool):
            if rid is not None:
                self.reply_error(None, INVALID_REQUEST, "id: expected a string or an integer")
            return  # a notification: the protocol has none, and none is answered
        if self._accepts is not None and method not in self._accepts:
            self.reply_error(rid, METHOD_NOT_FOUND, f"there is no method {method!r}")
            return
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self.reply_error(rid, INVALID_PARAMS, "params: expected an object")
            return
        with self._lock:
            flooded = len(self._requests) >= self._max_queued
            if not flooded:
                self._requests.append(Request(rid, method, params))
                self._lock.notify_all()
        if flooded:
            if self._strict:
                self.fail(
                    f"{self.name} sent more than {self._max_queued} requests without waiting "
                    "for their answers"
                )
            else:
                self.reply_error(rid, BUSY, f"more than {self._max_queued} requests in flight")

    def _on_response(self, message: Message) -> bool:
        rid = message["id"]
        with self._lock:
            pending = self._pending.pop(rid, None) if isinstance(rid, int | str) else None
        if pending is None:
            if self._strict:
                self.fail(f"{self.name} answered a request it was never sent (id {rid!r})")
                return False
            return True  # late or stray: the other side may have given up on it
        if "error" in message:
            code, text = _error_text(message["error"])
            pending.error = RemoteError(code, text)
        else:
            pending.result = message["result"]
        pending.done.set()
        return True

    # -- failing and ending --

    def fail(self, reason: str) -> None:
        """Mark the peer failed (the first reason wins), fail every pending request, wake
        every waiter, and tell the owner once."""
        with self._lock:
            if self.failure is not None:
                return
            self.failure = reason
            waiting = list(self._pending.values())
            self._pending.clear()
            self._lock.notify_all()
        for pending in waiting:
            pending.failure = reason
            pending.done.set()
        if self._on_failure is not None:
            self._on_failure(reason)

    def close(self, reason: str = "the connection was closed", flush: float = 2.0) -> None:
        """Stop sending after what is queued (waiting at most `flush` seconds for it), then
        mark the peer closed with `reason` (unless it failed before)."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        if self._writer.is_alive() and self._writer is not threading.current_thread():
            self._writer.join(flush)
        with self._lock:
            if self.failure is not None:
                return
            self.failure = reason
            waiting = list(self._pending.values())
            self._pending.clear()
            self._lock.notify_all()
        for pending in waiting:
            pending.failure = reason
            pending.done.set()

    def join_reader(self, timeout: float) -> None:
        if self._reader.is_alive() and self._reader is not threading.current_thread():
            self._reader.join(timeout)
