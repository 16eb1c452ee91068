"""A client of `fast-agent acp`: the Agent Client Protocol (JSON-RPC 2.0) over the stdio of one
fast-agent process.

Strategy: fast-agent speaks JSON-RPC 2.0, one
message per line. One reader thread owns stdout: answers resolve the pending request of
their id, notifications are appended to a log that waiters watch through a condition
variable, and requests from fast-agent (permission requests) are handed to a callback on a thread of
their own, so a person's slow answer never stops the reader. stderr is fast-agent's log: it is
drained into a bounded tail, kept only to explain a failure. Every wait is bounded; a
message that is not JSON, or a line over the size cap, ends the connection with a reason
instead of a traceback. Nothing here knows what the messages mean.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

__all__ = ["Acp", "AcpError"]

LINE_LIMIT = 64 * 1024 * 1024  # one message; a tool result of a few MiB fits easily
STDERR_TAIL = 16 * 1024
Message = dict[str, Any]
RequestHandler = Callable[[str, Any], Any]


class AcpError(RuntimeError):
    """fast-agent answered with an error, broke the protocol, exited or did not answer in time."""


class Acp:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        on_request: RequestHandler,
    ) -> None:
        self._on_request = on_request
        self._process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
        )
        self._lock = threading.Lock()  # writes
        self._changed = threading.Condition()
        self._pending: dict[int, Future[Any]] = {}
        self._next_id = 0
        self.notifications: list[Message] = []
        self.closed_reason: str | None = None
        self._stderr = bytearray()
        threading.Thread(target=self._read, name="fast-agent-stdout", daemon=True).start()
        threading.Thread(target=self._drain, name="fast-agent-stderr", daemon=True).start()

    # ---- sending --------------------------------------------------------------------------

    def _write(self, message: Message) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self._lock:
            stdin = self._process.stdin
            if stdin is None or stdin.closed:
                raise AcpError(f"fast-agent is closed ({self.closed_reason})")
            try:
                stdin.write(data)
                stdin.flush()
            except OSError as exc:
                raise AcpError(f"writing to fast-agent: {exc.strerror}") from None

    def request(self, method: str, params: Any, timeout: float) -> Any:
        with self._changed:
            self._next_id += 1
            ident = self._next_id
            future: Future[Any] = Future()
            self._pending[ident] = future
        self._write({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        try:
            return future.result(timeout)
        except TimeoutError:
            message = f"fast-agent did not answer {method} within {timeout:g} s"
            raise AcpError(message) from None
        finally:
            with self._changed:
                self._pending.pop(ident, None)

    def notify(self, method: str, params: Any = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    # ---- receiving ------------------------------------------------------------------------

    def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        reason = "fast-agent closed its output"
        try:
            while True:
                line = stdout.readline(LINE_LIMIT + 1)
                if not line:
                    break
                if len(line) > LINE_LIMIT:
                    reason = f"a message from fast-agent over {LINE_LIMIT} bytes"
                    break
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError):
                    reason = f"fast-agent broke the protocol: not JSON: {line[:80]!r}"
                    break
                if isinstance(message, dict):
                    self._dispatch(message)
        finally:
            self._close(reason)

    def _dispatch(self, message: Message) -> None:
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            threading.Thread(
                target=self._answer, args=(message,), name="fast-agent-request", daemon=True
            ).start()
        elif isinstance(method, str):
            with self._changed:
                self.notifications.append(message)
                self._changed.notify_all()
        else:
            with self._changed:
                future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                return
            if "error" in message:
                error = message.get("error") or {}
                text = error.get("message") if isinstance(error, dict) else str(error)
                future.set_exception(AcpError(f"fast-agent: {text}"))
            else:
                future.set_result(message.get("result"))

    def _answer(self, message: Message) -> None:
        try:
            result = self._on_request(str(message["method"]), message.get("params"))
            reply: Message = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        except Exception as exc:  # noqa: BLE001 - reported to fast-agent as the request's error
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32000, "message": str(exc)},
            }
        try:
            self._write(reply)
        except AcpError:
            pass  # it went away meanwhile; the reader reports that

    def _drain(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        for line in iter(lambda: stderr.readline(65536), b""):
            self._stderr += line
            del self._stderr[:-STDERR_TAIL]

    def _close(self, reason: str) -> None:
        self._process.poll()
        with self._changed:
            self.closed_reason = self.closed_reason or reason + self.stderr_hint()
            pending = list(self._pending.values())
            self._changed.notify_all()
        for future in pending:
            if not future.done():
                future.set_exception(AcpError(reason))

    def wait_for(self, predicate: Callable[[Message], bool], since: int, timeout: float) -> int:
        """Index of the first notification at or after `since` that matches; AcpError
        when none comes within `timeout` or the connection ends."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for index in range(since, len(self.notifications)):
                    if predicate(self.notifications[index]):
                        return index
                since = len(self.notifications)
                if self.closed_reason is not None:
                    raise AcpError(self.closed_reason)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AcpError(f"fast-agent went quiet for {timeout:g} s")
                self._changed.wait(left)

    def stderr_hint(self) -> str:
        tail = bytes(self._stderr).decode("utf-8", "replace").strip().splitlines()[-3:]
        return ("; its log ends: " + " | ".join(tail)[-600:]) if tail else ""

    # ---- ending -----------------------------------------------------------------------------

    def close(self, grace: float) -> int | None:
        """End fast-agent as its client (an editor) does: close its input and wait; kill it
        only if it has not exited within `grace` seconds. Its children are its own business
        (STDIO-5)."""
        with self._lock:
            if self._process.stdin and not self._process.stdin.closed:
                try:
                    self._process.stdin.close()
                except OSError:
                    pass
        try:
            return self._process.wait(grace)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return self._process.wait(grace)
