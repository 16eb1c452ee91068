"""A small client of `opencode serve`: the process, its HTTP API and its event stream.

Strategy: one `opencode serve --port 0` per started host, in the case's home and working
directory; the URL it prints is the API. Requests are plain JSON over HTTP/1.1 to that
loopback address (`http.client`, one connection per request). Events (`GET /event`, server-
sent events) are read by a thread into a list that waits can be put on; everything opencode
prints is kept, bounded, for the messages of failures. Whatever opencode sends is hostile
input: JSON that does not parse, a line past the bound or an event that is not an object is
dropped, never trusted.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["OpencodeError", "Serve"]

LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:(\d+))")
LINE_BOUND = 16 * 1024 * 1024  # one event line (a tool output can be large)
PRINTED_BOUND = 64 * 1024  # what opencode printed, kept for error messages
EVENTS_BOUND = 100_000


class OpencodeError(RuntimeError):
    """opencode failed, hung past a bound, or answered what cannot be read (`status`: the
    HTTP status of an error answer, else None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Serve:
    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        bound: float,
    ) -> None:
        self.printed: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._closed = False
        self.process = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.port = self._listening(bound)
        self._events_thread = threading.Thread(
            target=self._read_events, name="opencode-events", daemon=True
        )
        self._events_thread.start()
        self.wait_for(lambda e: e.get("type") == "server.connected", 0, bound)

    # ---- the process --------------------------------------------------------------------------

    def _listening(self, bound: float) -> int:
        found: list[int] = []
        ready = threading.Event()

        def pump() -> None:
            assert self.process.stdout is not None
            for raw in self.process.stdout:
                line = raw[:4096].decode("utf-8", "replace").rstrip("\n")
                if sum(len(p) for p in self.printed) < PRINTED_BOUND:
                    self.printed.append(line)
                match = LISTENING.search(line)
                if match and not found:
                    found.append(int(match.group(2)))
                    ready.set()
            ready.set()  # opencode ended

        threading.Thread(target=pump, name="opencode-output", daemon=True).start()
        ready.wait(bound)
        if not found:
            self.close(2.0)
            raise OpencodeError(
                f"opencode serve printed no address within {bound:g} s: {self.output()}"
            )
        return found[0]

    def output(self) -> str:
        return "\n".join(self.printed)[-4000:]

    def close(self, grace: float) -> None:
        """Stop opencode as its user does at the terminal (Ctrl-C), then for good."""
        self._closed = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(grace)
        with self._changed:
            self._changed.notify_all()

    # ---- HTTP ---------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, bound: float = 30.0) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=bound)
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {"content-type": "application/json"} if payload is not None else {}
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read(LINE_BOUND + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise OpencodeError(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        finally:
            connection.close()
        if len(data) > LINE_BOUND:
            raise OpencodeError(f"{method} {path}: an answer over {LINE_BOUND} bytes")
        if response.status >= 400:
            text = data[:2000].decode("utf-8", "replace")
            raise OpencodeError(f"{method} {path}: HTTP {response.status}: {text}", response.status)
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError:
            raise OpencodeError(f"{method} {path}: an answer that is not JSON") from None

    # ---- events -------------------------------------------------------------------------------

    def _read_events(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=None)
        try:
            connection.request("GET", "/event", headers={"accept": "text/event-stream"})
            response = connection.getresponse()
            while not self._closed:
                line = response.fp.readline(LINE_BOUND)
                if not line:
                    break
                if not line.startswith(b"data:"):
                    continue
                try:
                    event = json.loads(line[5:])
                except ValueError:
                    continue
                if isinstance(event, dict):
                    with self._changed:
                        if len(self.events) < EVENTS_BOUND:
                            self.events.append(event)
                        self._changed.notify_all()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            connection.close()
            with self._changed:
                self._closed = True
                self._changed.notify_all()

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], since: int, bound: float
    ) -> int:
        """The index of the first event from `since` on that satisfies `predicate`."""
        deadline = time.monotonic() + bound
        with self._changed:
            while True:
                for index in range(since, len(self.events)):
                    if predicate(self.events[index]):
                        return index
                since = len(self.events)
                left = deadline - time.monotonic()
                if self._closed:
                    raise OpencodeError(f"opencode's event stream ended: {self.output()}")
                if left <= 0:
                    raise OpencodeError(f"no such event from opencode within {bound:g} s")
                self._changed.wait(left)
