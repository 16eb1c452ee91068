"""Forked workers: a run's cases in N processes forked from the run after collection.

Why: the cases mostly wait (on hosts, mocks, timeouts), so a run overlaps them in several
processes. A pytest-xdist worker is a new interpreter that imports pytest, this package and
the suite and collects it again: ~1.3 s of CPU a worker, so ~3.5 s of wall time on 2 cores
before the first case of a 4-worker run. A fork of the run after collection has all of that
already and only runs cases.

How: `--mcphc-workers N` (`mcp-host-conformance run -n N` gives it) takes over pytest's run
loop in this process, the parent. After collection it forks N workers. Each asks the parent
for a case and keeps the next one in hand (pytest tears a fixture down by the next case: a
module's or the session's stays up while the next case needs it), runs the case through
pytest's whole protocol, and sends its reports (`pytest_report_to_serializable`, as xdist
does) and warnings to the parent, which replays them to its own hooks: the terminal, the
JSON report, `-x` and the exit status are the parent's, as in a serial run. A worker that
dies mid-case (a crash, a kill) ends that case as a harness error (WorkerCrashed: not run, no
rule failed; the run's exit status is 3), the case it held next goes
back to the queue and a new worker takes its place (at most N times a run).

Interruption is the parent's to decide: a worker ignores Ctrl-C's SIGINT (a Python handler,
so what it starts gets the default back at exec) and stops when the parent, having stopped
itself (Ctrl-C, SIGTERM, an error of its own), writes to the worker's interrupt pipe, or when
that pipe ends (the parent died): a thread of the worker's waiting on the pipe sends
_INTERRUPT to the worker's main thread itself, because a signal sent to the process may be
taken by any of its threads and then never wakes a main thread blocked in a wait (seen: a
case waiting on an Event slept through SIGTERM and SIGUSR2 alike). The running case gets
KeyboardInterrupt, once, as in a serial run; the worker's fixtures are torn down and it
ends; the parent waits for that, bounded, then kills what is left and removes its run root.
A SIGTERM a worker gets (run_cleanup forwards a conformance run's to its children) does the
same. The parent holds SIGINT and SIGTERM back while it forks and registers a worker, so no
signal finds a worker it does not know of.

Reset in a worker right after the fork, as each is this process's own: the client's adapter
(the parent's may be a driver process it described the client with; the worker loads its
own), the run's resources (its own temp root and process groups, removed when it ends),
pytest's global capture (a worker's cases' output is its own) and the terminal (the parent
prints). A worker ends with os._exit: the parent's atexit work is the parent's.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from mcp_host_conformance.harness.cases.items import flag, option
from mcp_host_conformance.harness.verdicts.outcomes import HarnessFailure

__all__ = ["WorkerCrashed", "add_option", "check_options", "pytest_runtestloop"]

_HEADER: Final = struct.Struct("!I")
_NONE: Final = 0xFFFFFFFF  # "no case for you" (no index is this large): none left, or the run stops
# After Ctrl-C or SIGTERM: how long the workers get to tear their cases down before SIGTERM,
# then before SIGKILL (the fixtures stop hosts and mocks within their own bounds).
_UNWIND_SECONDS: Final = 30.0
_DRAIN_SECONDS: Final = 5.0  # for the rest of a message a worker has begun to send
_INTERRUPT: Final = signal.SIGUSR2  # parent -> worker: the run is interrupted
_HELD_BACK: Final = (signal.SIGINT, signal.SIGTERM)
_unwinding = False  # in a worker: it is stopping already, a second interruption is not news


class WorkerCrashed(HarnessFailure):
    """The worker running a case ended before the case did."""


def add_option(group: pytest.OptionGroup) -> None:
    """`--mcphc-workers N`, in the plugin's option group (the plugin loads this module)."""
    group.addoption(
        flag("workers"),
        type=int,
        default=0,
        metavar="N",
        help="run the cases in N processes forked from this one after collection "
        "(0: in this process, one at a time)",
    )


def check_options(config: pytest.Config) -> None:
    """A usage error at configuration, before anything starts."""
    count = option(config, "workers", 0) or 0
    if count < 0:
        raise pytest.UsageError(f"{flag('workers')} must be 0 or more, not {count}")
    if count and (getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput")):
        raise pytest.UsageError(f"give {flag('workers')} or pytest-xdist's -n, not both")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    config = session.config
    count = option(config, "workers", 0) or 0
    if (
        count == 0
        or not session.items
        or session.testsfailed  # collection errors: pytest's own loop says so and stops
        or config.option.collectonly
        or config.getoption("usepdb", False)  # a debugger needs this process's terminal
    ):
        return None
    _Parent(session, min(count, len(session.items))).run()
    return True


# ---- the wire: length-prefixed pickles on a socketpair (both ends are this program) --------


def _send(sock: socket.socket, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    """`size` bytes, or None when the other side ended (a reset too: a worker killed with a
    reply unread)."""
    chunks = []
    while size:
        try:
            chunk = sock.recv(min(size, 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(sock: socket.socket) -> Any:
    """The next message, or None at end of stream (the other side ended)."""
    header = _read_exactly(sock, _HEADER.size)
    if header is None:
        return None
    data = _read_exactly(sock, _HEADER.unpack(header)[0])
    return None if data is None else pickle.loads(data)


# ---- the parent ------------------------------------------------------------------------------


@dataclass
class _Worker:
    pid: int
    sock: socket.socket
    interrupt: int  # the write end of its interrupt pipe
    held: list[int] = field(default_factory=list)  # handed out, not finished: running first
    started: set[int] = field(default_factory=set)  # held cases whose logstart arrived


class _Parent:
    def __init__(self, session: pytest.Session, count: int) -> None:
        self.session = session
        self.config = session.config
        self.items = session.items
        self.count = count
        self.queue: deque[int] = deque(range(len(self.items)))
        self.workers: dict[int, _Worker] = {}  # by socket fd
        self.replacements = count

    def run(self) -> None:
        factory = getattr(self.config, "_tmp_path_factory", None)
        if factory is not None:
            factory.getbasetemp()  # one base for all the workers, made before they fork
        from mcp_host_conformance.mocks.spec import prepare_checks

        prepare_checks()  # the mock specs' check, compiled once here and not in each worker
        try:
            for number in range(self.count):
                self._fork(number)
            self._serve()
        except BaseException:
            self._unwind()
            raise

    def _fork(self, number: int) -> None:
        parent_end, child_end = socket.socketpair()
        interrupt_read, interrupt_write = os.pipe()
        capman = self.config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.stop_global_capturing()  # pending output goes out once, from here
        sys.stdout.flush()
        sys.stderr.flush()
        with _held_back():
            with warnings.catch_warnings():
                # Python 3.12+ warns of fork() beside threads (the DNS stub, a driver's
                # readers): the worker never uses them or anything they hold
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                try:
                    parent_end.close()
                    os.close(interrupt_write)
                    for other in self.workers.values():
                        other.sock.close()
                        os.close(other.interrupt)  # else its pipe would not end with the run
                    _Child(self.session, child_end, number, interrupt_read).run()
                finally:
                    os._exit(3)  # whatever happened, never back into the parent's code
            child_end.close()
            os.close(interrupt_read)
            self.workers[parent_end.fileno()] = _Worker(pid, parent_end, interrupt_write)
        if capman is not None:
            capman.start_global_capturing()

    def _serve(self) -> None:
        import selectors

        selector = selectors.DefaultSelector()
        watched: set[int] = set()
        while self.workers:
            for fd, worker in self.workers.items():
                if fd not in watched:  # a new worker (a replacement may reuse an fd)
                    selector.register(worker.sock, selectors.EVENT_READ)
                    watched.add(fd)
            for key, _ in selector.select():
                worker = self.workers[key.fd]
                message = _receive(worker.sock)
                if message is None:
                    selector.unregister(worker.sock)
                    watched.discard(key.fd)
                    self._ended(worker)
                else:
                    self._handle(worker, message)
        selector.close()
        never = [self.items[index] for index in self.queue] if not self._stopping() else []
        self.queue.clear()
        for item in never:  # every worker crashed and no more may start: said, not dropped
            self.config.hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            self._fail(item, "no worker was left to run this case (they kept crashing)")
        if self.session.shouldfail:
            raise self.session.Failed(self.session.shouldfail)
        if self.session.shouldstop:
            raise self.session.Interrupted(self.session.shouldstop)

    def _stopping(self) -> bool:
        return bool(self.session.shouldfail or self.session.shouldstop)

    def _handle(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        kind, *rest = message
        hook = self.config.hook
        if kind == "want":
            index = _NONE if self._stopping() or not self.queue else self.queue.popleft()
            if index != _NONE:
                worker.held.append(index)
            try:
                worker.sock.sendall(_HEADER.pack(index))
            except OSError:  # it is ending: its end of stream comes next, the case goes back
                pass
        elif kind == "logstart":
            index, nodeid, location = rest
            worker.started.add(index)
            hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        elif kind == "report":
            report = hook.pytest_report_from_serializable(config=self.config, data=rest[0])
            hook.pytest_runtest_logreport(report=report)
        elif kind == "logfinish":
            index, nodeid, location = rest
            hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)
            if index in worker.held:
                worker.held.remove(index)
            worker.started.discard(index)
        elif kind == "warning":
            _replay_warning(self.config, *rest)
        elif kind == "error":  # the worker's own machinery failed, not a case: say so
            self._write_line(f"mcp-host-conformance: a worker failed: {rest[0]}")

    def _ended(self, worker: _Worker) -> None:
        del self.workers[worker.sock.fileno()]
        worker.sock.close()
        os.close(worker.interrupt)
        status = _reap(worker.pid)
        if status:  # it could not remove what its cases made
            from mcp_host_conformance.harness.run.cleanup import remove_roots_of

            remove_roots_of(worker.pid)
        if not worker.held:
            if status:
                self._write_line(f"mcp-host-conformance: a worker ended with {status}")
            return
        crashed = [i for i in worker.held if i in worker.started]
        for index in reversed([i for i in worker.held if i not in worker.started]):
            self.queue.appendleft(index)  # handed out but not begun: another worker runs it
        for index in crashed:
            ended = status or "exit status 0"
            why = f"the worker process running this case ended ({ended}) before the case did"
            self._fail(self.items[index], why)
        if self.queue and not self._stopping() and self.replacements > 0:
            self.replacements -= 1
            self._fork(self.count + self.replacements)

    def _fail(self, item: pytest.Item, why: str) -> None:
        def crash() -> None:
            raise WorkerCrashed(why)

        call = pytest.CallInfo.from_call(crash, "call")
        report = item.ihook.pytest_runtest_makereport(item=item, call=call)
        self.config.hook.pytest_runtest_logreport(report=report)
        self.config.hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

    def _drain(self, worker: _Worker) -> None:
        """What a worker sent before the run stopped and the parent has not read yet, taken in
        (no case handed out): a case whose start waited in the socket is cut short, not
        reported as never run (seen under load: Ctrl-C as two cases ran, one of them said
        never to have run)."""
        import selectors

        with selectors.DefaultSelector() as selector:
            try:
                selector.register(worker.sock, selectors.EVENT_READ)
                worker.sock.settimeout(_DRAIN_SECONDS)  # a message is sent whole: never long
                while selector.select(timeout=0):
                    message = _receive(worker.sock)
                    if message is None:
                        return
                    if message[0] != "want":
                        self._handle(worker, message)
            except Exception:  # noqa: BLE001 - a torn message (the stop came mid-read): what
                return  # came before it was taken in, and the workers must still be stopped

    def _write_line(self, text: str) -> None:
        terminal = self.config.pluginmanager.getplugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(text)
        else:
            print(text, file=sys.stderr)

    def _unwind(self) -> None:
        """Ctrl-C, SIGTERM or a failure here: the workers tear their cases down and end."""
        pids = [worker.pid for worker in self.workers.values()]
        for worker in self.workers.values():
            self._drain(worker)
            worker.sock.close()  # a worker waiting for its next case gets none
            try:
                os.write(worker.interrupt, b"!")
            except OSError:  # it has ended: its reading end is gone
                pass
            os.close(worker.interrupt)
        self.workers.clear()
        deadline = time.monotonic() + _UNWIND_SECONDS
        stuck = [pid for pid in pids if not _reaped_by(pid, deadline)]
        if not stuck:
            return
        from mcp_host_conformance.harness.run.cleanup import remove_roots_of

        for pid in stuck:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + _UNWIND_SECONDS
        for pid in stuck:
            _reaped_by(pid, deadline)
            remove_roots_of(pid)  # killed: what its cases made is ours to remove


@contextmanager
def _held_back() -> Iterator[None]:
    """SIGINT and SIGTERM recorded, not acted on, inside the block, then delivered again."""
    pending: list[int] = []
    handlers: dict[int, Any] = {signum: signal.getsignal(signum) for signum in _HELD_BACK}

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    for held in _HELD_BACK:
        signal.signal(held, hold)
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        for number in pending:
            os.kill(os.getpid(), number)  # its own handler runs now


def _watch_interrupt(pipe: int, main_thread: int) -> None:
    """A worker's thread: when the parent writes to the pipe or ends, interrupt the main
    thread (a signal to that thread, not to the process: see the module comment)."""
    try:
        os.read(pipe, 1)
    except OSError:
        pass
    signal.pthread_kill(main_thread, _INTERRUPT)


def _interrupted(signum: int, frame: Any) -> None:
    """A worker's _INTERRUPT and SIGTERM handler: the running case gets KeyboardInterrupt,
    once."""
    global _unwinding
    if not _unwinding:
        _unwinding = True
        raise KeyboardInterrupt("the run was interrupted")


def _reaped_by(pid: int, deadline: float) -> bool:
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if done:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _reap(pid: int) -> str:
    """Wait for a worker whose socket closed; how it ended ('' for a clean exit)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return ""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(signum).name}"
        except ValueError:
            return f"killed by signal {signum}"
    code = os.WEXITSTATUS(status)
    return f"exit status {code}" if code else ""


def _replay_warning(
    config: pytest.Config,
    text: str,
    category: type[Warning],
    filename: str,
    lineno: int,
    nodeid: str,
    location: tuple[str, int, str] | None,
) -> None:
    try:
        message: Warning | str = category(text)
    except Exception:  # noqa: BLE001 - a warning class that cannot be rebuilt from its text
        message = text
    config.hook.pytest_warning_recorded.call_historic(
        kwargs={
            "warning_message": warnings.WarningMessage(message, category, filename, lineno),
            "when": "runtest",
            "nodeid": nodeid,
            "location": location,
        }
    )


# ---- a worker ------------------------------------------------------------------------------


class _Forwarder:
    """A worker's plugin: what its cases report goes to the parent."""

    def __init__(self, config: pytest.Config, sock: socket.socket) -> None:
        self.config = config
        self.sock = sock
        self.index = _NONE  # the case running now

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int, str]) -> None:
        _send(self.sock, ("logstart", self.index, nodeid, location))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        _send(self.sock, ("report", data))

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int, str]) -> None:
        _send(self.sock, ("logfinish", self.index, nodeid, location))

    def pytest_warning_recorded(
        self, warning_message: warnings.WarningMessage, when: str, nodeid: str, location: Any
    ) -> None:
        if when != "runtest":  # collection's and configuration's are the parent's own
            return
        _send(
            self.sock,
            (
                "warning",
                str(warning_message.message),
                warning_message.category,
                warning_message.filename,
                warning_message.lineno,
                nodeid,
                location,
            ),
        )


class _Child:
    def __init__(
        self,
        session: pytest.Session,
        sock: socket.socket,
        number: int,
        interrupt: int,
    ) -> None:
        self.session = session
        self.config = session.config
        self.sock = sock
        self.number = number
        self.interrupt = interrupt

    def run(self) -> None:
        global _unwinding
        status = 0
        try:
            # the parent decides when the run stops: the terminal's Ctrl-C is its to handle
            signal.signal(signal.SIGINT, lambda signum, frame: None)
            signal.signal(signal.SIGTERM, _interrupted)
            signal.signal(_INTERRUPT, _interrupted)
            threading.Thread(
                target=_watch_interrupt,
                args=(self.interrupt, threading.get_ident()),
                name="worker interrupt",
                daemon=True,
            ).start()
            self._become_worker()
            self._run_cases()
        except KeyboardInterrupt:
            _unwinding = True
            status = 2
            self._tear_down()
        except BaseException:  # noqa: BLE001 - the parent says so; the worker must end
            status = 3
            self._tell_error(traceback.format_exc(limit=8))
            self._tear_down()
        finally:
            self._end(status)

    def _become_worker(self) -> None:
        from mcp_host_conformance.harness.run import cleanup as run_cleanup
        from mcp_host_conformance.harness.run.client_under_test import forget_adapter

        run_cleanup.forked()
        forget_adapter(self.config)
        manager = self.config.pluginmanager
        terminal = manager.getplugin("terminalreporter")
        if terminal is not None:
            manager.unregister(terminal)
        capman = manager.getplugin("capturemanager")
        if capman is not None:
            capman.start_global_capturing()
        self.forwarder = _Forwarder(self.config, self.sock)
        manager.register(self.forwarder, f"mcp-host-conformance-worker-{self.number}")

    def _cases(self) -> Iterator[int]:
        while True:
            _send(self.sock, ("want",))
            reply = _read_exactly(self.sock, _HEADER.size)
            if reply is None:
                return
            index = _HEADER.unpack(reply)[0]
            if index == _NONE:
                return
            yield index

    def _run_cases(self) -> None:
        cases = self._cases()
        current = next(cases, None)
        while current is not None:
            following = next(cases, None)
            self.forwarder.index = current
            nextitem = None if following is None else self.session.items[following]
            self.config.hook.pytest_runtest_protocol(
                item=self.session.items[current], nextitem=nextitem
            )
            current = following

    def _tear_down(self) -> None:
        """What pytest's own session end does after Ctrl-C: every fixture still up, down."""
        try:
            self.session._setupstate.teardown_exact(None)
        except BaseException:  # noqa: BLE001 - ending anyway; run_cleanup removes the rest
            pass

    def _tell_error(self, text: str) -> None:
        try:
            _send(self.sock, ("error", text))
        except OSError:
            pass

    def _end(self, status: int) -> None:
        from mcp_host_conformance.harness.run import cleanup as run_cleanup
        from mcp_host_conformance.harness.run.client_under_test import close_client

        try:
            close_client(self.config)
            run_cleanup.RESOURCES.cleanup()
            run_cleanup.sweep()  # what its cases' hosts and drivers left, setsid or not
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
