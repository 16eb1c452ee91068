"""The driver side of the driver protocol, for any in-process Python adapter.

Strategy: `serve(adapter)` is the whole driver of a Python host: the reference client's
`mcp-reference-host driver` is `serve(ReferenceAdapter())`, and it is how the protocol is
tested end to end. The connection is one `mcp_host_conformance.harness.contract.jsonrpc.Peer`
(lenient: a line it cannot parse is answered with a parse error, a late answer is
ignored). Requests are served in order on the calling thread, except `ask`, which runs on
a thread of its own (at most `MAX_ASKS` at once) so that `cancel` and the harness's answers
to `approve` / `acknowledge` keep flowing while the turn is in flight.

The protocol owns stdout. When serving on the process's real stdout, the protocol stream
is moved to a duplicate of file descriptor 1, and fd 1 (and `sys.stdout`) is pointed at
stderr, so a host that prints, or a child process that inherits stdout, cannot corrupt it.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Final

from mcp_host_conformance.harness.contract.adapter import (
    Adapter,
    ClientSession,
    Confirmation,
    PendingTool,
    StartOptions,
    takes_questions,
)
from mcp_host_conformance.harness.contract.driver_wire import (
    PROTOCOL,
    WireError,
    decode,
    decode_server,
    encode,
)
from mcp_host_conformance.harness.contract.jsonrpc import (
    ADAPTER_FAILED,
    BUSY,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Peer,
    Request,
)

__all__ = ["MAX_ASKS", "HarnessError", "serve"]

MAX_ASKS: Final = 16  # turns in flight at once


class HarnessError(RuntimeError):
    """The harness answered a callback with an error, or went away during a turn."""


Operation = Callable[[dict[str, Any]], Any]


class _Server:
    def __init__(self, adapter: Adapter, peer: Peer) -> None:
        self.adapter = adapter
        self.peer = peer
        self.lock = threading.Lock()
        self.sessions: dict[str, ClientSession] = {}
        self.session_ids = itertools.count(1)
        self.asks: list[threading.Thread] = []

    # -- requests to the harness (during ask) --

    def call_harness(self, method: str, params: dict[str, Any]) -> Any:
        pending = self.peer.request(method, params)
        pending.done.wait()
        if pending.failure is not None:
            raise HarnessError(f"the harness went away before answering {method}")
        if pending.error is not None:
            raise HarnessError(f"the harness's {method} failed: {pending.error.message}")
        return pending.result

    # -- dispatch --

    def handle(self, request: Request) -> bool:
        """Serve one request; False when the harness asked to shut down."""
        if request.method in ("ask", "review_tools"):  # both call back to the harness
            with self.lock:
                self.asks = [t for t in self.asks if t.is_alive()]
                busy = len(self.asks) >= MAX_ASKS
                if not busy:
                    thread = threading.Thread(
                        target=self.run, args=(request,), name="driver-ask", daemon=True
                    )
                    self.asks.append(thread)
            if busy:
                self.peer.reply_error(request.id, BUSY, f"more than {MAX_ASKS} turns in flight")
            else:
                thread.start()
            return True
        self.run(request)
        return request.method != "shutdown"

    def run(self, request: Request) -> None:
        operation: Operation | None = getattr(self, f"op_{request.method}", None)
        if operation is None:
            self.peer.reply_error(
                request.id, METHOD_NOT_FOUND, f"unknown method {request.method!r}"
            )
            return
        try:
            result = operation(request.params)
        except _NoSuchMethod as exc:
            self.peer.reply_error(request.id, METHOD_NOT_FOUND, str(exc))
            return
        except (WireError, KeyError, TypeError) as exc:
            text = f"params.{exc.args[0]}: missing" if isinstance(exc, KeyError) else str(exc)
            self.peer.reply_error(request.id, INVALID_PARAMS, text)
            return
        except Exception as exc:  # the host failed: the harness reports it as AdapterError
            self.peer.reply_error(request.id, ADAPTER_FAILED, f"{type(exc).__name__}: {exc}")
            return
        self.peer.reply(request.id, result)

    def session(self, params: dict[str, Any]) -> ClientSession:
        sid = params["session"]
        with self.lock:
            session = self.sessions.get(sid) if isinstance(sid, str) else None
        if session is None:
            raise WireError(f"params.session: no session {str(sid)[:80]!r}")
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
        return {"session": sid, "statuses": encode(list(session.statuses)), "text": session.text}

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

        def on_question(text: str) -> str:
            answer = self.call_harness("question", {"session": sid, "text": text})
            if not isinstance(answer, str):
                raise HarnessError("the harness answered question with a non-string")
            return answer

        ask: Callable[..., Any] = session.ask  # `on_question` is optional in the contract
        if takes_questions(ask):
            return encode(ask(question, approve, acknowledge, on_question=on_question))
        return encode(session.ask(question, approve, acknowledge))

    def op_project_config(self, params: dict[str, Any]) -> Any:
        servers = params["servers"]
        if not isinstance(servers, list):
            raise WireError("params.servers: expected a list")
        project_config = getattr(self.adapter, "project_config", None)
        if project_config is None:
            # as for any method a driver does not have: the harness then writes only its own
            raise _NoSuchMethod("this host names no project configuration of its own")
        files = project_config([decode_server(s) for s in servers])
        return {str(k): str(v) for k, v in dict(files).items()}

    def op_review_tools(self, params: dict[str, Any]) -> Any:
        session = self.session(params)
        sid = params["session"]
        review = getattr(session, "review_tools", None)
        if review is None:
            raise WireError("this host has no tool review (profiles pinning, instruction-flagging)")

        def approve(pending: PendingTool) -> bool:
            return bool(self.call_harness("review_tool", {"session": sid, **encode(pending)}))

        return encode(review(approve))

    def op_allow_addresses(self, params: dict[str, Any]) -> Any:
        home = decode_path(params["home"], "home")
        addresses = params["addresses"]
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise WireError("params.addresses: expected a list of strings")
        allow = getattr(self.adapter, "allow_addresses", None)
        if allow is None:
            raise WireError("this host has no address allowance (profile private-address-refusal)")
        return encode(allow(home, tuple(addresses)))

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


class _NoSuchMethod(Exception):
    """An optional method this adapter does not have: answered as an unknown method."""


def decode_path(value: Any, name: str) -> Path:
    if not isinstance(value, str):
        raise WireError(f"params.{name}: expected a path string")
    return Path(value)


def _protocol_stdout() -> IO[bytes]:
    """A private stream for the protocol; fd 1 and sys.stdout now go to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def serve(
    adapter: Adapter, incoming: IO[bytes] | None = None, outgoing: IO[bytes] | None = None
) -> int:
    """Serve `adapter` over the driver protocol until the harness shuts it down or closes
    its end; returns the exit status for the driver command (0)."""
    incoming = incoming if incoming is not None else sys.stdin.buffer
    outgoing = outgoing if outgoing is not None else _protocol_stdout()
    peer = Peer(
        incoming,
        outgoing,
        name="the harness",
        strict=False,
        id_prefix="d",
        end_reason=lambda: "the harness closed the connection",
    ).start()
    server = _Server(adapter, peer)
    try:
        while True:
            request = peer.next_request()
            if request is None or not server.handle(request):
                break
    finally:
        server.stop_all()
        peer.close("the driver is shutting down")
        with server.lock:
            asks = list(server.asks)
        for thread in asks:
            thread.join(timeout=5)
        # The harness closes our stdin once it has the shutdown's answer: let the reader see
        # that end before the interpreter finalizes stdin under it.
        peer.join_reader(5.0)
    return 0
