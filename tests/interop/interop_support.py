"""Running the pinned third-party server and observing what reaches it.

Strategy: the server (`@modelcontextprotocol/server-everything`, pinned in package.json
beside this file) is installed by `npm ci --prefix tests/interop`; nothing of it is
changed. What reaches it is recorded outside the reference client, so a test never takes
the client's word for it:
- stdio: `shim.cjs` (preloaded with `node --require`) appends every stdin / stdout chunk
  of the server process to a tap file, before the server handles it;
- HTTP: `JournalProxy`, a small forwarding proxy in front of the server, journals every
  request body and the response to it.
The HTTP server gets PORT=0 and the shim forces its listen onto 127.0.0.1 and prints the
port it got; `listening_addresses` reads /proc to check nothing else is bound.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.contract.adapter import ClientSession, ServerConfig, StartOptions
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.reference_client.adapter import ReferenceAdapter

HERE = Path(__file__).resolve().parent
PACKAGE = "@modelcontextprotocol/server-everything"
PACKAGE_DIR = HERE / "node_modules" / "@modelcontextprotocol" / "server-everything"
ENTRY = PACKAGE_DIR / "dist" / "index.js"
SHIM = HERE / "shim.cjs"
REQUIRED_VARIABLE = "MCP_INTEROP_REQUIRED"
START_TIMEOUT = 20.0  # node cold start on a loaded 2-core machine
LISTEN_LINE = "interop-shim: listening on "
SERVER_NAME = "everything"


def unavailable_reason() -> str | None:
    """Why the interop tests cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not on PATH (the interop tests run a Node.js MCP server)"
    if not ENTRY.is_file():
        return (
            f"{PACKAGE} is not installed under {HERE / 'node_modules'}: "
            "run `npm ci --prefix tests/interop` (or `tox -e interop`)"
        )
    return None


def pinned_version() -> str:
    return json.loads((HERE / "package.json").read_text())["dependencies"][PACKAGE]


def installed_version() -> str:
    return json.loads((PACKAGE_DIR / "package.json").read_text())["version"]


def node_command(transport: str) -> list[str]:
    """argv that runs the server on `transport` ("stdio" or "streamableHttp") with the shim."""
    node = shutil.which("node") or "node"
    return [node, "--require", str(SHIM), str(ENTRY), transport]


# ---- what reached the server ----------------------------------------------------------


def json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            value = json.loads(line)
            if isinstance(value, dict):
                out.append(value)
    return out


@dataclass
class Tap:
    """The stdio server's own record: its pid and the messages in and out."""

    pid: int | None
    received: list[dict[str, Any]]
    sent: list[dict[str, Any]]


def read_tap(path: Path) -> Tap:
    if not path.exists():
        return Tap(None, [], [])
    pid = None
    streams = {"in": [], "out": []}
    for record in json_lines(path.read_text()):
        if "pid" in record:
            pid = record["pid"]
        else:
            streams[record["dir"]].append(record["data"])
    return Tap(pid, json_lines("".join(streams["in"])), json_lines("".join(streams["out"])))


def sse_or_json(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response body, plain JSON or an SSE stream."""
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return []
    if text.startswith(("{", "[")):
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


@dataclass
class Exchange:
    http_method: str
    request: list[dict[str, Any]]  # JSON-RPC messages in the body
    status: int
    response: list[dict[str, Any]]
    raw_response: bytes = field(repr=False, default=b"")


def calls(messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("method") == method]


def result_of(sent: list[dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """The server's result for `request`, from the messages it sent."""
    [reply] = [m for m in sent if m.get("id") == request["id"] and "method" not in m]
    return reply["result"]


# ---- the HTTP server ---------------------------------------------------------------------


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket `pid` listens on, read from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 4), ("tcp6", 16)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            hex_address, hex_port = local.split(":")
            raw = bytes.fromhex(hex_address)
            if width == 4:
                address = ".".join(str(b) for b in reversed(raw))
            else:  # four little-endian 32-bit words
                words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
                address = ":".join(b"".join(words).hex()[i : i + 4] for i in range(0, 32, 4))
            found.append((address, int(hex_port, 16)))
    return found


class EverythingHttp:
    """The server on Streamable HTTP, in its own process group, on 127.0.0.1 only."""

    def __init__(self, workdir: Path) -> None:
        self.log_path = workdir / "server-everything-http.log"
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(workdir), "PORT": "0"}
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            node_command("streamableHttp"),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.PIPE,
            env=env,
            cwd=workdir,
            start_new_session=True,
        )
        self.pid = self.process.pid
        self.stderr: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain, name="everything-stderr", daemon=True).start()
        self.host, self.port = self._wait_for_address()
        self.url = f"http://{self.host}:{self.port}/mcp"

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _wait_for_address(self) -> tuple[str, int]:
        while True:
            try:
                line = self._lines.get(timeout=START_TIMEOUT)
            except queue.Empty:
                self.stop()
                raise RuntimeError(
                    f"server-everything did not listen within {START_TIMEOUT:g} s"
                ) from None
            if line is None:
                self.stop()
                raise RuntimeError(
                    "server-everything exited before listening: " + "\n".join(self.stderr)
                )
            if line.startswith(LISTEN_LINE):
                host, _, port = line[len(LISTEN_LINE) :].rpartition(":")
                return host, int(port)

    def stop(self) -> None:
        """Stop the whole process group and reap the server."""
        try:
            os.killpg(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, signal.SIGKILL)
            self.process.wait(10)
        self._log.close()


class JournalProxy:
    """A forwarding proxy on 127.0.0.1:0 that journals every exchange with the server."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")
                }
                upstream = http.client.HTTPConnection(upstream_host, upstream_port, timeout=30)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()  # a POST's SSE stream ends with its response
                    status, reply_headers = response.status, response.getheaders()
                finally:
                    upstream.close()
                try:
                    request = json.loads(body) if body else []
                except ValueError:
                    request = []
                try:
                    replies = sse_or_json(data)
                except ValueError:
                    replies = []
                with proxy._lock:
                    proxy.exchanges.append(
                        Exchange(
                            self.command,
                            request if isinstance(request, list) else [request],
                            status,
                            replies,
                            data,
                        )
                    )
                self.send_response(status)
                for name, value in reply_headers:
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="journal-proxy", daemon=True
        )
        self._thread.start()

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return [m for e in self.exchanges for m in e.request]

    def sent(self) -> list[dict[str, Any]]:
        with self._lock:
            return [m for e in self.exchanges for m in e.response]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


# ---- the host --------------------------------------------------------------------------


@dataclass
class Target:
    """The server as the host is configured for it, and the record of what reached it."""

    transport: str
    server: ServerConfig
    received: Callable[[], list[dict[str, Any]]]  # JSON-RPC messages the server received
    sent: Callable[[], list[dict[str, Any]]]  # JSON-RPC messages the server sent
    tap: Path | None = None  # stdio: the shim's tap file


@contextmanager
def running_host(tmp_path: Path, model: MockResponses, target: Target) -> Iterator[ClientSession]:
    """The reference host configured (through its CLI, by the adapter) and started."""
    adapter = ReferenceAdapter()
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    cwd.mkdir(exist_ok=True)
    adapter.add_server(home, target.server)
    options = StartOptions(
        home=home,
        cwd=cwd,
        model_url=model.url,
        model_key=model.api_key,
        connect_timeout=20.0,
        call_timeout=20.0,
    )
    session = adapter.start(options)
    try:
        yield session
    finally:
        session.stop()
