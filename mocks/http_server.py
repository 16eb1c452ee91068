"""The Streamable HTTP mock MCP server, plain or TLS, well-behaved or not.

Strategy: the server itself is `LoopServer` (an asyncio HTTP/1.1 server at the socket
level, on its own loop in a background thread): several misbehaviours live below what an
ASGI app can do (a TCP reset right after a `tools/call` was read, a stall with the
connection held open, a response over any sane size limit). What to do with each JSON-RPC
request is decided by `behaviour.decide` (shared with the stdio mock); this module adds
the transport rules of Streamable HTTP (sessions, SSE or JSON responses, the GET stream
for server notifications, DELETE, SSE polling with `Last-Event-ID`) and executes the
plans. Rejections, redirects and header checks are HTTP's own and stay here.

Every request is journalled before anything else happens to it, so a case can always see
what arrived, even at a mock that then rejects, redirects or drops it: one kind="http"
entry per request (method, target, headers) and one kind="rpc" entry per JSON-RPC message
in its body.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import struct
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp_host_conformance.mocks import _rpc, barrier
from mcp_host_conformance.mocks._http import (
    ChunkedBody,
    HttpLimits,
    Request,
    sse_event,
    write_response,
)
from mcp_host_conformance.mocks.behaviour import GARBAGE, Behaviour, Plan
from mcp_host_conformance.mocks.journal import Entry, Journal, rpc_entry
from mcp_host_conformance.mocks.json_input import JsonInputError, read_json
from mcp_host_conformance.mocks.loop_server import Connection, LoopServer, ServedMock
from mcp_host_conformance.mocks.polling import PolledStream, segments, stream_key
from mcp_host_conformance.mocks.spec import (
    ServerSpec,
    Tool,
    healthy,
    marked_tools,
    new_marker_token,
    with_markers,
)

JSON_HEADERS = [("content-type", "application/json")]
TLS_KINDS = ("trusted", "untrusted", "wrong-host", "expired")  # mocks.tls.KINDS
SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
SESSION_NOT_FOUND = "Session not found"  # with 404, to a request of a session it lost


class _Session:
    def __init__(self, session_id: str) -> None:
        self.id = session_id
        # Server-to-client messages waiting for (or flowing to) the GET stream.
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.polled: dict[str, PolledStream] = {}  # stream key -> stream


class HttpMock(ServedMock):
    """A mock MCP server over Streamable HTTP at `url` ("http(s)://127.0.0.1:PORT/mcp").

    `tls`: None (plain HTTP), "trusted" (certificate from the CA in `ca_file`),
    "untrusted" (certificate from a CA nobody is given; `ca_file` is still the trusted
    CA's, so trusting it must not help), "wrong-host" (from the trusted CA, for another
    host name) or "expired" (from the trusted CA, expired). `limits`: the HTTP bounds
    (`HttpLimits`). `address`: the loopback address to listen on ("127.0.0.1", any other
    127.x.y.z, or "::1"; the URL writes an IPv6 one in brackets).
    """

    def __init__(
        self,
        spec: ServerSpec,
        tls: str | None = None,
        limits: HttpLimits | None = None,
        address: str = "127.0.0.1",
    ) -> None:
        if tls not in (None, *TLS_KINDS):
            raise ValueError(f"tls must be None or one of {', '.join(TLS_KINDS)}, not {tls!r}")
        # Checked, copied (change_tools never touches the caller's) and marked, so the mock
        # model finds this mock's tools (mocks.spec.with_markers); a wrong spec fails here.
        self.marker_token = new_marker_token()
        self.spec = with_markers(spec, self.marker_token)
        self.tls = tls
        self.address = address
        self.limits = limits or HttpLimits()
        self.journal = Journal()
        self.behaviour = Behaviour(self.spec)
        self.url: str | None = None
        self.port: int | None = None
        self.ca_file: str | None = None
        self._sessions: dict[str, _Session] = {}
        self._streams = itertools.count(1)

    # ---- lifecycle -----------------------------------------------------------------------

    def _new_server(self) -> LoopServer:
        ssl_context = None
        if self.tls:
            from mcp_host_conformance.mocks import tls as tls_module

            ssl_context = tls_module.server_context(self.tls)
            self.ca_file = tls_module.trusted_ca_file()
        return LoopServer(
            self._handle,
            self.journal,
            name=f"HttpMock-{self.spec.name}",
            ssl_context=ssl_context,
            limits=self.limits,
            address=self.address,
        )

    def _started(self, server: LoopServer) -> None:
        self.port = server.port
        scheme = "https" if self.tls else "http"
        host = f"[{self.address}]" if ":" in self.address else self.address
        self.url = f"{scheme}://{host}:{self.port}/mcp"

    @property
    def tools(self) -> list[Tool]:
        """The tools served now (they change with `change_tools` or the misbehaviour)."""
        return self.behaviour.tools

    @contextmanager
    def healthy(self) -> Iterator[None]:
        """Serve as a healthy server (`spec.healthy`) inside the block: a case adds a server to
        a host that syncs at add, then the server misbehaves as its spec says."""
        spec, behaviour = self.spec, self.behaviour
        self.spec = healthy(spec)
        self.behaviour = Behaviour(self.spec)
        try:
            yield
        finally:
            self.spec, self.behaviour = spec, behaviour

    # ---- tools changing mid-session -----------------------------------------------------

    def change_tools(self, tools: list[Tool]) -> None:
        """Switch the tool list and send `notifications/tools/list_changed` to every session."""
        tools = marked_tools(tools, self.marker_token)
        if self._server is None or self._server.loop is None:
            self.behaviour.set_tools(tools)
            return

        async def switch() -> None:
            self.behaviour.set_tools(tools)
            self._notify_tools_changed(len(tools))

        self._server.run(switch())

    def _notify_tools_changed(self, count: int) -> None:
        note = _rpc.notification("notifications/tools/list_changed")
        for session in self._sessions.values():
            session.outbox.put_nowait(note)
        self.journal.record(Entry(kind="event", extra={"event": "tools-changed", "count": count}))

    # ---- requests ------------------------------------------------------------------------

    async def _handle(self, request: Request, conn: Connection) -> bool:
        """Answer one request; False means close the connection afterwards."""
        keep = request.keep_alive
        http_entry = self.admin_or_record(request, conn)
        if http_entry is None:
            return keep
        if request.path != "/mcp":
            write_response(conn.writer, 404, b"not found", keep_alive=keep)
            return keep
        if request.method == "POST":
            return await self._post(request, conn, http_entry)
        if self._gate(request, conn):
            return keep
        if request.method == "GET":
            return await self._get(request, conn)
        if request.method == "DELETE":
            return self._delete(request, conn)
        write_response(conn.writer, 405, b"", [("allow", "GET, POST, DELETE")], keep_alive=keep)
        return keep

    def _gate(self, request: Request, conn: Connection, methods: list[str] | None = None) -> bool:
        """Reject the request if the spec says so (after it was journalled); True if rejected.
        `methods`: the JSON-RPC methods in a POST's body (`reject_at` picks among them)."""
        mis = self.spec.misbehaviour
        if mis.reject_at != "*" and mis.reject_at not in (methods or ()):
            return False
        status = mis.reject_status
        if not status and mis.accept_header:
            if request.headers.get(mis.accept_header.lower()) != mis.accept_value:
                status = 401
        if not status:
            return False
        challenge = mis.reject_challenge
        if challenge is None and status == 401:
            challenge = 'Bearer realm="mock"'
        headers = [("www-authenticate", challenge)] if challenge else []
        body = json.dumps({"error": "unauthorized" if status == 401 else "forbidden"}).encode()
        write_response(
            conn.writer, status, body, JSON_HEADERS + headers, keep_alive=request.keep_alive
        )
        return True

    def _session_problem(self, request: Request) -> tuple[int, str] | None:
        session_id = request.headers.get("mcp-session-id")
        if session_id is None:
            return 400, "Bad Request: Mcp-Session-Id header is required"
        if session_id not in self._sessions:
            return 404, SESSION_NOT_FOUND
        return None

    def _refuse(self, conn: Connection, status: int, message: str, keep: bool) -> None:
        reply = _rpc.error(None, _rpc.INVALID_REQUEST, message)
        write_response(
            conn.writer, status, _rpc.compact(reply).encode(), JSON_HEADERS, keep_alive=keep
        )

    def _event(self, conn: Connection, extra: dict[str, Any]) -> None:
        self.journal.record(Entry(kind="event", connection=conn.id, extra=dict(extra)))

    # ---- GET: server notifications, or a polled stream resumed ------------------------------

    async def _get(self, request: Request, conn: Connection) -> bool:
        problem = self._session_problem(request)
        if problem:
            self._refuse(conn, problem[0], problem[1], request.keep_alive)
            return request.keep_alive
        session = self._sessions[request.headers["mcp-session-id"]]
        last_event_id = request.headers.get("last-event-id")
        if last_event_id is not None and self.spec.misbehaviour.poll_call == "refuse-resume":
            self._event(conn, {"event": "sse-resume-refused", "last_event_id": last_event_id[:100]})
            allow = [("allow", "POST, DELETE")]
            write_response(conn.writer, 405, b"", allow, keep_alive=request.keep_alive)
            return request.keep_alive
        if last_event_id is not None:
            return await self._resume(session, last_event_id, request, conn)
        body = ChunkedBody(conn.writer)
        body.start(200, SSE_HEADERS)
        await conn.writer.drain()
        eof = asyncio.ensure_future(conn.reader.read(1))  # the client hanging up ends it
        next_message: asyncio.Future[dict[str, Any] | None] | None = None
        try:
            while True:
                next_message = asyncio.ensure_future(session.outbox.get())
                done, _ = await asyncio.wait(
                    {next_message, eof}, return_when=asyncio.FIRST_COMPLETED
                )
                if next_message not in done:
                    return False
                message = next_message.result()
                if message is None:  # session deleted
                    await body.end()
                    return False
                await body.send(sse_event(_rpc.compact(message)))
        finally:
            # Also when the mock closes mid-wait (this task cancelled): a pending get() left
            # behind would be destroyed with the loop and warn.
            eof.cancel()
            if next_message is not None:
                next_message.cancel()

    async def _resume(
        self, session: _Session, last_event_id: str, request: Request, conn: Connection
    ) -> bool:
        stream = session.polled.get(stream_key(last_event_id))
        delivery = stream.resume(last_event_id) if stream is not None else None
        if stream is None or delivery is None:
            self._event(conn, {"event": "sse-resume-unknown", "last_event_id": last_event_id[:100]})
            message = "Bad Request: no stream of this session sent that Last-Event-ID"
            self._refuse(conn, 400, message, request.keep_alive)
            return request.keep_alive
        self._event(
            conn,
            {
                "event": "sse-resumed",
                "stream": stream.key,
                "last_event_id": last_event_id,
                "events": len(delivery.events),
                "ending": delivery.ending,
            },
        )
        body = ChunkedBody(conn.writer)
        body.start(200, SSE_HEADERS, keep_alive=request.keep_alive)
        for event in delivery.events:
            await body.send(event)
        await conn.writer.drain()
        if delivery.ending == "stall":
            await _until_client_leaves(conn.reader)
            return False
        await body.end()
        if stream.finished:
            session.polled.pop(stream.key, None)
        return request.keep_alive

    def _delete(self, request: Request, conn: Connection) -> bool:
        problem = self._session_problem(request)
        if problem:
            self._refuse(conn, problem[0], problem[1], request.keep_alive)
            return request.keep_alive
        session = self._sessions.pop(request.headers["mcp-session-id"])
        session.outbox.put_nowait(None)
        write_response(conn.writer, 200, keep_alive=request.keep_alive)
        return request.keep_alive

    # ---- POST: JSON-RPC messages ------------------------------------------------------------

    async def _post(self, request: Request, conn: Connection, http_entry: Entry) -> bool:
        keep = request.keep_alive
        mis = self.spec.misbehaviour
        try:
            payload = read_json(request.body, max_bytes=self.limits.max_body_bytes)
        except JsonInputError as exc:
            http_entry.extra["raw"] = request.body[:200].decode("utf-8", "replace")
            http_entry.extra["error"] = "parse error"
            http_entry.extra["reason"] = str(exc)
            self.journal.record(
                rpc_entry(
                    request.body,
                    "unreadable",
                    error=str(exc),
                    body_size=len(request.body),
                    headers=request.headers,
                    connection=conn.id,
                )
            )
            if not self._gate(request, conn):
                reply = _rpc.error(None, _rpc.PARSE_ERROR, f"Parse error: {exc}")
                write_response(
                    conn.writer, 400, _rpc.compact(reply).encode(), JSON_HEADERS, keep_alive=keep
                )
            return keep
        batch = isinstance(payload, list)
        messages = payload if batch else [payload]
        requests: list[dict[str, Any]] = []
        invalid: list[dict[str, Any]] = []
        methods: list[str] = []
        for message in messages:
            kind, problem = _rpc.classify(message)
            self.journal.record(
                rpc_entry(
                    message,
                    kind,
                    body_size=len(request.body),
                    headers=request.headers,
                    connection=conn.id,
                )
            )
            if isinstance(message, dict) and isinstance(message.get("method"), str):
                methods.append(message["method"])
            if kind == "request":
                requests.append(message)
            elif problem is not None:
                invalid.append(problem)

        if self._gate(request, conn, methods):
            return keep
        if batch and not messages:
            self._refuse(conn, 400, "Invalid Request: empty batch", keep)
            return keep
        if (
            mis.redirect_status
            and mis.redirect_to
            and (mis.redirect_at == "*" or mis.redirect_at in methods)
        ):
            write_response(
                conn.writer,
                mis.redirect_status,
                b"",
                [("location", mis.redirect_to)],
                keep_alive=keep,
            )
            return keep

        headers: list[tuple[str, str]] = []
        session: _Session | None = None
        if "initialize" in [r["method"] for r in requests]:
            session = _Session(uuid.uuid4().hex)
            self._sessions[session.id] = session
            headers.append(("mcp-session-id", session.id))
        else:
            unknown = self._session_problem(request)
            if unknown:
                self._refuse(conn, unknown[0], unknown[1], keep)
                return keep
            session = self._sessions[request.headers["mcp-session-id"]]

        if not requests:
            if invalid:
                body = _rpc.compact(invalid if batch else invalid[0]).encode()
                write_response(conn.writer, 400, body, JSON_HEADERS, keep_alive=keep)
            else:
                write_response(conn.writer, 202, keep_alive=keep)
            return keep
        return await self._answer(requests, invalid, batch, headers, session, request, conn)

    async def _answer(
        self,
        requests: list[dict[str, Any]],
        invalid: list[dict[str, Any]],
        batch: bool,
        headers: list[tuple[str, str]],
        session: _Session,
        request: Request,
        conn: Connection,
    ) -> bool:
        """Decide each request's plan, then execute them together (one HTTP response)."""
        keep = request.keep_alive
        plans = [self.behaviour.plan(message) for message in requests]
        for plan in plans:
            for event in plan.events:
                self._event(conn, event)
            if plan.tools_after is not None:
                self._notify_tools_changed(len(plan.tools_after))
        dropped = next((p.drop for p in plans if p.drop), None)
        if dropped:
            return await self._drop(dropped, conn)
        json_mode = self.spec.response_mode == "json"
        if any(plan.session_lost for plan in plans):
            # as a server that no longer knows the session: the client must initialize again
            lost = self._sessions.pop(session.id, None)
            if lost is not None:
                lost.outbox.put_nowait(None)
            self._refuse(conn, 404, SESSION_NOT_FOUND, keep)
            return keep
        status = next((p.http_status for p in plans if p.http_status), None)
        if status is not None:
            reason = b"the server failed" if status >= 500 else b"the request was refused"
            kind = [("content-type", "text/plain")]
            write_response(conn.writer, status, reason, kind + headers, keep_alive=keep)
            return keep
        if any(plan.garbage for plan in plans):
            kind = JSON_HEADERS if json_mode else SSE_HEADERS
            write_response(conn.writer, 200, GARBAGE, kind + headers, keep_alive=keep)
            return keep
        polled = [plan for plan in plans if plan.poll]
        if polled:
            return await self._answer_polled(plans, invalid, headers, session, request, conn)
        framing = self.spec.framing
        if json_mode:
            replies = list(invalid)
            for plan in plans:
                if not await self._wait(plan, conn):
                    return False
                # no stream to send progress on: the call takes as long all the same
                await asyncio.sleep(plan.progress_interval * len(plan.progress))
                assert plan.reply is not None
                replies.append(plan.reply)
            body = _rpc.compact(replies if batch else replies[0]).encode()
            if framing == "chunked":
                chunked = ChunkedBody(conn.writer)
                chunked.start(200, JSON_HEADERS + headers, keep_alive=keep)
                await chunked.send(body)
                await chunked.end()
            else:
                write_response(conn.writer, 200, body, JSON_HEADERS + headers, keep_alive=keep)
            return keep
        whole = framing == "length"  # the stream sent at once, with a Content-Length
        collected: list[bytes] = []
        stream = ChunkedBody(conn.writer)
        if not whole:
            stream.start(200, SSE_HEADERS + headers, keep_alive=keep)
            await conn.writer.drain()

        async def send(event: bytes) -> None:
            if whole:
                collected.append(event)
            else:
                await stream.send(event)

        for reply in invalid:
            await send(sse_event(_rpc.compact(reply)))
        for plan in plans:
            if not await self._wait(plan, conn):
                return False
            for note in plan.progress:
                await asyncio.sleep(plan.progress_interval)
                await send(sse_event(_rpc.compact(note)))
            assert plan.reply is not None
            await send(sse_event(_rpc.compact(plan.reply)))
        if whole:
            write_response(
                conn.writer, 200, b"".join(collected), SSE_HEADERS + headers, keep_alive=keep
            )
        else:
            await stream.end()
        return keep

    async def _wait(self, plan: Plan, conn: Connection) -> bool:
        """Carry out a plan's barrier, delay or stall; False if it stalls (the client has gone)."""
        if plan.stall:
            await _until_client_leaves(conn.reader)
            return False
        if plan.barrier:
            await barrier.arrive(plan.barrier, self.spec.name)
        if plan.delay:
            await asyncio.sleep(plan.delay)
        return True

    async def _answer_polled(
        self,
        plans: list[Plan],
        invalid: list[dict[str, Any]],
        headers: list[tuple[str, str]],
        session: _Session,
        request: Request,
        conn: Connection,
    ) -> bool:
        """An SSE stream that primes, answers what is not polled, and closes early; the
        polled replies wait for the client to resume it (see `polling`)."""
        first: list[dict[str, Any]] = list(invalid)
        final: list[dict[str, Any]] = []
        variant = next(p.poll for p in plans if p.poll)
        for plan in plans:
            if not await self._wait(plan, conn):
                return False
            if plan.reply is not None:
                (final if plan.poll else first).append(plan.reply)
        assert variant is not None
        stream = PolledStream(
            key=f"s{next(self._streams)}",
            retry_ms=self.spec.misbehaviour.poll_retry_ms,
            plan=segments(variant, first, final),
        )
        session.polled[stream.key] = stream
        delivery = stream.open()
        body = ChunkedBody(conn.writer)
        body.start(200, SSE_HEADERS + headers, keep_alive=request.keep_alive)
        for event in delivery.events:
            await body.send(event)
        await body.end()  # closed before the stream is complete: the client must poll
        self._event(
            conn,
            {
                "event": "sse-closed",
                "stream": stream.key,
                "last_event_id": delivery.last_event_id,
                "variant": variant,
            },
        )
        return request.keep_alive

    async def _drop(self, how: str, conn: Connection) -> bool:
        if how == "reset":
            sock = conn.writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.writer.transport.abort()
        elif how == "stall":
            await _until_client_leaves(conn.reader)
        return False


async def _until_client_leaves(reader: asyncio.StreamReader) -> None:
    """Hold the connection open, answering nothing, until the client closes it."""
    try:
        while await reader.read(65536):
            pass
    except (ConnectionError, OSError):
        pass
