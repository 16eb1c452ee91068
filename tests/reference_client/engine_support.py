"""Helpers for the engine's tests: running coroutines, tiny hand-made servers, a scripted UI.

Strategy: the engine is asyncio; tests stay plain pytest functions that call `run(...)`,
so no async plugin is needed. Where a mock cannot misbehave the way a test needs, a small
asyncio socket server answers with fixed bytes (`RawHttpServer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from mcp_host_conformance.reference_client.confirmation import ConfirmationView


def run(coro: Any, timeout: float = 60.0) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


class RawHttpServer:
    """A loopback HTTP/1.1 server in its own thread; `respond(request_bytes) -> bytes`
    writes whatever the test wants (or returns None to keep the connection silent)."""

    def __init__(self, respond: Callable[[bytes], bytes | None]) -> None:
        self.respond = respond
        self.requests: list[bytes] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> RawHttpServer:
        self._thread.start()
        assert self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(asyncio.sleep(0))
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length) if length else b""
                self.requests.append(head + body)
                answer = self.respond(head + body)
                if answer is None:
                    await reader.read()  # keep silent until the client leaves
                    return
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def http_answer(
    status: int, body: bytes, content_type: str = "application/json", extra: str = ""
) -> bytes:
    return (
        f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


class ScriptedUI:
    """A UI whose person answers from lists; records everything shown."""

    def __init__(self, approvals: list[str] | None = None, acks: list[bool] | None = None) -> None:
        self.approvals = list(approvals or [])
        self.acks = list(acks or [])
        self.shown: list[str] = []
        self.views: list[ConfirmationView] = []
        self.prompts: list[str] = []
        self.on_approve: Callable[[ConfirmationView], None] | None = None

    def show(self, text: str) -> None:
        self.shown.append(text)

    async def approve(self, view: ConfirmationView) -> str:
        self.views.append(view)
        if self.on_approve is not None:
            self.on_approve(view)
        return self.approvals.pop(0) if self.approvals else ""

    async def acknowledge(self, prompt: str) -> bool:
        self.prompts.append(prompt)
        return self.acks.pop(0) if self.acks else False

    @property
    def text(self) -> str:
        return "\n".join(self.shown)


class StreamingHttpServer:
    """A loopback HTTP/1.1 server that answers every request with `head` and then writes
    `chunk` (chunked encoding) until the client hangs up or `limit` bytes are sent, counting
    what it sent: for clients that must stop reading early."""

    def __init__(self, head: bytes, chunk: bytes, limit: int = 1 << 34) -> None:
        self.head = head
        self.chunk = chunk
        self.limit = limit
        self.sent = 0
        self.done = threading.Event()  # the client hung up (or the limit was reached)
        self._server = RawHttpServer(lambda request: None)
        self._server._handle = self._handle  # type: ignore[method-assign]

    @property
    def url(self) -> str:
        return self._server.url.removesuffix("/mcp")

    def __enter__(self) -> StreamingHttpServer:
        self._server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.__exit__(*exc)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(self.head)
            framed = f"{len(self.chunk):x}\r\n".encode() + self.chunk + b"\r\n"
            while self.sent < self.limit:
                writer.write(framed)
                await writer.drain()
                self.sent += len(self.chunk)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.done.set()
            writer.close()
