"""The harness side of the driver protocol: an Adapter that drives a host in any language.

Strategy: `DriverAdapter` turns each adapter operation into one JSON-RPC request to a
driver command over its stdin/stdout (docs/driver-protocol.md). One driver process serves
the whole run (spawned on first use, reused across cases): starting a process per case
would cost the suite seconds, and isolation does not need it, since every piece of state a
case depends on (home, project, servers, model) is passed in the call and every session is
started and stopped explicitly.

A driver is part of the client under test, so everything it does wrong is the client's
failure, reported as `AdapterError` with the reason: it died, it spoke something that is
not the protocol, or it went silent for longer than `timeout` seconds. After such a
failure the process is killed (its state is unknown) and the next call starts a fresh one,
so one broken case cannot hang or poison the rest of the suite. The bound on `ask` counts
from the driver's last sign of life and excludes the time the harness spends answering an
approval, since a turn legitimately lasts as long as the host's own call timeouts.

Threads: a reader thread per process parses every line; responses complete waiting calls,
and the driver's `approve`/`acknowledge` requests run the current turn's callbacks on a
short-lived thread so `cancel` (from the case's thread) and further messages keep flowing.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shlex
import signal
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.adapter import (
    Acknowledger,
    AdapterError,
    Approver,
    Confirmation,
    Description,
    ServerConfig,
    ServerStatus,
    Shown,
    StartOptions,
    Stopped,
    Turn,
)
from mcp_host_conformance.harness.driver_wire import (
    CALLBACK_FAILED,
    MAX_LINE,
    METHOD_NOT_FOUND,
    PROTOCOL,
    WireError,
    decode,
    encode,
    encode_server,
    frame,
    parse_line,
)

__all__ = ["DEFAULT_TIMEOUT", "DriverAdapter"]

DEFAULT_TIMEOUT = 60.0  # seconds of driver silence before a call fails; above 30 s call timeouts
_CLOSE_GRACE = 2.0


class _Call:
    """One request waiting for its response."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.done = threading.Event()
        self.result: Any = None
        self.error: AdapterError | None = None
        self.last_activity = time.monotonic()
        self.in_callback = 0  # the harness is answering the driver: the clock is stopped


class _Turn:
    """The callbacks of the `ask` in flight for one session."""

    def __init__(self, approve: Approver, acknowledge: Acknowledger, call: _Call) -> None:
        self.approve = approve
        self.acknowledge = acknowledge
        self.call = call
        self.callback_error: BaseException | None = None


class _Process:
    """One running driver process and its reader thread."""

    def __init__(self, argv: list[str], command: str) -> None:
        self.command = command
        try:
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,  # passed through to the harness's stderr, never parsed
                start_new_session=True,  # so the driver and everything it spawned can be killed
            )
        except OSError as exc:
            raise AdapterError(
                f"cannot start the driver command {command!r}: {exc.strerror or exc}"
            ) from None
        self.write_lock = threading.Lock()
        self.lock = threading.Lock()
        self.pending: dict[int, _Call] = {}
        self.turns: dict[str, _Turn] = {}
        self.failure: str | None = None
        self.ids = itertools.count(1)
        self.reader = threading.Thread(target=self._read, name="driver-reader", daemon=True)
        self.reader.start()

    # -- sending --

    def send(self, message: dict[str, Any]) -> None:
        assert self.popen.stdin is not None
        try:
            with self.write_lock:
                self.popen.stdin.write(frame(message))
                self.popen.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.fail(self._death_reason())

    def request(self, method: str, params: dict[str, Any]) -> tuple[int, _Call]:
        call = _Call(method)
        with self.lock:
            if self.failure is not None:
                raise AdapterError(self.failure)
            rid = next(self.ids)
            self.pending[rid] = call
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid, call

    # -- receiving --

    def _read(self) -> None:
        assert self.popen.stdout is not None
        stream = self.popen.stdout
        while True:
            try:
                line = stream.readline(MAX_LINE)
            except (OSError, ValueError):
                line = b""
            if not line:
                self.fail(self._death_reason())
                return
            if not line.endswith(b"\n") and len(line) >= MAX_LINE:
                self.fail(f"the driver sent a message over {MAX_LINE} bytes")
                return
            if not line.strip():
                continue
            try:
                message = parse_line(line)
            except WireError as exc:
                self.fail(f"the driver broke the protocol: {exc}")
                return
            self._touch()
            if "method" in message:
                self._on_request(message)
            else:
                self._on_response(message)

    def _touch(self) -> None:
        now = time.monotonic()
        with self.lock:
            for call in self.pending.values():
                call.last_activity = now

    def _on_response(self, message: dict[str, Any]) -> None:
        with self.lock:
            call = self.pending.pop(message["id"], None) if isinstance(message["id"], int) else None
        if call is None:
            self.fail(f"the driver answered a request it was never sent (id {message['id']!r})")
            return
        if "error" in message:
            error = message["error"]
            text = error.get("message") if isinstance(error, dict) else None
            if not isinstance(text, str):
                text = repr(error)
            call.error = AdapterError(f"the driver's {call.method} failed: {text}")
        else:
            call.result = message["result"]
        call.done.set()

    def _on_request(self, message: dict[str, Any]) -> None:
        threading.Thread(
            target=self._answer, args=(message,), name="driver-callback", daemon=True
        ).start()

    def _answer(self, message: dict[str, Any]) -> None:
        rid = message.get("id")
        method = message["method"]
        params = message.get("params") or {}
        if method not in ("approve", "acknowledge"):
            if rid is not None:
                self._reply_error(rid, METHOD_NOT_FOUND, f"the harness has no method {method!r}")
            return
        turn = self._turn_for(params)
        if turn is None:
            self._reply_error(rid, CALLBACK_FAILED, f"{method} arrived while no ask is in flight")
            return
        with self.lock:
            turn.call.in_callback += 1
        try:
            if method == "approve":
                body = {k: v for k, v in params.items() if k != "session"}
                answer: Any = turn.approve(decode(Confirmation, body, "approve params"))
                if not isinstance(answer, str):
                    raise TypeError("the approval callback must return a string")
            else:
                prompt = params.get("prompt")
                if not isinstance(prompt, str):
                    raise WireError("acknowledge params.prompt: expected a string")
                answer = bool(turn.acknowledge(prompt))
        except WireError as exc:
            self._reply_error(rid, CALLBACK_FAILED, str(exc))
            turn.callback_error = AdapterError(f"the driver sent a malformed {method}: {exc}")
            return
        except BaseException as exc:  # a case's callback may assert: surfaced from ask
            turn.callback_error = exc
            self._reply_error(rid, CALLBACK_FAILED, f"the harness's {method} callback failed")
            return
        finally:
            with self.lock:
                turn.call.in_callback -= 1
                turn.call.last_activity = time.monotonic()
        self.send({"jsonrpc": "2.0", "id": rid, "result": answer})

    def _turn_for(self, params: dict[str, Any]) -> _Turn | None:
        with self.lock:
            session = params.get("session")
            if isinstance(session, str) and session in self.turns:
                return self.turns[session]
            if len(self.turns) == 1:
                return next(iter(self.turns.values()))
        return None

    def _reply_error(self, rid: Any, code: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}})

    # -- failing and ending --

    def _death_reason(self) -> str:
        try:
            status = self.popen.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return "the driver closed its output"
        return f"the driver exited (status {status})"

    def fail(self, reason: str) -> None:
        """Mark the process broken, fail every waiting call, and kill it."""
        with self.lock:
            if self.failure is None:
                self.failure = f"{reason} [driver command: {self.command}]"
            calls = list(self.pending.values())
            self.pending.clear()
        for call in calls:
            call.error = AdapterError(self.failure)
            call.done.set()
        self.kill()

    def kill(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            pass
        for stream in (self.popen.stdin, self.popen.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> None:
        if self.failure is None and self.popen.poll() is None:
            try:
                _, call = self.request("shutdown", {})
                call.done.wait(_CLOSE_GRACE)
            except AdapterError:
                pass
            try:
                assert self.popen.stdin is not None
                self.popen.stdin.close()
                self.popen.wait(timeout=_CLOSE_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                pass
        with self.lock:
            self.failure = self.failure or "the driver was closed"
        self.kill()
        if self.reader is not threading.current_thread():
            self.reader.join(timeout=_CLOSE_GRACE)


class _DriverSession:
    """A `ClientSession` whose host runs behind the driver."""

    def __init__(self, adapter: DriverAdapter, sid: str, statuses: list[ServerStatus], text: str):
        self._adapter = adapter
        self.id = sid
        self.statuses = statuses
        self.text = text

    def ask(self, question: str, approve: Approver, acknowledge: Acknowledger) -> Turn:
        result = self._adapter._ask(self.id, question, approve, acknowledge)
        return self._adapter._decode(Turn, result, "ask")

    def cancel(self) -> None:
        self._adapter._call("cancel", {"session": self.id})

    def stop(self) -> Stopped:
        return self._adapter._decode(
            Stopped, self._adapter._call("stop", {"session": self.id}), "stop"
        )


class DriverAdapter:
    """An `mcp_host_conformance.harness.adapter.Adapter` for a host driven by `command`
    (split with shlex, no shell)."""

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise AdapterError(f"cannot parse the driver command {command!r}: {exc}") from None
        if not self.argv:
            raise AdapterError("the driver command is empty")
        self.command = command
        self.timeout = timeout
        self._process: _Process | None = None
        self._lock = threading.Lock()

    # -- the adapter operations --

    def describe(self) -> Description:
        return self._decode(Description, self._call("describe", {}), "describe")

    def add_server(self, home: Path, server: ServerConfig) -> Shown:
        result = self._call("add_server", {"home": str(home), "server": encode_server(server)})
        return self._decode(Shown, result, "add_server")

    def remove_server(self, home: Path, name: str) -> Shown:
        result = self._call("remove_server", {"home": str(home), "name": name})
        return self._decode(Shown, result, "remove_server")

    def list_servers(self, home: Path) -> Shown:
        return self._decode(Shown, self._call("list_servers", {"home": str(home)}), "list_servers")

    def start(self, options: StartOptions) -> _DriverSession:
        result = self._call("start", {"options": encode(options)})
        if not isinstance(result, dict) or not isinstance(result.get("session"), str):
            raise self._broken("start", "result.session: expected a string")
        statuses = self._decode(_StartResult, result, "start")
        return _DriverSession(self, result["session"], statuses.statuses, statuses.text)

    def close(self) -> None:
        """Stop the driver process (it is started again if the adapter is used again)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.close()

    # -- plumbing --

    def _ensure(self) -> _Process:
        with self._lock:
            if self._process is not None and self._process.failure is None:
                return self._process
            if self._process is not None:
                self._process.kill()
            process = _Process(self.argv, self.command)
            _LIVE.add(process)
            self._process = process
        try:
            _, call = process.request("initialize", {"protocol": PROTOCOL})
            result = self._wait(process, call)
        except AdapterError as exc:
            raise AdapterError(f"driver handshake failed: {exc}") from None
        spoken = result.get("protocol") if isinstance(result, dict) else None
        if spoken != PROTOCOL:
            process.fail(f"the driver speaks protocol {spoken!r}, the harness {PROTOCOL!r}")
            raise AdapterError(process.failure or "protocol mismatch")
        return process

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        process = self._ensure()
        _, call = process.request(method, params)
        return self._wait(process, call)

    def _ask(self, sid: str, question: str, approve: Approver, acknowledge: Acknowledger) -> Any:
        process = self._ensure()
        call = _Call("ask")
        turn = _Turn(approve, acknowledge, call)
        with process.lock:
            process.turns[sid] = turn
        try:
            with process.lock:
                if process.failure is not None:
                    raise AdapterError(process.failure)
                rid = next(process.ids)
                process.pending[rid] = call
            process.send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "ask",
                    "params": {"session": sid, "question": question},
                }
            )
            try:
                result = self._wait(process, call)
            except AdapterError:
                if turn.callback_error is not None:
                    raise turn.callback_error from None
                raise
            if turn.callback_error is not None:
                raise turn.callback_error
            return result
        finally:
            with process.lock:
                process.turns.pop(sid, None)

    def _wait(self, process: _Process, call: _Call) -> Any:
        while not call.done.is_set():
            if call.in_callback:  # the harness is answering: not the driver's time
                call.done.wait(0.2)
                continue
            remaining = call.last_activity + self.timeout - time.monotonic()
            if remaining <= 0:
                process.fail(f"the driver did not answer {call.method} within {self.timeout:g} s")
                break
            call.done.wait(remaining)
        if call.error is not None:
            raise call.error
        return call.result

    def _decode(self, cls: type, result: Any, method: str) -> Any:
        try:
            return decode(cls, result, f"{method} result")
        except WireError as exc:
            raise self._broken(method, str(exc)) from None

    def _broken(self, method: str, detail: str) -> AdapterError:
        return AdapterError(f"the driver answered {method} with a malformed result: {detail}")


@dataclass
class _StartResult:
    statuses: list[ServerStatus] = field(default_factory=list)
    text: str = ""


# Every live driver process, killed at interpreter exit if nobody closed it.
_LIVE: weakref.WeakSet[_Process] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - runs at exit
    for process in list(_LIVE):
        process.kill()
