"""SSE resumption (the 2025-11-25 Streamable HTTP polling), against a small in-test server.

The server answers `tools/call` with an event stream that primes the client (an event id and
a `retry`, no data) and closes; what it does on the resuming GET (with `Last-Event-ID`) is
the case: deliver the result, a JSON-RPC error, nothing (stall), close again, refuse (405).
Every case checks RETRY-1 on the server's side: one `tools/call` POST, whatever happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.model_script import Step, function_call_outputs
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.reference_client import results
from mcp_host_conformance.reference_client.config import HttpServerConfig
from mcp_host_conformance.reference_client.engine import HostEngine
from mcp_host_conformance.reference_client.rpc import RpcSession
from mcp_host_conformance.reference_client.transports import TransportError
from mcp_host_conformance.reference_client.transports import http as http_transport
from mcp_host_conformance.reference_client.transports.http import HttpTransport, retry_delay
from mcp_host_conformance.reference_client.transports.sse import SseParser
from tests.reference_client.engine_support import ScriptedUI, run

RESULT = {"content": [{"type": "text", "text": "resumed result"}]}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "polling", "version": "1"},
}
TOOLS = {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}


@dataclass
class Seen:
    method: str  # "POST tools/call", "GET", ...
    last_event_id: str | None
    at: float


@dataclass
class PollingServer:
    """`on_get`: per resuming GET, in order: "result", "error", "stall", "close", "405",
    "result-json"; the last one repeats. `prime`: the POST stream's priming event (None: none).
    `post_close`: "graceful" (end the chunked body) or "reset" (drop the connection)."""

    on_get: list[str] = field(default_factory=lambda: ["result"])
    retry_ms: int | None = 50
    prime: bool = True
    post_close: str = "graceful"
    seen: list[Seen] = field(default_factory=list)
    closed_at: list[float] = field(default_factory=list)
    call_id: object = None
    port: int = 0

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._events = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def count(self, what: str) -> int:
        return sum(1 for s in self.seen if s.method == what)

    def __enter__(self) -> PollingServer:
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

    def _event(self, data: str = "", *, retry: bool = False) -> bytes:
        self._events += 1
        text = f"id: ev-{self._events}\n"
        if retry and self.retry_ms is not None:
            text += f"retry: {self.retry_ms}\n"
        return (text + f"data: {data}\n\n").encode()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ")[0]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                if method == "GET":
                    self.seen.append(Seen("GET", headers.get("last-event-id"), time.monotonic()))
                    await self._get(writer)
                elif method == "DELETE":
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                else:
                    message = json.loads(body)
                    self.seen.append(Seen(f"POST {message.get('method')}", None, time.monotonic()))
                    if not await self._post(message, writer):
                        return
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @staticmethod
    def _json(writer: asyncio.StreamWriter, value: object, status: str = "200 OK") -> None:
        data = json.dumps(value).encode()
        writer.write(
            f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
            f"mcp-session-id: s-1\r\ncontent-length: {len(data)}\r\n\r\n".encode()
            + data
        )

    @staticmethod
    def _stream_head(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"mcp-session-id: s-1\r\ntransfer-encoding: chunked\r\n\r\n"
        )

    @staticmethod
    def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    async def _post(self, message: dict, writer: asyncio.StreamWriter) -> bool:
        if "id" not in message:
            writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            return True
        if message["method"] == "initialize":
            self._json(writer, {"jsonrpc": "2.0", "id": message["id"], "result": INIT})
            return True
        if message["method"] == "tools/list":
            self._json(writer, {"jsonrpc": "2.0", "id": message["id"], "result": TOOLS})
            return True
        self.call_id = message["id"]
        self._stream_head(writer)
        if self.prime:
            self._chunk(writer, self._event(retry=True))
        await writer.drain()
        self.closed_at.append(time.monotonic())
        if self.post_close == "reset":
            writer.transport.abort()
            return False
        writer.write(b"0\r\n\r\n")  # the stream ends, without the response
        return True

    async def _get(self, writer: asyncio.StreamWriter) -> None:
        gets = self.count("GET")
        action = self.on_get[min(gets, len(self.on_get)) - 1]
        if action == "405":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            return
        if action == "result-json":
            self._json(writer, {"jsonrpc": "2.0", "id": self.call_id, "result": RESULT})
            return
        self._stream_head(writer)
        self._chunk(writer, self._event(retry=True))
        if action == "result":
            response = {"jsonrpc": "2.0", "id": self.call_id, "result": RESULT}
            self._chunk(writer, self._event(json.dumps(response)))
        elif action == "error":
            error = {"code": -32000, "message": "the tool failed after all"}
            self._chunk(
                writer,
                self._event(json.dumps({"jsonrpc": "2.0", "id": self.call_id, "error": error})),
            )
        elif action == "stall":
            await writer.drain()
            await asyncio.sleep(3600)
        await writer.drain()
        self.closed_at.append(time.monotonic())
        if action != "result":  # "close": end the stream again; "result": stays open
            writer.write(b"0\r\n\r\n")


def call_once(server: PollingServer, timeout: float = 10.0) -> dict:
    async def go() -> dict:
        transport = HttpTransport(server.url, {"X-Key": "k"})
        session = RpcSession(transport)
        await transport.connect()
        try:
            await session.initialize()
            await session.list_tools()
            return await session.call_tool("slow", {})
        finally:
            await session.close()

    return run(go(), timeout)


def test_the_response_comes_on_the_resuming_get() -> None:
    with PollingServer() as server:
        assert call_once(server) == RESULT
    assert server.count("POST tools/call") == 1  # RETRY-1: resuming is not resending
    [get] = [s for s in server.seen if s.method == "GET"]
    assert get.last_event_id == "ev-1"
    assert get.at - server.closed_at[0] >= 0.05  # the retry asked for was waited


def test_retry_is_waited_before_resuming() -> None:
    with PollingServer(retry_ms=400) as server:
        assert call_once(server) == RESULT
    [get] = [s for s in server.seen if s.method == "GET"]
    assert get.at - server.closed_at[0] >= 0.4


def test_a_second_close_is_resumed_again_from_the_latest_event() -> None:
    with PollingServer(on_get=["close", "result"]) as server:
        assert call_once(server) == RESULT
    gets = [s.last_event_id for s in server.seen if s.method == "GET"]
    assert gets == ["ev-1", "ev-2"]
    assert server.count("POST tools/call") == 1


def test_a_lost_connection_after_priming_is_resumed_too() -> None:
    with PollingServer(post_close="reset") as server:
        assert call_once(server) == RESULT
    assert server.count("POST tools/call") == 1 and server.count("GET") == 1


def test_a_json_answer_to_the_get_is_not_a_stream() -> None:
    with PollingServer(on_get=["result-json"]) as server:
        with pytest.raises(TransportError) as caught:
            call_once(server)
    assert caught.value.maybe_acted is True
    assert server.count("POST tools/call") == 1


def test_no_event_id_means_no_resumption() -> None:
    with PollingServer(prime=False) as server:
        with pytest.raises(TransportError, match="no event id") as caught:
            call_once(server)
    assert caught.value.maybe_acted is True
    assert server.count("GET") == 0 and server.count("POST tools/call") == 1


def test_a_refused_get_is_an_uncertain_outcome() -> None:
    with PollingServer(on_get=["405"]) as server:
        with pytest.raises(TransportError, match="HTTP 405") as caught:
            call_once(server)
    assert caught.value.maybe_acted is True  # the call was sent: its outcome is unknown
    assert server.count("POST tools/call") == 1


def test_resumption_attempts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_transport, "MAX_RESUMPTIONS", 3)
    with PollingServer(on_get=["close"], retry_ms=0) as server:
        with pytest.raises(TransportError, match="resumed 3 times"):
            call_once(server)
    assert server.count("GET") == 3 and server.count("POST tools/call") == 1


def test_retry_delay_is_bounded() -> None:
    assert retry_delay(None) == http_transport.DEFAULT_RETRY_SECONDS
    assert retry_delay(250) == 0.25
    assert retry_delay(10**12) == http_transport.MAX_RETRY_SECONDS


# ---- through the engine: the call's status ---------------------------------------------------


def engine_call(server: PollingServer, tmp_path: Path, call_timeout: float) -> tuple[str, str]:
    ui = ScriptedUI(approvals=["y"])
    with MockResponses() as model:
        model.script([Step.call(server="poll", tool="slow", arguments={}), Step.text("ok")])
        engine = HostEngine(
            [HttpServerConfig("poll", server.url, {})],
            model_url=model.url,
            model_key=model.api_key,
            environ={"HOME": str(tmp_path)},
            cwd=tmp_path,
            ui=ui,
            connect_timeout=5.0,
            call_timeout=call_timeout,
        )

        async def go():
            try:
                await engine.start()
                return await engine.ask("q")
            finally:
                await engine.close()

        report = run(go(), timeout=call_timeout + 20)
        [output] = function_call_outputs(model.requests()[1]).values()
    [call] = report.calls
    return call.status, output


@pytest.mark.parametrize(
    ("on_get", "status", "text"),
    [
        (["result"], results.COMPLETED, "resumed result"),
        (["error"], results.FAILED, "the tool failed after all"),
        (["close", "result"], results.COMPLETED, "resumed result"),
        (["405"], results.UNKNOWN, "may have acted"),
        (["stall"], results.UNKNOWN, "call timeout"),
    ],
)
def test_the_call_status_after_resuming(
    tmp_path: Path, on_get: list[str], status: str, text: str
) -> None:
    with PollingServer(on_get=on_get) as server:
        # Only the stalled case waits out its timeout; the others get room a loaded machine
        # needs, so a slow answer is never read as a timeout.
        got, output = engine_call(server, tmp_path, call_timeout=1.5 if "stall" in on_get else 30)
    assert got == status and text in output
    assert server.count("POST tools/call") == 1


# ---- the parser's cursor ---------------------------------------------------------------------


def test_parser_tracks_the_last_event_id_and_retry() -> None:
    parser = SseParser(limit=1024)
    [priming] = parser.feed(b"id: a\nretry: 300\ndata: \n\n")  # an empty data line
    assert priming.data == b"" and parser.feed(b"id: a2\n\n") == []  # no data: no event
    parser.feed(b"id: a\n\n")
    assert (parser.last_event_id, parser.retry_ms) == ("a", 300)
    [event] = parser.feed(b'id: b\ndata: {"x":1}\n\n')
    assert (event.data, event.id, parser.last_event_id) == (b'{"x":1}', "b", "b")
    parser.feed(b"retry: soon\nid: c\0d\n\n")  # invalid retry and an id with NUL: ignored
    assert (parser.last_event_id, parser.retry_ms) == ("b", 300)
    parser.feed(b"id: \xff\n\n")  # an id that cannot go back in a header: not resumable
    assert parser.last_event_id is None
    parser.feed(b"id: " + b"z" * 2000 + b"\n\n")
    assert parser.last_event_id is None
    parser.feed(b"id: e\ndata: half")  # not dispatched: the cursor stays
    assert parser.last_event_id is None


@pytest.mark.parametrize("size", [1, 2, 3, 7, 4096])
def test_parser_gives_the_same_events_whatever_the_chunks(size: int) -> None:
    stream = (
        b"id: a\r\ndata: first\r\n\r\n"  # CRLF, maybe split between chunks
        b"data: " + b"x" * 10_000 + b"\n\n"  # a line longer than any chunk
        b"id: c\rdata: third\r\r"  # lone CRs
        b"data: four\n\n"
    )
    parser = SseParser(limit=1 << 20)
    events = []
    for at in range(0, len(stream), size):
        events += parser.feed(stream[at : at + size])
    assert [(e.data[:5], e.id) for e in events] == [
        (b"first", "a"),
        (b"xxxxx", "a"),
        (b"third", "c"),
        (b"four", "c"),
    ]
    assert len(events[1].data) == 10_000
