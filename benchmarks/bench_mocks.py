"""Benchmark of the mocks (a script, not a test): ready times, a round trip, crowds.

Strategy: medians over N runs, printed against the targets of issue 2: an HTTP mock is
ready in < 50 ms, a stdio mock in < 150 ms (spawn to its first answer), and initialize +
tools/list + tools/call through the official `mcp` client takes < 30 ms. "Ready" for an
HTTP mock is `start()` returning, i.e. the port accepts connections.

Crowds (the hardening issue): 1,000 simultaneous connections, each sending one request,
against the MCP mock (plain and TLS) and the Responses mock, alone and beside 500
slowloris clients that never finish their request. The target is no loss: every request
answered 200 and journalled. The wall time and the 95th percentile of the answers are
printed for information only (they depend on the machine's load).

    python benchmarks/bench_mocks.py [-n 20] [--crowd 1000] [--only crowds]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mcp_host_conformance.mocks.http_server import HttpMock  # noqa: E402
from mcp_host_conformance.mocks.named import healthy_spec  # noqa: E402

TARGETS_MS = {
    "http ready": 50,
    "tls ready": 50,
    "stdio ready": 150,
    "responses ready": 50,
    "round trip": 30,
}


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _time(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def bench_http(n: int, tls: str | None) -> list[float]:
    HttpMock(healthy_spec(), tls=tls).start().close()  # CA creation happens once per process
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        mock = HttpMock(healthy_spec(), tls=tls).start()
        samples.append(time.perf_counter() - started)
        mock.close()
    return samples


def bench_stdio(n: int) -> list[float] | None:
    try:
        from mcp_host_conformance.mocks.stdio_server import StdioMock
    except ImportError:
        return None
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}) + "\n"
    samples = []
    with tempfile.TemporaryDirectory() as workdir:
        mock = StdioMock(healthy_spec(), workdir)
        for _ in range(n):
            started = time.perf_counter()
            proc = subprocess.Popen(
                mock.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            assert proc.stdin and proc.stdout
            proc.stdin.write(init)
            proc.stdin.flush()
            proc.stdout.readline()
            samples.append(time.perf_counter() - started)
            proc.stdin.close()
            proc.wait(5)
            proc.stdout.close()
    return samples


def bench_responses(n: int) -> list[float] | None:
    try:
        from mcp_host_conformance.mocks.responses import MockResponses
    except ImportError:
        return None
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        model = MockResponses().start()
        samples.append(time.perf_counter() - started)
        model.close()
    return samples


async def _round_trips(url: str, n: int) -> list[float]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    samples = []
    async with httpx2.AsyncClient(verify=ssl.create_default_context(), timeout=5) as http:
        for _ in range(n + 1):
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    started = time.perf_counter()
                    await session.initialize()
                    await session.list_tools()
                    await session.call_tool("echo", {"text": "hi"})
                    samples.append(time.perf_counter() - started)
    return samples[1:]  # the first one pays for imports and warm-up


def bench_round_trip(n: int) -> list[float]:
    with HttpMock(healthy_spec()) as mock:
        assert mock.url
        return asyncio.run(_round_trips(mock.url, n))


# ---- crowds ----------------------------------------------------------------------------------


def _crowd_target(kind: str) -> tuple[object, int, ssl.SSLContext | None, bytes, Callable[[], int]]:
    """(server, port, client TLS context, one valid request, journalled-requests count)."""
    if kind == "responses":
        from mcp_host_conformance.mocks.responses import MockResponses

        model = MockResponses().start()
        body = json.dumps({"model": "m", "input": "hi"}).encode()
        head = (
            f"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
            f"authorization: Bearer {model.api_key}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        return model, model.port, None, head + body, lambda: model.journal.count(kind="http")
    mock = HttpMock(healthy_spec(), tls="trusted" if kind == "tls" else None).start()
    assert mock.port is not None
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
        "accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    client_ssl = None
    if kind == "tls":
        from mcp_host_conformance.mocks.tls import client_context

        client_ssl = client_context()
    return mock, mock.port, client_ssl, head + body, lambda: mock.journal.count(kind="http")


async def _one(port: int, tls: ssl.SSLContext | None, request: bytes) -> tuple[int, float]:
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=tls, server_hostname="127.0.0.1" if tls else None
    )
    try:
        writer.write(request)
        await writer.drain()
        status_line = await reader.readline()
        while await reader.read(65536):
            pass
    finally:
        writer.close()
    parts = status_line.split(b" ")
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return status, time.perf_counter() - started


async def _crowd(
    port: int, tls: ssl.SSLContext | None, request: bytes, n: int, slow: int
) -> tuple[list[object], float]:
    slow_writers = []
    for i in range(slow):  # half stop inside the head, half after it (no body)
        _, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=tls, server_hostname="127.0.0.1" if tls else None
        )
        cut = request.index(b"\r\n\r\n") + (4 if i % 2 else -10)
        writer.write(request[:cut])
        slow_writers.append(writer)
    started = time.perf_counter()
    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(_one(port, tls, request) for _ in range(n)), return_exceptions=True),
            600,
        )
    finally:
        for writer in slow_writers:
            writer.transport.abort()
    return list(results), time.perf_counter() - started


def bench_crowds(n: int) -> bool:
    """Print one line per server and situation; True if nothing was lost anywhere."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 4 * n + 1000)  # each connection is two descriptors in this process
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    ok = True
    print(f"\n{'crowd':<36} {'answered':>10} {'journalled':>11} {'wall':>8} {'p95':>8}  verdict")
    for kind in ("http", "tls", "responses"):
        for slow in (0, n // 2):
            server, port, tls, request, journalled = _crowd_target(kind)
            try:
                results, wall = asyncio.run(_crowd(port, tls, request, n, slow))
                answered = [r for r in results if isinstance(r, tuple) and r[0] == 200]
                latencies = sorted(r[1] for r in answered)
                p95 = latencies[int(len(latencies) * 0.95) - 1] * 1000 if latencies else 0.0
                count = journalled()
            finally:
                server.close()  # type: ignore[attr-defined]
            good = len(answered) == n and count == n
            ok &= good
            label = f"{kind}, {n} at once" + (f" + {slow} slow" if slow else "")
            print(
                f"{label:<36} {len(answered):>5}/{n:<4} {count:>11} {wall:>7.2f}s "
                f"{p95:>6.0f}ms  {'ok' if good else 'LOST REQUESTS'}"
            )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=20, help="runs per figure (default 20)")
    parser.add_argument(
        "--crowd", type=int, default=1000, help="simultaneous connections (default 1000)"
    )
    parser.add_argument("--only", choices=("times", "crowds"), help="run only one part")
    args = parser.parse_args(argv)
    n = args.n
    if args.only == "crowds":
        return 0 if bench_crowds(args.crowd) else 1
    figures = {
        "http ready": bench_http(n, None),
        "tls ready": bench_http(n, "trusted"),
        "stdio ready": bench_stdio(n),
        "responses ready": bench_responses(n),
        "round trip": bench_round_trip(n),
    }
    failed = False
    print(f"{'figure':<16} {'median':>10} {'target':>10}  verdict   (n={n})")
    for name, samples in figures.items():
        if samples is None:
            print(f"{name:<16} {'-':>10} {TARGETS_MS[name]:>8}ms  not available")
            continue
        median = _median_ms(samples)
        ok = median < TARGETS_MS[name]
        failed |= not ok
        print(
            f"{name:<16} {median:>8.1f}ms {TARGETS_MS[name]:>8}ms  {'ok' if ok else 'OVER TARGET'}"
        )
    if args.only != "times":
        failed |= not bench_crowds(args.crowd)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
