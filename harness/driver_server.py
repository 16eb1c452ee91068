"""The driver side of the driver protocol, for any in-process Python adapter.

Strategy: `serve(adapter)` is the whole driver of a Python host: the reference client's
`mcp-reference-host driver` is `serve(ReferenceAdapter())`, and it is how the protocol is
tested end to end. Requests are read on the calling thread; `ask` runs on its own thread so
that `cancel` and the harness's answers to `approve` / `acknowledge` are read while the
turn is in flight; every other operation runs inline, in order.

The protocol owns stdout. When serving on the process's real stdout, the protocol stream
is moved to a duplicate of file descriptor 1, and fd 1 (and `sys.stdout`) is pointed at
stderr, so a host that prints, or a child process that inherits stdout, cannot corrupt it.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from pathlib import Path
from typing import IO, Any

from mcp_host_conformance.harness.adapter import (
    Adapter,
    ClientSession,
    Confirmation,
    StartOptions,
)
from mcp_host_conformance.harness.driver_wire import (
    ADAPTER_FAILED,
    INVALID_PARAMS,
    MAX_LINE,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL,
    WireError,
    decode,
    decode_server,
    encode,
    parse_line,
)

__all__ = ["HarnessError", "serve"]


class HarnessError(RuntimeError):
    """The harness answered a callback with an error, or went away during a turn."""


class _Server:
    def __init__(self, adapter: Adapter, stdout: IO[str]) -> None:
        self.adapter = adapter
        self.out = stdout
        self.write_lock = threading.Lock()
        self.lock = threading.Lock()
        self.sessions: dict[str, ClientSession] = {}
        self.session_ids = itertools.count(1)
        self.request_ids = itertools.count(1)
        self.waiting: dict[str, tuple[threading.Event, dict[str, Any]]] = {}
        self.asks: list[threading.Thread] = []
        self.closed = threading.Event()

    # -- writing --

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":")) + "\n"
        with self.write_lock:
            self.out.write(line)
            self.out.flush()

    def reply(self, rid: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def reply_error(self, rid: Any, code: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}})

    # -- requests to the harness (during ask) --

    def call_harness(self, method: str, params: dict[str, Any]) -> Any:
        rid = f"d{next(self.request_ids)}"
        event = threading.Event()
        slot: dict[str, Any] = {}
        with self.lock:
            if self.closed.is_set():
                raise HarnessError(f"the harness went away before answering {method}")
            self.waiting[rid] = (event, slot)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        event.wait()
        if "error" in slot:
            raise HarnessError(f"the harness's {method} failed: {slot['error']}")
        return slot.get("result")

    def on_response(self, message: dict[str, Any]) -> None:
        with self.lock:
            entry = self.waiting.pop(message["id"], None)
        if entry is None:
            return  # an answer to nothing we asked: ignore, the harness may be late
        event, slot = entry
        if "error" in message:
            error = message["error"]
            slot["error"] = error.get("message") if isinstance(error, dict) else error
        else:
            slot["result"] = message["result"]
        event.set()

    # -- dispatch --

    def handle(self, message: dict[str, Any]) -> bool:
        """Handle one request; False when the harness asked to shut down."""
        rid = message.get("id")
        method = message["method"]
        params = message.get("params") or {}
        if not isinstance(params, dict):
            self.reply_error(rid, INVALID_PARAMS, "params: expected an object")
            return True
        if method == "ask":
            thread = threading.Thread(
                target=self.run, args=(rid, method, params), name="driver-ask", daemon=True
            )
            self.asks.append(thread)
            thread.start()
            return True
        self.run(rid, method, params)
        return method != "shutdown"

    def run(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        operation = getattr(self, f"op_{method}", None)
        if operation is None:
            if rid is not None:
                self.reply_error(rid, METHOD_NOT_FOUND, f"unknown method {method!r}")
            return
        try:
            result = operation(params)
        except (WireError, KeyError, TypeError) as exc:
            if isinstance(exc, KeyError):
                exc = WireError(f"params.{exc.args[0]}: missing")
            self.reply_error(rid, INVALID_PARAMS, str(exc))
            return
        except Exception as exc:  # the host failed: the harness reports it as AdapterError
            self.reply_error(rid, ADAPTER_FAILED, f"{type(exc).__name__}: {exc}")
            return
        if rid is not None:
            self.reply(rid, result)

    def session(self, params: dict[str, Any]) -> ClientSession:
        sid = params["session"]
        with self.lock:
            session = self.sessions.get(sid)
        if session is None:
            raise WireError(f"params.session: no session {sid!r}")
        return session

    # -- the operations --

    def op_initialize(self, params: dict[str, Any]) -> Any:
        return {"protocol": PROTOCOL}

    def op_describe(self, params: dict[str, Any]) -> Any:
        return encode(self.adapter.describe())

    def op_add_server(self, params: dict[str, Any]) -> Any:
        home = decode_path(params["home"], "home")
        return encode(self.adapter.add_server(home, decode_server(params["server"])))

    def op_remove_server(self, params: dict[str, Any]) -> Any:
        home = decode_path(params["home"], "home")
        name = params["name"]
        if not isinstance(name, str):
            raise WireError("params.name: expected a string")
        return encode(self.adapter.remove_server(home, name))

    def op_list_servers(self, params: dict[str, Any]) -> Any:
        return encode(self.adapter.list_servers(decode_path(params["home"], "home")))

    def op_start(self, params: dict[str, Any]) -> Any:
        options = decode(StartOptions, params["options"], "params.options")
        session = self.adapter.start(options)
        sid = f"s{next(self.session_ids)}"
        with self.lock:
            self.sessions[sid] = session
        return {"session": sid, "statuses": encode(session.statuses), "text": session.text}

    def op_ask(self, params: dict[str, Any]) -> Any:
        session = self.session(params)
        sid = params["session"]
        question = params["question"]
        if not isinstance(question, str):
            raise WireError("params.question: expected a string")

        def approve(confirmation: Confirmation) -> str:
            answer = self.call_harness("approve", {"session": sid, **encode(confirmation)})
            if not isinstance(answer, str):
                raise HarnessError("the harness answered approve with a non-string")
            return answer

        def acknowledge(prompt: str) -> bool:
            return bool(self.call_harness("acknowledge", {"session": sid, "prompt": prompt}))

        return encode(session.ask(question, approve, acknowledge))

    def op_cancel(self, params: dict[str, Any]) -> Any:
        self.session(params).cancel()
        return None

    def op_stop(self, params: dict[str, Any]) -> Any:
        session = self.session(params)
        with self.lock:
            self.sessions.pop(params["session"], None)
        return encode(session.stop())

    def op_shutdown(self, params: dict[str, Any]) -> Any:
        self.stop_all()
        return None

    def stop_all(self) -> None:
        with self.lock:
            sessions = list(self.sessions.values())
            self.sessions.clear()
        for session in sessions:
            try:
                session.stop()
            except Exception as exc:  # best effort while going away
                print(f"driver: stopping a session failed: {exc}", file=sys.stderr)

    def close(self) -> None:
        """The harness went away: release every callback still waiting on it."""
        with self.lock:
            self.closed.set()
            waiting = list(self.waiting.values())
            self.waiting.clear()
        for event, slot in waiting:
            slot["error"] = "the harness closed the connection"
            event.set()


def decode_path(value: Any, name: str) -> Path:
    if not isinstance(value, str):
        raise WireError(f"params.{name}: expected a path string")
    return Path(value)


def _protocol_stdout() -> IO[str]:
    """A private stream for the protocol; fd 1 and sys.stdout now go to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def serve(adapter: Adapter, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Serve `adapter` over the driver protocol until the harness shuts it down or closes
    stdin; returns the exit status for the driver command (0)."""
    stdin = stdin if stdin is not None else sys.stdin
    if stdout is None or stdout is sys.stdout:
        stdout = _protocol_stdout()
    server = _Server(adapter, stdout)
    try:
        while True:
            line = stdin.readline(MAX_LINE)
            if not line:
                break
            if not line.strip():
                continue
            try:
                message = parse_line(line)
            except WireError as exc:
                server.reply_error(None, PARSE_ERROR, str(exc))
                continue
            if "method" not in message:
                server.on_response(message)
                continue
            if not server.handle(message):
                break
    finally:
        server.close()
        server.stop_all()
        for thread in server.asks:
            thread.join(timeout=5)
    return 0
