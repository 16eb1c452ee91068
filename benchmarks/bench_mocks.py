"""Benchmark of the mocks (a script, not a test): ready times and a client round trip.

Strategy: medians over N runs, printed against the targets of issue 2: an HTTP mock is
ready in < 50 ms, a stdio mock in < 150 ms (spawn to its first answer), and initialize +
tools/list + tools/call through the official `mcp` client takes < 30 ms. "Ready" for an
HTTP mock is `start()` returning, i.e. the port accepts connections.

    python benchmarks/bench_mocks.py [-n 20]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=20, help="runs per figure (default 20)")
    n = parser.parse_args(argv).n
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
