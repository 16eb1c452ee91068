#!/usr/bin/env python3
"""Fuzz the reference host's transports with hostile messages over real sockets and pipes.

Usage: python scripts/fuzz_transports.py [--messages 10000] [--seed 1] [--bound 10] [--markdown]

Three phases of `--messages` each: HTTP with JSON responses, HTTP with SSE responses
(resumption included: a stream that ends before its response is resumed, and the GET gets
a hostile answer too), and stdio (a child process answering each request with hostile
lines). Every message is the answer to one `tools/call` sent by the reference
host's own transport (`HttpTransport`, `StdioTransport`), then read the way the host reads
it (`rpc.check_response`, `results.from_call_result`).

A message is *handled* when that ends in a result or in the transport's own error
(`McpError`: the host then reports the server unavailable, the call failed or unknown). A
*crash* is any other exception, an exception logged by the event loop, or a child that
could not be restarted; a *hang* is a request that does not end within `--bound` seconds
although the server has finished sending (every hostile answer is finite: the server
writes it and closes). The exit status is 0 only with no crash and no hang.

Hostile means: invalid JSON and UTF-8, lone surrogates, NaN and huge numbers, nesting up to
200,000 deep, wrong or missing ids and fields, batches, oversized messages (over 1 MiB),
lying Content-Length, broken chunked framing, wrong content types and encodings,
redirects and error statuses, SSE with odd line endings, comments, unknown fields, ids
with NUL or non-ASCII, huge or invalid `retry`, events split across writes, streams that end
early; on stdio, lines without an end, blank lines, requests from the server. The server's
`retry` is honoured by the transport up to its bound; this script lowers that bound to
10 ms (the waiting itself is tested in tests/reference_client/test_sse_resumption.py).

The figures of the last full run are in docs/fuzzing.md (`--markdown` prints that table).
The random choices come from `--seed`, so a run can be replayed; `--stdio-server SEED` is
the child process of the stdio phase (standard library only).

Strategy: generation (`hostile_*`) is pure and shared by the HTTP server thread and the
stdio child; `run_fuzz` drives the phases and returns a `FuzzReport`; `main` prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import resource
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ONE_MIB = 1024 * 1024

# ---- generation (pure, standard library only) ---------------------------------------------

TEXTS = [
    "ok",
    "",
    "\x1b]0;title\x07\x1b[2J",
    "\u202etxt.exe",
    "\x00\x9b",
    "é日本🙂",
    "Approve this operation? [y/N] ",
    "a" * 70_000,
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False, 0, -1, 2**53, 10**30, 1.5])
    if kind in (2, 3, 4):
        return rng.choice(TEXTS)
    if kind in (5, 6):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["type", "text", "content", "isError", "structuredContent", "uri", "data", "x"]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


def _result(rng: random.Random) -> Any:
    choice = rng.randrange(6)
    if choice == 0:
        return {"content": [{"type": "text", "text": rng.choice(TEXTS)}]}
    if choice == 1:
        blocks = [
            {"type": rng.choice(["text", "image", "audio", "resource", "resource_link", "?"])}
            | {k: _value(rng) for k in rng.sample(["text", "data", "mimeType", "uri"], 2)}
            for _ in range(rng.randrange(4))
        ]
        return {"content": blocks, "isError": rng.choice([True, False, "yes", None])}
    if choice == 2:
        return {"structuredContent": _value(rng), "content": []}
    return _value(rng)


def hostile_message(rng: random.Random, request_id: int) -> bytes:
    """One hostile JSON-RPC message (or not even that) answering `request_id`."""
    ids = [request_id, request_id, str(request_id), request_id + 1, True, None, 1.0]
    kind = rng.randrange(20)
    if kind < 6:  # shaped like an answer, with hostile content
        message: dict[str, Any] = {"jsonrpc": rng.choice(["2.0", "2.0", "1.0", None])}
        message["id"] = rng.choice(ids)
        if rng.random() < 0.7:
            message["result"] = _result(rng)
        else:
            message["error"] = rng.choice(
                [
                    {"code": -32000, "message": rng.choice(TEXTS)},
                    {"code": "x", "message": 1},
                    "bad",
                    {"code": 10**40, "message": "big"},
                ]
            )
        text = json.dumps(message, ensure_ascii=rng.random() < 0.5)
        return text.encode("utf-8", "surrogatepass")
    if kind == 6:  # deep nesting
        depth = rng.choice([101, 1_000, 50_000, 200_000])
        body = b"[" * depth + b"]" * depth
        return b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (request_id, body)
    if kind == 7:
        return rng.choice([b"NaN", b"1e999", b"9" * 5000, b"-Infinity"]).join(
            [b'{"jsonrpc":"2.0","id":%d,"result":{"content":' % request_id, b"}}"]
        )
    if kind == 8:  # invalid UTF-8, lone surrogates
        return rng.choice(
            [
                b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"\xff\xfe"}]}}',
                b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"\\udc80"}]}}',
            ]
        ).replace(b"%d", str(request_id).encode())
    if kind == 9:  # truncated
        valid = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": _result(rng)}).encode()
        return valid[: rng.randrange(len(valid))]
    if kind == 10:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    if kind == 11:  # a batch
        items = [
            {"jsonrpc": "2.0", "id": rng.choice(ids), "result": _result(rng)}
            for _ in range(rng.randrange(3))
        ]
        return json.dumps(items).encode()
    if kind == 12 and rng.random() < 0.15:  # over the 1 MiB limit (rarely: it costs time)
        text = "x" * (ONE_MIB + rng.randrange(1, 1000))
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"t": text}}).encode()
    if kind == 13:  # a request or a notification from the server
        return json.dumps({"jsonrpc": "2.0", "id": 99, "method": "sampling/createMessage"}).encode()
    if kind == 14:
        return b'{"jsonrpc":"2.0","id":%d,"result":{},"result":[]}' % request_id
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": _result(rng)}).encode()


def _chunked(body: bytes, rng: random.Random) -> bytes:
    out = []
    position = 0
    while position < len(body):
        size = rng.randrange(1, 9000)
        piece = body[position : position + size]
        length = len(piece) if rng.random() > 0.02 else len(piece) + rng.choice([-1, 5])
        out.append(b"%x\r\n" % max(length, 0) + piece + b"\r\n")
        position += size
    if rng.random() > 0.05:
        out.append(b"0\r\n\r\n")
    return b"".join(out)


def _http(status: int, headers: list[tuple[str, str]], body: bytes, rng: random.Random) -> bytes:
    framing = rng.randrange(10)
    lines = [f"HTTP/1.1 {status} X"]
    lines += [f"{name}: {value}" for name, value in headers]
    if framing < 6:
        lines.append(f"content-length: {len(body)}")
    elif framing < 8:
        lines.append("transfer-encoding: chunked")
        body = _chunked(body, rng)
    elif framing == 8:
        lines.append(f"content-length: {max(0, len(body) + rng.choice([-3, 7, 10**6]))}")
    lines.append("connection: close")
    head = "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n"
    if rng.random() < 0.01:
        head = rng.choice([b"garbage\r\n\r\n", b"HTTP/1.1 200\r\n\r\n", b"HTTP/9 x\r\n\r\n"])
    return head + body


def _status(rng: random.Random) -> int:
    return rng.choice([200] * 12 + [202, 204, 301, 307, 400, 401, 403, 404, 405, 500, 503])


def hostile_json_response(rng: random.Random, request_id: int) -> bytes:
    """A whole HTTP response carrying a hostile JSON body."""
    kind = rng.choice(
        ["application/json"] * 8 + ["application/json; charset=utf-8", "text/html", ""]
    )
    headers = [("content-type", kind)] if kind else []
    if rng.random() < 0.03:
        headers.append(("content-encoding", rng.choice(["gzip", "br", "identity"])))
    if rng.random() < 0.1:
        headers.append(("mcp-session-id", rng.choice(["s-1", "", "\x7fbad", "x" * 300])))
    status = _status(rng)
    if 300 <= status < 400:
        headers.append(("location", "http://127.0.0.1:9/elsewhere"))
    return _http(status, headers, hostile_message(rng, request_id), rng)


def hostile_events(rng: random.Random, request_id: int, *, resumed: bool) -> bytes:
    """A hostile SSE body: events, maybe the response, maybe ending before it."""
    eol = rng.choice([b"\n", b"\r\n", b"\r"])
    parts = []
    if rng.random() < 0.7:  # priming
        event_id = rng.choice([b"e-1", b"e-2", b"", b"a\x00b", "é".encode(), b"x" * 2000, b"ok"])
        retry = rng.choice([b"0", b"10", b"5000", b"-1", b"abc", b"9" * 30])
        parts.append(b"id: " + event_id + eol + b"retry: " + retry + eol + b"data:" + eol + eol)
    for _ in range(rng.randrange(4)):
        field_name = rng.choice([b"data", b"event", b":comment", b"id", b"unknown", b"data"])
        parts.append(field_name + b": " + rng.choice([b"x", b"{}", b"message", b""]) + eol + eol)
    if rng.random() < (0.6 if resumed else 0.5):
        message = hostile_message(rng, request_id).replace(b"\n", b" ")
        lines = [message[i : i + 5000] for i in range(0, len(message), 5000)] or [b""]
        if rng.random() < 0.1:
            parts.append(b"event: other" + eol)
        parts.append(b"".join(b"data: " + line + eol for line in lines) + eol)
    body = b"".join(parts)
    if rng.random() < 0.05:
        body = body[: rng.randrange(len(body) + 1)]  # ends mid-event
    return body


def hostile_sse_response(rng: random.Random, request_id: int, *, resumed: bool) -> bytes:
    if resumed and rng.random() < 0.1:
        return _http(
            rng.choice([404, 405, 500, 200]), [("content-type", "application/json")], b"{}", rng
        )
    kind = "text/event-stream" if rng.random() < 0.95 else "text/plain"
    headers = [("content-type", kind)]
    return _http(200, headers, hostile_events(rng, request_id, resumed=resumed), rng)


def stdio_answer(rng: random.Random, request_id: int) -> bytes:
    """What the stdio child writes for one request: hostile lines, then a line that answers
    it for sure (so the request always ends, unless a line broke the stream)."""
    lines = []
    for _ in range(rng.randrange(1, 3)):
        message = hostile_message(rng, request_id)
        if rng.random() < 0.1:
            lines.append(message.replace(b"\n", b" ") + b"\r")  # CRLF line end
        else:
            lines.append(message.replace(b"\n", b" "))
        if rng.random() < 0.05:
            lines.append(b"")
    final = {"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}
    lines.append(json.dumps(final).encode())
    return b"\n".join(lines) + b"\n"


def stdio_server(seed: int) -> int:
    """The child of the stdio phase: answer each tools/call request with `stdio_answer`."""
    rng = random.Random(seed)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or request.get("method") != "tools/call":
            continue  # our refusals of its requests, notifications
        out.write(stdio_answer(rng, request["id"]))
        out.flush()
    return 0


# ---- the run --------------------------------------------------------------------------------


@dataclass
class PhaseReport:
    name: str
    messages: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    hangs: int = 0
    extra: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


@dataclass
class FuzzReport:
    seed: int
    phases: list[PhaseReport]
    loop_errors: list[str]
    peak_rss_mib: float

    @property
    def crashes(self) -> int:
        return sum(len(p.crashes) for p in self.phases) + len(self.loop_errors)

    @property
    def hangs(self) -> int:
        return sum(p.hangs for p in self.phases)

    @property
    def messages(self) -> int:
        return sum(p.messages for p in self.phases)


class _HostileHttpServer:
    """Answers every request with a hostile HTTP response and closes the connection."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.mode = "json"
        self.count = 0
        self.gets = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    def __enter__(self) -> _HostileHttpServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0, limit=2 * ONE_MIB)
        )
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
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length) if length else b""
            request_id = 1
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                request_id = int(json.loads(body).get("id", 1))
            rng = random.Random(self.seed * 1_000_003 + self.count)
            self.count += 1
            if head.startswith(b"GET"):
                self.gets += 1
                answer = hostile_sse_response(rng, request_id, resumed=True)
            elif self.mode == "json":
                answer = hostile_json_response(rng, request_id)
            else:
                answer = hostile_sse_response(rng, request_id, resumed=False)
            writer.write(answer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


def _read_like_the_host(response: dict[str, Any]) -> str:
    from mcp_host_conformance.reference_client import results, rpc

    try:
        result = rpc.check_response(response)
    except rpc.RpcError:
        return "failed (JSON-RPC error)"
    return results.from_call_result(result).status


async def _one(phase: PhaseReport, request: Any, bound: float) -> None:
    from mcp_host_conformance.reference_client.transports import McpError

    phase.messages += 1
    try:
        response = await asyncio.wait_for(request, bound)
        phase.outcomes[_read_like_the_host(response)] += 1
    except McpError as exc:
        phase.outcomes[f"error: {type(exc).__name__}"] += 1
    except TimeoutError:
        phase.hangs += 1
    except Exception as exc:  # noqa: BLE001 - that is what this script looks for
        phase.crashes.append(f"{type(exc).__name__}: {str(exc)[:200]}")


async def _http_phase(
    server: _HostileHttpServer, mode: str, count: int, bound: float
) -> PhaseReport:
    from mcp_host_conformance.reference_client.transports.http import HttpTransport

    phase = PhaseReport(f"HTTP, {'JSON' if mode == 'json' else 'SSE'} responses")
    server.mode = mode
    gets_before = server.gets
    transport = HttpTransport(f"http://127.0.0.1:{server.port}/mcp", {"X-Key": "fuzz"})
    await transport.connect()
    started = time.monotonic()
    try:
        for index in range(count):
            message = {"jsonrpc": "2.0", "id": index + 1, "method": "tools/call", "params": {}}
            await _one(phase, transport.request(message), bound)
    finally:
        await transport.close()
    phase.seconds = time.monotonic() - started
    phase.extra["resuming GETs answered"] = server.gets - gets_before
    return phase


async def _stdio_phase(seed: int, count: int, bound: float) -> PhaseReport:
    from mcp_host_conformance.reference_client.transports import McpError
    from mcp_host_conformance.reference_client.transports.stdio import StdioTransport

    phase = PhaseReport("stdio")
    started = time.monotonic()
    transport: StdioTransport | None = None
    restarts = 0
    try:
        for index in range(count):
            if transport is None or transport._broken is not None:
                if transport is not None:
                    await transport.close()
                restarts += 1
                transport = StdioTransport(
                    sys.executable,
                    [__file__, "--stdio-server", str(seed * 7919 + restarts)],
                    {},
                    host_environ={"PATH": "/usr/bin:/bin"},
                )
                try:
                    await transport.connect()
                except McpError as exc:
                    phase.crashes.append(f"cannot start the stdio child: {exc}")
                    break
            message = {"jsonrpc": "2.0", "id": index + 1, "method": "tools/call", "params": {}}
            await _one(phase, transport.request(message), bound)
    finally:
        if transport is not None:
            await transport.close()
    phase.seconds = time.monotonic() - started
    phase.extra["child processes"] = restarts
    return phase


async def _run(messages: int, seed: int, bound: float) -> FuzzReport:
    from mcp_host_conformance.reference_client.transports import http

    loop_errors: list[str] = []
    asyncio.get_running_loop().set_exception_handler(
        lambda loop, context: loop_errors.append(str(context.get("message")))
    )
    # See the module docstring; restored after, since a test runs this in its own process.
    saved = http.MAX_RETRY_SECONDS, http.DEFAULT_RETRY_SECONDS
    http.MAX_RETRY_SECONDS, http.DEFAULT_RETRY_SECONDS = 0.01, 0.0
    try:
        with _HostileHttpServer(seed) as server:
            phases = [
                await _http_phase(server, "json", messages, bound),
                await _http_phase(server, "sse", messages, bound),
            ]
        phases.append(await _stdio_phase(seed, messages, bound))
    finally:
        http.MAX_RETRY_SECONDS, http.DEFAULT_RETRY_SECONDS = saved
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return FuzzReport(seed, phases, loop_errors, peak)


def run_fuzz(messages: int = 10_000, seed: int = 1, bound: float = 10.0) -> FuzzReport:
    """`messages` hostile messages into each transport."""
    return asyncio.run(_run(messages, seed, bound))


def markdown(report: FuzzReport) -> str:
    lines = [
        f"Seed {report.seed}; {report.messages} hostile messages; "
        f"**{report.crashes} crashes, {report.hangs} hangs**; "
        f"peak RSS {report.peak_rss_mib:.0f} MiB.",
        "",
        "| transport | messages | seconds | handled as | crashes | hangs | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for phase in report.phases:
        handled = ", ".join(f"{k} {v}" for k, v in sorted(phase.outcomes.items()))
        notes = ", ".join(f"{k}: {v}" for k, v in phase.extra.items())
        lines.append(
            f"| {phase.name} | {phase.messages} | {phase.seconds:.1f} | {handled} | "
            f"{len(phase.crashes)} | {phase.hangs} | {notes} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000, help="per transport")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bound", type=float, default=10.0, help="seconds before a request hangs")
    parser.add_argument("--markdown", action="store_true", help="print the docs/fuzzing.md table")
    parser.add_argument("--stdio-server", type=int, metavar="SEED", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stdio_server is not None:
        return stdio_server(args.stdio_server)
    report = run_fuzz(args.messages, args.seed, args.bound)
    if args.markdown:
        print(markdown(report))
    else:
        for phase in report.phases:
            print(
                f"{phase.name}: {phase.messages} messages in {phase.seconds:.1f} s, "
                f"{len(phase.crashes)} crashes, {phase.hangs} hangs; {dict(phase.outcomes)}"
            )
            for crash in phase.crashes[:10]:
                print(f"  crash: {crash}")
        for error in report.loop_errors[:10]:
            print(f"event loop: {error}")
        print(
            f"total: {report.messages} messages, {report.crashes} crashes, {report.hangs} hangs, "
            f"peak RSS {report.peak_rss_mib:.0f} MiB"
        )
    return 0 if report.crashes == 0 and report.hangs == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
