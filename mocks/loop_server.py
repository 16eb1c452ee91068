"""An HTTP/1.1 server on its own asyncio loop in a background thread: the mocks' one server.

Strategy: the MCP mock (plain and TLS) and the Responses service both run here, so they
share one hardened request parser (`_http`) and one set of bounds (`HttpLimits`). A test,
synchronous or not, starts one in milliseconds on 127.0.0.1 port 0 and reads its journal
while it runs. Connections are coroutines, not threads: a thousand clients, or a thousand
that never finish their request (slowloris), cost memory, not a thread each, and never
block anyone else. A connection that sends nothing is closed after the slow-client bound
counted from its accept (not the idle timeout), and at most `HttpLimits.max_idle_connections`
wait for a request at once (one more closes the one that waited longest; a new connection
when every slot is taken closes the oldest that never sent a byte), so silent connections
cannot take every slot from the clients that talk. The listen backlog is large
(`HttpLimits.backlog`) so a crowd arriving at once is queued, not dropped. What a client
sends wrong is answered with its status and journalled as a "bad-http" event; a failure
inside a handler is journalled as "internal-error" and the connection closed: nothing
reaches stderr. `close()` cancels every connection and returns in bounded time whoever is
still connected.

A handler gets each request whole (`Request`, body read) and the `Connection`, writes its
answer, and returns whether the connection may carry another request.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
import threading
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from mcp_host_conformance.mocks._http import (
    BadRequest,
    HttpLimits,
    Request,
    first_byte,
    read_body,
    read_head,
    write_continue,
    write_response,
)
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.lateness import tick_loop

START_TIMEOUT = 10.0  # seconds for the loop to start, and for each step of closing it
JSON_HEADERS = [("content-type", "application/json")]
LINGER_SECONDS = 2.0  # after refusing a request: how long to read what the client still sends
LINGER_BYTES = 1024 * 1024  # and how much of it

T = TypeVar("T")


@dataclass
class Connection:
    id: str  # "c1", "c2", ... in order of arrival, for the journal
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


Handler = Callable[[Request, Connection], Awaitable[bool]]


class LoopServer:
    """Serve `handler` on 127.0.0.1 (or another loopback `address`):<ephemeral port> until
    `close()`."""

    def __init__(
        self,
        handler: Handler,
        journal: Journal,
        *,
        name: str,
        ssl_context: ssl.SSLContext | None = None,
        limits: HttpLimits | None = None,
        address: str = "127.0.0.1",
    ) -> None:
        self.handler = handler
        self.address = address  # a loopback address; port 0 (ephemeral) always
        self.journal = journal
        self.name = name
        self.ssl_context = ssl_context
        self.limits = limits or HttpLimits()
        self.port: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ids = itertools.count(1)
        self._open = 0
        # the connections waiting for a request's first byte, longest waiting first
        self._waiting: dict[str, Connection] = {}
        self._evicted: set[str] = set()  # closed by _evict, their slots already given back
        self._fresh: set[str] = set()  # waiting for their first request's first byte
        self._startup_error: BaseException | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name=f"mock-{self.name}", daemon=True
        )
        self._thread.start()
        if not ready.wait(START_TIMEOUT) or self._startup_error is not None:
            error = self._startup_error
            self.close()
            raise RuntimeError(f"mock {self.name!r} did not start: {error}")

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        loop.set_exception_handler(self._loop_error)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(
                    self._connection,
                    self.address,
                    0,
                    ssl=self.ssl_context,
                    limit=self.limits.max_head_bytes,
                    backlog=self.limits.backlog,
                    ssl_handshake_timeout=(
                        self.limits.request_timeout if self.ssl_context else None
                    ),
                )
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # reported by start()
            self._startup_error = exc
            ready.set()
            loop.close()
            return
        ready.set()
        tick_loop(loop)  # a loop that runs late is the harness's trouble, not the host's
        try:
            loop.run_forever()
        finally:
            loop.close()

    @property
    def died(self) -> bool:
        """Whether it stopped serving by itself: started, not closed, its thread ended."""
        return self._thread is not None and not self._thread.is_alive()

    def close(self) -> None:
        loop, thread = self.loop, self._thread
        if loop is None or thread is None:
            self._thread = None
            return
        if loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self._stop(), loop)
            try:
                future.result(START_TIMEOUT)
            except Exception:  # noqa: S110 - stopping must not raise; the loop stops below
                pass
            loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT)
        self._thread = None
        self.loop = None

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        # Every task, not only connections: one accepted just before the server closed has
        # a task whose coroutine has not started yet; left pending, it would warn.
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=START_TIMEOUT / 2)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the server's loop from another thread; its result (bounded)."""
        if self.loop is None:
            coroutine.close()
            raise RuntimeError(f"mock {self.name!r} is not running")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(START_TIMEOUT)

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # TLS handshakes a client refuses or abandons end up here: facts for the journal,
        # never tracebacks on the test output.
        self._event("loop-error", None, message=str(context.get("message")))

    def _event(self, name: str, connection: str | None, **extra: Any) -> None:
        self.journal.record(
            Entry(kind="event", connection=connection, extra={"event": name, **extra})
        )

    # ---- connections -------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(f"c{next(self._ids)}", reader, writer)
        self._open += 1
        try:
            silent = next((c for c in self._waiting if c in self._fresh), None)
            if self._open > self.limits.max_connections and silent is not None:
                # a slot held by a connection that never sent a byte goes to one that came
                # to talk (a client that has spoken keeps its kept-alive connection)
                self._evict(silent)
            if self._open > self.limits.max_connections:
                self._event("connection-refused", conn.id, open=self._open - 1)
                write_response(writer, 503, b"", keep_alive=False)
                await writer.drain()
                return
            await self._serve(conn)
        except asyncio.CancelledError:
            writer.transport.abort()
            raise
        except (ConnectionError, OSError, ssl.SSLError):
            pass  # the client went away; nothing to answer
        except Exception as exc:  # a mock never crashes on what a client sends
            self._event("internal-error", conn.id, error=repr(exc)[:500])
        finally:
            if conn.id in self._evicted:
                self._evicted.discard(conn.id)  # its slot was given back when it was evicted
            else:
                self._open -= 1
            if not writer.transport.is_closing():
                writer.close()

    async def _serve(self, conn: Connection) -> None:
        # a new connection gets the slow-client bound from its accept: one that never sends a
        # byte holds its slot no longer than a request may take (not the idle timeout)
        wait = self.limits.request_timeout
        self._fresh.add(conn.id)
        while True:
            first = await self._first_byte(conn, wait)
            self._fresh.discard(conn.id)
            if first is None:
                return
            wait = self.limits.idle_timeout  # kept alive: waiting for its next request
            try:
                request = await read_head(conn.reader, self.limits, first)
                if request is None:
                    return
                if request.expects_continue:
                    write_continue(conn.writer)
                request.body = await read_body(conn.reader, request, self.limits)
            except BadRequest as exc:
                await self._refuse(conn, exc)
                return
            keep = await self.handler(request, conn)
            await conn.writer.drain()
            if not keep or not request.keep_alive:
                return

    async def _first_byte(self, conn: Connection, wait: float) -> bytes | None:
        """The next request's first byte (None: none within `wait`, or the connection was
        closed); while it waits, the connection is one of at most `max_idle_connections`,
        and the one that waited longest is closed to make room."""
        self._waiting[conn.id] = conn
        while len(self._waiting) > self.limits.max_idle_connections:
            self._evict(next(iter(self._waiting)))
        try:
            return await first_byte(conn.reader, wait)
        finally:
            self._waiting.pop(conn.id, None)

    def _evict(self, conn_id: str) -> None:
        """Close a connection waiting for a request and give its slot back at once (its
        coroutine ends later, on a loaded machine after the next accept)."""
        conn = self._waiting.pop(conn_id)
        conn.writer.transport.abort()
        self._open -= 1
        self._evicted.add(conn_id)

    async def _refuse(self, conn: Connection, exc: BadRequest) -> None:
        """Answer a bad request and close without losing the answer.

        Closing a socket that still holds unread request bytes makes the kernel send a reset,
        which can destroy the answer before the client reads it; so the answer is followed
        by a half-close and a short, bounded read of whatever the client still sends."""
        self._event("bad-http", conn.id, status=exc.status, reason=str(exc))
        body = json.dumps({"error": str(exc)}).encode()
        write_response(conn.writer, exc.status, body, JSON_HEADERS, keep_alive=False)
        try:
            async with asyncio.timeout(min(LINGER_SECONDS, self.limits.request_timeout)):
                await conn.writer.drain()
                if not conn.writer.can_write_eof():  # TLS: no half-close; close_notify it is
                    return
                conn.writer.write_eof()
                left = LINGER_BYTES
                while left > 0 and (chunk := await conn.reader.read(min(left, 65536))):
                    left -= len(chunk)
        except (TimeoutError, asyncio.LimitOverrunError):
            pass


class ServedMock:
    """A mock served by one `LoopServer`: `start()` (once; again is a no-op), `close()`
    (bounded), a `with` block, and the first steps every request takes (`admin_or_record`).

    A subclass makes its server in `_new_server()` and learns its port in `_started()`."""

    _server: LoopServer | None = None

    def _new_server(self) -> LoopServer:
        raise NotImplementedError

    def _started(self, server: LoopServer) -> None:
        """Called once the server listens (its `port` is known)."""

    def start(self) -> Self:
        if self._server is None:
            server = self._new_server()
            server.start()
            self._server = server
            self._started(server)
        return self

    @property
    def died(self) -> bool:
        """Whether its server stopped by itself (not closed): whatever a client did with it
        since was not the client's doing."""
        return self._server is not None and self._server.died

    @property
    def listening(self) -> bool:
        """Started, not closed since, and not stopped by itself."""
        return self._server is not None and not self._server.died

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def admin_or_record(self, request: Request, conn: Connection) -> Entry | None:
        """Answer `GET /__journal` or `POST /__reset` (None: answered, nothing journalled),
        or journal the request as a kind="http" entry and return it."""
        from mcp_host_conformance.mocks.admin import admin_answer

        assert self._server is not None  # a request arrived: it is serving
        journal = self._server.journal
        admin = admin_answer(request.method, request.target, journal)
        if admin is not None:
            keep = request.keep_alive
            write_response(conn.writer, admin.status, admin.body, admin.headers, keep_alive=keep)
            return None
        return journal.record(
            Entry(
                kind="http",
                http_method=request.method,
                path=request.target,
                headers=dict(request.headers),
                body_size=len(request.body),
                connection=conn.id,
            )
        )
