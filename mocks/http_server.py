"""The Streamable HTTP mock MCP server, plain or TLS, well-behaved or not.

Strategy: one asyncio server at the socket level, on its own event loop in a background
thread, so a test (synchronous or not) can start it in milliseconds and read its journal
while it runs. It parses HTTP itself (`mcp_host_conformance.mocks._http`) because
several misbehaviours live below what an ASGI app can do: a TCP reset right after a
`tools/call` was read, a stall with the connection held open, a response over any sane
size limit. The MCP protocol is answered by the pure functions of
`mcp_host_conformance.mocks._rpc`; this module adds the transport rules of Streamable
HTTP (sessions, SSE or JSON responses, the GET stream for server notifications, DELETE)
and applies the spec's `Misbehaviour`.

Every request is journalled before anything else happens to it, so a case can always see
what arrived, even at a mock that then rejects, redirects or drops it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import struct
import threading
import uuid
from typing import Any

from mcp_host_conformance.mocks import _rpc
from mcp_host_conformance.mocks._http import (
    BadRequest,
    ChunkedBody,
    Request,
    read_request,
    sse_event,
    write_response,
)
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.spec import ServerSpec, Tool, new_marker_token, with_markers

START_TIMEOUT = 10.0
JSON_HEADERS = [("content-type", "application/json")]
SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]


class _Session:
    def __init__(self, session_id: str) -> None:
        self.id = session_id
        # Server-to-client messages waiting for (or flowing to) the GET stream.
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()


class HttpMock:
    """A mock MCP server over Streamable HTTP at `url` ("http(s)://127.0.0.1:PORT/mcp").

    `tls`: None (plain HTTP), "trusted" (certificate from the CA in `ca_file`) or
    "untrusted" (certificate from a CA nobody is given; `ca_file` is still the trusted
    CA's, so trusting it must not help).
    """

    def __init__(self, spec: ServerSpec, tls: str | None = None) -> None:
        if tls not in (None, "trusted", "untrusted"):
            raise ValueError(f"tls must be None, 'trusted' or 'untrusted', not {tls!r}")
        # a marked copy: change_tools must not touch the caller's spec, and the mock model
        # finds this mock's tools by their markers (mocks.spec.with_markers)
        self.marker_token = new_marker_token()
        self.spec = with_markers(spec, self.marker_token)
        self.tls = tls
        self.journal = Journal()
        self.url: str | None = None
        self.port: int | None = None
        self.ca_file: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sessions: dict[str, _Session] = {}
        self._connections = itertools.count(1)
        self._calls_answered = 0
        self._startup_error: BaseException | None = None

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> HttpMock:
        if self._thread is not None:
            return self
        ssl_context = None
        if self.tls:
            from mcp_host_conformance.mocks import tls as tls_module

            ssl_context = tls_module.server_context(self.tls)
            self.ca_file = tls_module.trusted_ca_file()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(ssl_context, ready),
            name=f"HttpMock-{self.spec.name}",
            daemon=True,
        )
        self._thread.start()
        if not ready.wait(START_TIMEOUT) or self._startup_error is not None:
            self.close()
            raise RuntimeError(f"HTTP mock {self.spec.name!r} did not start: {self._startup_error}")
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/mcp"
        return self

    def _run(self, ssl_context: Any, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.set_exception_handler(self._loop_error)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(
                    self._connection, "127.0.0.1", 0, ssl=ssl_context, limit=256 * 1024
                )
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # reported by start()
            self._startup_error = exc
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self._stop(), loop)
            try:
                future.result(START_TIMEOUT)
            except Exception:  # pragma: no cover - stopping must not raise
                pass
            loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT)
        self._thread = None
        self._loop = None

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        # Every task, not only the tracked ones: a connection accepted just before the server
        # closed has a task whose coroutine has not started yet (and so is not tracked); left
        # pending, it would be destroyed with the loop and warn.
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def __enter__(self) -> HttpMock:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # TLS handshakes a client refuses end up here; they are facts for the journal, not
        # crashes (and must not spam the test output).
        self.journal.record(
            Entry(
                kind="event", extra={"event": "loop-error", "message": str(context.get("message"))}
            )
        )

    # ---- tools changing mid-session -----------------------------------------------------------

    def change_tools(self, tools: list[Tool]) -> None:
        """Switch the tool list and send `notifications/tools/list_changed` to every session."""
        loop = self._loop
        if loop is None:
            self.spec.tools = with_markers(ServerSpec(tools=tools), self.marker_token).tools
            return
        done = threading.Event()

        def switch() -> None:
            self._switch_tools(list(tools))
            done.set()

        loop.call_soon_threadsafe(switch)
        done.wait(START_TIMEOUT)

    def _switch_tools(self, tools: list[Tool]) -> None:
        self.spec.tools = with_markers(ServerSpec(tools=tools), self.marker_token).tools
        note = _rpc.notification("notifications/tools/list_changed")
        for session in self._sessions.values():
            session.outbox.put_nowait(note)
        self.journal.record(
            Entry(kind="event", extra={"event": "tools-changed", "tools": len(tools)})
        )

    # ---- connections ----------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = f"c{next(self._connections)}"
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                try:
                    request = await read_request(reader)
                except BadRequest as exc:
                    self.journal.record(
                        Entry(
                            kind="event",
                            connection=connection,
                            extra={"event": "bad-http", "reason": str(exc)},
                        )
                    )
                    body = json.dumps({"error": str(exc)}).encode()
                    write_response(writer, exc.status, body, JSON_HEADERS, keep_alive=False)
                    await writer.drain()
                    break
                if request is None:
                    break
                keep = await self._dispatch(request, reader, writer, connection)
                await writer.drain()
                if not keep or not request.keep_alive:
                    break
        except asyncio.CancelledError:
            writer.transport.abort()
            raise
        except (ConnectionError, OSError):
            pass
        except Exception as exc:  # a mock never crashes on what a client sends
            self.journal.record(
                Entry(
                    kind="event",
                    connection=connection,
                    extra={"event": "internal-error", "error": repr(exc)},
                )
            )
        finally:
            self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _dispatch(
        self,
        request: Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection: str,
    ) -> bool:
        """Answer one request; False means close the connection afterwards."""
        path, method = request.path, request.method
        keep = request.keep_alive
        if path == "/__journal" and method == "GET":
            body = json.dumps(self.journal.to_json()).encode()
            write_response(writer, 200, body, JSON_HEADERS, keep_alive=keep)
            return keep
        if path == "/__reset" and method == "POST":
            self.journal.clear()
            write_response(writer, 204, keep_alive=keep)
            return keep

        http_entry = self.journal.record(
            Entry(
                kind="http",
                http_method=method,
                path=request.target,
                headers=dict(request.headers),
                body_size=len(request.body),
                connection=connection,
            )
        )
        if path != "/mcp":
            write_response(writer, 404, b"not found", keep_alive=keep)
            return keep
        if method == "POST":
            return await self._post(request, reader, writer, connection, http_entry)
        if self._gate(request, writer):
            return keep
        if method == "GET":
            return await self._get_stream(request, reader, writer)
        if method == "DELETE":
            return self._delete(request, writer)
        write_response(writer, 405, b"", [("allow", "GET, POST, DELETE")], keep_alive=keep)
        return keep

    def _gate(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        """Reject the request if the spec says so (after it was journalled); True if rejected."""
        mis = self.spec.misbehaviour
        if mis.reject_status:
            self._reject(writer, mis.reject_status, request.keep_alive)
            return True
        if mis.accept_header and request.headers.get(mis.accept_header.lower()) != mis.accept_value:
            self._reject(writer, 401, request.keep_alive)
            return True
        return False

    def _reject(self, writer: asyncio.StreamWriter, status: int, keep: bool) -> None:
        headers = [("www-authenticate", 'Bearer realm="mock"')] if status == 401 else []
        body = json.dumps({"error": "unauthorized" if status == 401 else "forbidden"}).encode()
        write_response(writer, status, body, JSON_HEADERS + headers, keep_alive=keep)

    def _session_problem(self, request: Request) -> tuple[int, str] | None:
        session_id = request.headers.get("mcp-session-id")
        if session_id is None:
            return 400, "Bad Request: Mcp-Session-Id header is required"
        if session_id not in self._sessions:
            return 404, "Session not found"
        return None

    def _write_rpc_error(
        self, writer: asyncio.StreamWriter, status: int, reply: dict[str, Any], keep: bool
    ) -> None:
        write_response(writer, status, _rpc.compact(reply).encode(), JSON_HEADERS, keep_alive=keep)

    # ---- GET: the stream of server notifications ----------------------------------------------

    async def _get_stream(
        self, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        problem = self._session_problem(request)
        if problem:
            self._write_rpc_error(
                writer,
                problem[0],
                _rpc.error(None, _rpc.INVALID_REQUEST, problem[1]),
                request.keep_alive,
            )
            return request.keep_alive
        session = self._sessions[request.headers["mcp-session-id"]]
        body = ChunkedBody(writer)
        body.start(200, SSE_HEADERS)
        await writer.drain()
        eof = asyncio.ensure_future(reader.read(1))  # the client hanging up ends the stream
        next_message: asyncio.Future | None = None
        try:
            while True:
                next_message = asyncio.ensure_future(session.outbox.get())
                done, _ = await asyncio.wait(
                    {next_message, eof}, return_when=asyncio.FIRST_COMPLETED
                )
                if next_message not in done:
                    return False
                message = next_message.result()
                if message is None:  # session deleted or mock closing
                    await body.end()
                    return False
                await body.send(sse_event(_rpc.compact(message)))
        finally:
            # Also when the mock closes mid-wait (this task cancelled): a pending get() left
            # behind would be destroyed with the loop and warn.
            eof.cancel()
            if next_message is not None:
                next_message.cancel()

    def _delete(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        problem = self._session_problem(request)
        if problem:
            self._write_rpc_error(
                writer,
                problem[0],
                _rpc.error(None, _rpc.INVALID_REQUEST, problem[1]),
                request.keep_alive,
            )
            return request.keep_alive
        session = self._sessions.pop(request.headers["mcp-session-id"])
        session.outbox.put_nowait(None)
        write_response(writer, 200, keep_alive=request.keep_alive)
        return request.keep_alive

    # ---- POST: JSON-RPC messages ----------------------------------------------------------------

    async def _post(
        self,
        request: Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection: str,
        http_entry: Entry,
    ) -> bool:
        keep = request.keep_alive
        mis = self.spec.misbehaviour
        try:
            payload = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            http_entry.extra["raw"] = request.body[:200].decode("utf-8", "replace")
            http_entry.extra["error"] = "parse error"
            if not self._gate(request, writer):
                self._write_rpc_error(
                    writer, 400, _rpc.error(None, _rpc.PARSE_ERROR, "Parse error"), keep
                )
            return keep
        batch = isinstance(payload, list)
        messages = payload if batch else [payload]
        requests: list[dict[str, Any]] = []
        invalid: list[dict[str, Any]] = []
        methods: list[str] = []
        for message in messages:
            kind, problem = _rpc.classify(message)
            fields = message if isinstance(message, dict) else {}
            rpc_method = fields.get("method") if isinstance(fields.get("method"), str) else None
            entry = Entry(
                kind="rpc",
                method=rpc_method,
                id=fields.get("id"),
                params=fields.get("params"),
                headers=dict(request.headers),
                connection=connection,
                extra={"message_kind": kind},
            )
            if kind == "invalid":
                entry.extra["raw"] = _rpc.compact(message)[:200]
            self.journal.record(entry)
            if rpc_method:
                methods.append(rpc_method)
            if kind == "request":
                requests.append(message)
            elif problem is not None:
                invalid.append(problem)

        if self._gate(request, writer):
            return keep
        if batch and not messages:
            self._write_rpc_error(
                writer,
                400,
                _rpc.error(None, _rpc.INVALID_REQUEST, "Invalid Request: empty batch"),
                keep,
            )
            return keep

        if (
            mis.redirect_status
            and mis.redirect_to
            and (mis.redirect_at == "*" or mis.redirect_at in methods)
        ):
            write_response(
                writer, mis.redirect_status, b"", [("location", mis.redirect_to)], keep_alive=keep
            )
            return keep

        headers: list[tuple[str, str]] = []
        if "initialize" in [r["method"] for r in requests]:
            session = _Session(uuid.uuid4().hex)
            self._sessions[session.id] = session
            headers.append(("mcp-session-id", session.id))
        else:
            problem = self._session_problem(request)
            if problem:
                self._write_rpc_error(
                    writer, problem[0], _rpc.error(None, _rpc.INVALID_REQUEST, problem[1]), keep
                )
                return keep

        if not requests:
            if invalid:
                body = invalid if batch else invalid[0]
                write_response(
                    writer, 400, _rpc.compact(body).encode(), JSON_HEADERS, keep_alive=keep
                )
            else:
                write_response(writer, 202, keep_alive=keep)
            return keep

        if mis.drop_call and "tools/call" in [r["method"] for r in requests]:
            return await self._drop(mis.drop_call, reader, writer, connection)

        if self.spec.response_mode == "json":
            replies = list(invalid)
            for message in requests:
                reply = await self._reply(message, reader)
                if reply is None:
                    return False
                replies.append(reply)
            body = _rpc.compact(replies if batch else replies[0]).encode()
            write_response(writer, 200, body, JSON_HEADERS + headers, keep_alive=keep)
            return keep

        stream = ChunkedBody(writer)
        stream.start(200, SSE_HEADERS + headers, keep_alive=keep)
        await writer.drain()
        for reply in invalid:
            await stream.send(sse_event(_rpc.compact(reply)))
        for message in requests:
            reply = await self._reply(message, reader)
            if reply is None:
                return False
            await stream.send(sse_event(_rpc.compact(reply)))
        await stream.end()
        return keep

    async def _reply(
        self, message: dict[str, Any], reader: asyncio.StreamReader
    ) -> dict[str, Any] | None:
        """The reply to one request after the spec's delays; None if it stalls (client gone)."""
        mis = self.spec.misbehaviour
        method = message["method"]
        if method in mis.stall:
            await _until_client_leaves(reader)
            return None
        delay = mis.delays.get(method)
        if delay:
            await asyncio.sleep(float(delay))
        reply = _rpc.answer(self.spec, message)
        if mis.oversize_at == method and "result" in reply:
            reply["result"] = _rpc.padded(reply["result"], mis.oversize_bytes)
        if method == "tools/call":
            self._calls_answered += 1
            if mis.change_tools_after_call and self._calls_answered == 1:
                self._switch_tools(list(mis.changed_tools))
        return reply

    async def _drop(
        self, how: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: str
    ) -> bool:
        self.journal.record(
            Entry(kind="event", connection=connection, extra={"event": f"call-dropped-{how}"})
        )
        if how == "reset":
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        elif how == "stall":
            await _until_client_leaves(reader)
        return False


async def _until_client_leaves(reader: asyncio.StreamReader) -> None:
    """Hold the connection open, answering nothing, until the client closes it."""
    while await reader.read(65536):
        pass
