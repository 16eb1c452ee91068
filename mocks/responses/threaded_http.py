"""A small threaded HTTP/1.1 server in front of a request handler function.

Strategy: the standard library's `ThreadingHTTPServer` starts in about a millisecond
(the service must be ready in < 50 ms), speaks keep-alive with HTTP/1.1, and streams SSE
with chunked transfer encoding, one chunk per event. It binds 127.0.0.1 only. Closing
shuts the open connections down before joining their threads, so nothing lingers on a
keep-alive socket after `close()`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, str, dict[str, str], bytes, str], Any]  # -> Answer


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # tracked, so close() can join them
    allow_reuse_address = False

    def __init__(self, handle: Handler) -> None:
        self.handle_request_fn = handle
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _RequestHandler)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes: with Nagle on, the body waits for the client's
    # delayed ACK (~40 ms on Linux loopback), and every model request pays it.
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.sockets_lock:
            self.server.open_sockets.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.sockets_lock:
                self.server.open_sockets.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # the journal is the log

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        raw = self._body()
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        peer = f"{self.client_address[0]}:{self.client_address[1]}"
        answer = self.server.handle_request_fn(self.command, self.path, headers, raw, peer)
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.events is None:
            self.send_header("content-length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in answer.events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _serve


class ThreadedHTTP:
    """Serve `handle` on 127.0.0.1:<ephemeral port> until `close()`."""

    def __init__(self, handle: Handler) -> None:
        self._server = _Server(handle)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},  # how long close() waits for the loop to notice
            name=f"mock-http-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        with self._server.sockets_lock:
            sockets = list(self._server.open_sockets)
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()  # joins the request threads
        self._thread.join(timeout=5)
