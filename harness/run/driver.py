"""The harness side of the driver protocol: an Adapter that drives a host in any language.

Strategy: `DriverAdapter` turns each adapter operation into one JSON-RPC request to a
driver command over its stdin/stdout (docs/driver-protocol.md), through one
`mcp_host_conformance.harness.contract.jsonrpc.Peer`. One driver process serves the whole run
(spawned on first use, reused across cases): starting a process per case would cost the
suite seconds, and isolation does not need it, since every piece of state a case depends on
(home, project, servers, model) is passed in the call and every session is started and
stopped explicitly.

A driver is part of the client under test, so everything it does wrong is the client's
failure, reported as `AdapterError` with the reason: it died, it spoke something that is
not the protocol, it flooded the harness, or it did not answer in time. Nothing a driver
does can make a run unbounded:

- each call has `timeout` seconds of the driver's time (the time the harness spends
  answering its `approve` / `acknowledge` requests does not count; nothing else the
  driver sends extends it), the handshake `handshake_timeout`;
- after a failure the driver's whole process group is killed (also when its leader has
  already exited) and the next call starts a fresh one, so one broken case cannot hang
  or poison the rest of the suite;
- the run has a budget of driver silence (`silence_budget`, by default three call
  timeouts): once calls that were never answered have used it up, every later call fails
  at once with the reason instead of waiting again;
- the driver's `approve` / `acknowledge` / `question` requests are answered by one worker
  thread per driver process, in order, from a bounded queue.

The driver's stderr is copied to the harness's stderr with control characters made
visible (`mcp_host_conformance.harness.verdicts.safe_text`), at most `STDERR_LIMIT` bytes a process,
and its last lines are quoted in failure reasons.
"""

from __future__ import annotations

import atexit
import collections
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final, TypeVar

from mcp_host_conformance.harness.contract.adapter import (
    QUESTION_ANSWER,
    Acknowledger,
    AdapterError,
    Approver,
    Confirmation,
    Description,
    PendingTool,
    Questioner,
    ServerConfig,
    ServerStatus,
    Shown,
    StartOptions,
    Stopped,
    ToolApprover,
    ToolReview,
    Turn,
)
from mcp_host_conformance.harness.contract.driver_wire import (
    PROTOCOL,
    WireError,
    decode,
    encode,
    encode_server,
)
from mcp_host_conformance.harness.contract.jsonrpc import (
    CALLBACK_FAILED,
    METHOD_NOT_FOUND,
    Peer,
    Pending,
    Request,
)
from mcp_host_conformance.harness.run.cleanup import RESOURCES
from mcp_host_conformance.harness.verdicts.safe_text import visible

__all__ = [
    "DEFAULT_TIMEOUT",
    "HANDSHAKE_TIMEOUT",
    "DriverAdapter",
    "HandshakeError",
]

DEFAULT_TIMEOUT: Final = 60.0  # seconds of driver time per call; above 30 s call timeouts
HANDSHAKE_TIMEOUT: Final = 30.0  # seconds from start to the answer to `initialize`
SILENCE_BUDGET_CALLS: Final = 3  # the run's budget of unanswered calls, in call timeouts
STDERR_LIMIT: Final = 1024 * 1024  # bytes of a driver's stderr shown; the rest is dropped
_STDERR_TAIL: Final = 5  # lines quoted in failure reasons
_CLOSE_GRACE: Final = 2.0

T = TypeVar("T")


class HandshakeError(AdapterError):
    """The driver did not start or did not answer `initialize` as the protocol requires."""


class _Clock:
    """A call's bound in driver time: paused while the harness answers a callback."""

    def __init__(self, timeout: float) -> None:
        self._lock = threading.Lock()
        self._deadline = time.monotonic() + timeout
        self._paused_at: float | None = None

    def pause(self) -> None:
        with self._lock:
            self._paused_at = time.monotonic()

    def resume(self) -> None:
        with self._lock:
            if self._paused_at is not None:
                self._deadline += time.monotonic() - self._paused_at
                self._paused_at = None

    def remaining(self) -> float | None:
        """Seconds left, or None while paused."""
        with self._lock:
            if self._paused_at is not None:
                return None
            return self._deadline - time.monotonic()


class _Turn:
    """The callbacks of the `ask` (or `review_tools`) in flight for one session."""

    def __init__(
        self,
        approve: Approver,
        acknowledge: Acknowledger,
        clock: _Clock,
        review: ToolApprover | None = None,
        question: Questioner | None = None,
    ) -> None:
        self.approve = approve
        self.acknowledge = acknowledge
        self.review = review
        self.question = question
        self.clock = clock
        self.callback_error: BaseException | None = None


class _StderrCopy:
    """Copies a driver's stderr to ours, made visible and bounded; keeps the last lines."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        self._thread = threading.Thread(target=self._copy, name="driver stderr", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        shown = 0
        while True:
            try:
                line = self._stream.readline(64 * 1024)
            except (OSError, ValueError):
                return
            if not line:
                return
            text = visible(line.decode("utf-8", "replace").rstrip("\n"))
            self.tail.append(text[:300])
            if shown < STDERR_LIMIT:
                shown += len(line)
                note = " [driver stderr: the rest is not shown]" if shown >= STDERR_LIMIT else ""
                try:
                    sys.stderr.write(f"{text}{note}\n")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class _Process:
    """One running driver process: its peer, its callback worker, its stderr copy."""

    def __init__(self, argv: list[str], command: str) -> None:
        self.command = command
        try:
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # so the driver and everything it spawned can be killed
            )
        except OSError as exc:
            raise HandshakeError(
                f"cannot start the driver command {command!r}: {exc.strerror or exc}"
            ) from None
        RESOURCES.track_group(self.popen.pid)
        assert self.popen.stdin is not None and self.popen.stdout is not None
        assert self.popen.stderr is not None
        self.stderr = _StderrCopy(self.popen.stderr)
        self.turns: dict[str, _Turn] = {}
        self.turns_lock = threading.Lock()
        self.peer = Peer(
            self.popen.stdout,
            self.popen.stdin,
            name="the driver",
            strict=True,
            accepts=("approve", "acknowledge", "review_tool", "question"),
            on_failure=self._on_failure,
            end_reason=self._death_reason,
        )
        self.worker = threading.Thread(target=self._serve, name="driver callbacks", daemon=True)
        # The leader's exit ends the driver even while a child it started holds its stdout
        # open (then no end of input ever comes).
        self.watcher = threading.Thread(target=self._watch, name="driver exit", daemon=True)
        self.peer.start()
        self.worker.start()
        self.watcher.start()

    @property
    def failure(self) -> str | None:
        return self.peer.failure

    def reason(self, text: str) -> str:
        """A failure reason with the command and the driver's last stderr lines."""
        if self.popen.poll() is not None:
            self.stderr.join(0.5)  # its last words, once it has exited
        tail = " | ".join(line for line in self.stderr.tail if line.strip())
        said = f"; its stderr ended: {tail}" if tail else ""
        return f"{text} [driver command: {self.command}{said}]"

    # -- the driver's requests to the harness, answered in order on one worker thread --

    def _serve(self) -> None:
        while True:
            request = self.peer.next_request()
            if request is None:
                return
            self._answer(request)

    def _turn_for(self, params: dict[str, Any]) -> _Turn | None:
        with self.turns_lock:
            session = params.get("session")
            if isinstance(session, str) and session in self.turns:
                return self.turns[session]
            if len(self.turns) == 1:
                return next(iter(self.turns.values()))
        return None

    def _answer(self, request: Request) -> None:
        method, params = request.method, request.params
        turn = self._turn_for(params)
        if turn is None:
            self.peer.reply_error(
                request.id, CALLBACK_FAILED, f"{method} arrived while no ask is in flight"
            )
            return
        turn.clock.pause()
        try:
            answer: str | bool
            if method == "approve":
                body = {k: v for k, v in params.items() if k != "session"}
                reply = turn.approve(decode(Confirmation, body, "approve params"))
                if not isinstance(reply, str):
                    raise TypeError("the approval callback must return a string")
                answer = reply
            elif method == "review_tool":
                if turn.review is None:
                    raise WireError("review_tool arrived outside review_tools")
                body = {k: v for k, v in params.items() if k != "session"}
                answer = bool(turn.review(decode(PendingTool, body, "review_tool params")))
            elif method == "question":
                text = params.get("text")
                if not isinstance(text, str):
                    raise WireError("question params.text: expected a string")
                asked = turn.question(text) if turn.question is not None else QUESTION_ANSWER
                if not isinstance(asked, str):
                    raise TypeError("the question callback must return a string")
                answer = asked
            else:
                prompt = params.get("prompt")
                if not isinstance(prompt, str):
                    raise WireError("acknowledge params.prompt: expected a string")
                answer = bool(turn.acknowledge(prompt))
        except WireError as exc:
            turn.callback_error = AdapterError(f"the driver sent a malformed {method}: {exc}")
            self.peer.reply_error(request.id, CALLBACK_FAILED, str(exc))
            return
        except BaseException as exc:  # a case's callback may assert: surfaced from ask
            turn.callback_error = exc
            self.peer.reply_error(
                request.id, CALLBACK_FAILED, f"the harness's {method} callback failed"
            )
            return
        finally:
            turn.clock.resume()
        self.peer.reply(request.id, answer)

    # -- failing and ending --

    def _watch(self) -> None:
        status = self.popen.wait()
        self.peer.join_reader(0.5)  # what it wrote before exiting is read first
        self.peer.fail(f"the driver exited (status {status})")

    def _death_reason(self) -> str:
        try:
            status = self.popen.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return "the driver closed its output"
        return f"the driver exited (status {status})"

    def _on_failure(self, reason: str) -> None:
        self.kill()

    def kill(self) -> None:
        """Kill the driver's whole process group, also when its leader has already exited
        (what it spawned would otherwise run on), and reap the leader. Its pipes are closed
        by the peer's own threads as they end (never from here: a close could wait on a
        stream another thread is blocked in)."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            pass
        RESOURCES.untrack_group(self.popen.pid)
        self.peer.fail("the driver was stopped")

    def close(self) -> None:
        """Ask the driver to shut down, give it a moment, then kill its group anyway."""
        if self.failure is None and self.popen.poll() is None:
            self.peer.request("shutdown", {}).done.wait(_CLOSE_GRACE)
            self.peer.close("the driver was closed")  # the writer ends: the driver's stdin too
            try:
                self.popen.wait(timeout=_CLOSE_GRACE)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self.peer.join_reader(_CLOSE_GRACE)
        self.stderr.join(_CLOSE_GRACE)


class _DriverSession:
    """A `ClientSession` whose host runs behind the driver."""

    def __init__(
        self, adapter: DriverAdapter, sid: str, statuses: tuple[ServerStatus, ...], text: str
    ) -> None:
        self._adapter = adapter
        self.id = sid
        self.statuses = statuses
        self.text = text

    def ask(
        self,
        question: str,
        approve: Approver,
        acknowledge: Acknowledger,
        on_question: Questioner | None = None,
    ) -> Turn:
        """One turn; the driver's `question` requests (the host's own free-form questions to
        the person) are answered by `on_question` (QUESTION_ANSWER without one)."""
        result = self._adapter._with_callbacks(
            self.id,
            "ask",
            {"session": self.id, "question": question},
            approve,
            acknowledge,
            question=on_question,
        )
        return self._adapter._decode(Turn, result, "ask")

    def cancel(self) -> None:
        self._adapter._call("cancel", {"session": self.id})

    def review_tools(self, approve: ToolApprover) -> ToolReview:
        """The optional tool review (profiles pinning, instruction-flagging): the driver
        asks `review_tool` for each pending tool while `review_tools` is in flight."""
        result = self._adapter._with_callbacks(
            self.id, "review_tools", {"session": self.id}, _no_approval, _no_ack, approve
        )
        return self._adapter._decode(ToolReview, result, "review_tools")

    def stop(self) -> Stopped:
        return self._adapter._decode(
            Stopped, self._adapter._call("stop", {"session": self.id}), "stop"
        )


@dataclass(frozen=True)
class _StartResult:
    statuses: tuple[ServerStatus, ...] = ()
    text: str = ""


class DriverAdapter:
    """An `mcp_host_conformance.harness.contract.adapter.Adapter` for a host driven by `command`
    (split with shlex, no shell). Every bound is multiplied by `timeout_scale`."""

    def __init__(
        self,
        command: str,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        timeout_scale: float = 1.0,
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
        silence_budget: float | None = None,
    ) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise AdapterError(f"cannot parse the driver command {command!r}: {exc}") from None
        if not self.argv:
            raise AdapterError("the driver command is empty")
        self.command = command
        self.timeout = timeout * timeout_scale
        self.handshake_timeout = handshake_timeout * timeout_scale
        self.silence_budget = (
            silence_budget if silence_budget is not None else SILENCE_BUDGET_CALLS * self.timeout
        )
        self.silence_spent = 0.0  # seconds lost, run-wide, to calls the driver never answered
        self._exhausted: str | None = None
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

    def allow_addresses(self, home: Path, addresses: tuple[str, ...]) -> Shown:
        """The optional allowance (profile private-address-refusal)."""
        result = self._call("allow_addresses", {"home": str(home), "addresses": list(addresses)})
        return self._decode(Shown, result, "allow_addresses")

    def project_config(self, servers: Sequence[ServerConfig]) -> Mapping[str, str]:
        """The optional project configuration in the host's own format (CFG-2's lures):
        {relative path: text}; {} from a driver without the method."""
        process = self._ensure()
        params = {"servers": [encode_server(s) for s in servers]}
        pending = process.peer.request("project_config", params)
        try:
            result = self._wait(process, pending, _Clock(self.timeout))
        except AdapterError:
            if pending.error is not None and pending.error.code == METHOD_NOT_FOUND:
                return {}
            raise
        if not isinstance(result, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in result.items()
        ):
            raise self._broken("project_config", "expected an object of path -> text")
        return result

    def start(self, options: StartOptions) -> _DriverSession:
        result = self._call("start", {"options": encode(options)})
        if not isinstance(result, dict) or not isinstance(result.get("session"), str):
            raise self._broken("start", "result.session: expected a string")
        started = self._decode(_StartResult, result, "start")
        return _DriverSession(self, result["session"], started.statuses, started.text)

    def close(self) -> None:
        """Stop the driver process (it is started again if the adapter is used again)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.close()
            _LIVE.discard(process)

    # -- plumbing --

    def _ensure(self) -> _Process:
        with self._lock:
            if self._exhausted is not None:
                raise AdapterError(self._exhausted)
            if self._process is not None and self._process.failure is None:
                return self._process
            if self._process is not None:
                self._process.kill()
                _LIVE.discard(self._process)
            process = _Process(self.argv, self.command)
            _LIVE.add(process)
            self._process = process
        try:
            pending = process.peer.request("initialize", {"protocol": PROTOCOL})
            result = self._wait(process, pending, _Clock(self.handshake_timeout))
        except AdapterError as exc:
            raise HandshakeError(f"the driver failed its handshake: {exc}") from None
        spoken = result.get("protocol") if isinstance(result, dict) else None
        if spoken != PROTOCOL:
            reason = process.reason(
                f"the driver speaks protocol {str(spoken)[:80]!r}, the harness {PROTOCOL!r}"
            )
            process.peer.fail(reason)
            raise HandshakeError(f"the driver failed its handshake: {reason}")
        return process

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        process = self._ensure()
        pending = process.peer.request(method, params)
        return self._wait(process, pending, _Clock(self.timeout))

    def _with_callbacks(
        self,
        sid: str,
        method: str,
        params: dict[str, Any],
        approve: Approver,
        acknowledge: Acknowledger,
        review: ToolApprover | None = None,
        question: Questioner | None = None,
    ) -> Any:
        process = self._ensure()
        clock = _Clock(self.timeout)
        turn = _Turn(approve, acknowledge, clock, review, question)
        with process.turns_lock:
            process.turns[sid] = turn
        try:
            pending = process.peer.request(method, params)
            try:
                result = self._wait(process, pending, clock)
            except AdapterError:
                if turn.callback_error is not None:
                    raise turn.callback_error from None
                raise
            if turn.callback_error is not None:
                raise turn.callback_error
            return result
        finally:
            with process.turns_lock:
                process.turns.pop(sid, None)

    def _wait(self, process: _Process, pending: Pending, clock: _Clock) -> Any:
        while not pending.done.is_set():
            left = clock.remaining()
            if left is None:  # the harness is answering the driver: not the driver's time
                pending.done.wait(0.1)
                continue
            if left <= 0:
                bound = self.handshake_timeout if pending.method == "initialize" else self.timeout
                # the silence is the bound the clock gave the driver, all of it: the wall time
                # since this wait began is less by however long the clock ran before it (a
                # loaded run's two unanswered calls once fell short of a two-call budget)
                self._spend(bound)
                process.peer.fail(
                    process.reason(f"the driver did not answer {pending.method} within {bound:g} s")
                )
                break
            pending.done.wait(left)
        if pending.failure is not None:
            raise AdapterError(
                pending.failure
                if "[driver command:" in pending.failure
                else process.reason(pending.failure)
            )
        if pending.error is not None:
            raise AdapterError(f"the driver's {pending.method} failed: {pending.error.message}")
        return pending.result

    def _spend(self, seconds: float) -> None:
        with self._lock:
            self.silence_spent += seconds
            if self.silence_spent >= self.silence_budget and self._exhausted is None:
                self._exhausted = (
                    f"the driver left {self.silence_spent:.0f} s of calls unanswered, the run's "
                    f"budget ({self.silence_budget:g} s); the harness no longer waits for it "
                    f"[driver command: {self.command}]"
                )

    def _decode(self, cls: type[T], result: Any, method: str) -> T:
        try:
            return decode(cls, result, f"{method} result")
        except WireError as exc:
            raise self._broken(method, str(exc)) from None

    def _broken(self, method: str, detail: str) -> AdapterError:
        return AdapterError(f"the driver answered {method} with a malformed result: {detail}")


def _no_approval(confirmation: Confirmation) -> str:
    raise WireError("approve arrived during review_tools")


def _no_ack(prompt: str) -> bool:
    raise WireError("acknowledge arrived during review_tools")


# Every live driver process, killed at interpreter exit if nobody closed it.
_LIVE: weakref.WeakSet[_Process] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - runs at exit
    for process in list(_LIVE):
        process.kill()
        process.peer.join_reader(1.0)  # its reader ends before the interpreter does
