"""The stdio mock MCP server: a process speaking newline-delimited JSON-RPC on stdin/stdout.

Strategy: it must answer `initialize` within 150 ms of spawn, so its start path imports
only the standard library and the mocks' light modules (`spec`, `journal`, `json_input`,
the pure protocol functions of `_rpc` and the plans of `behaviour`), never the `mcp` SDK,
pydantic or a web stack. What to do with each request is decided by `behaviour.decide`,
exactly as for the HTTP mock; this module executes the plans on its pipes. It journals to
a JSON-lines file (`FileJournal`) because the reader lives in another process: one
kind="process" entry at start (argv verbatim, the whole environment, pid, pgid, cwd),
one kind="rpc" entry per line received (`journal.rpc_entry`, as over HTTP), kind="event"
entries for what it did (flood, exit, signal). A line is read with a bound
(`MAX_LINE_BYTES`); a longer one is skipped unread and answered with a parse error, as is
a line that is not JSON the mocks take (`json_input`: depth, encoding, size).

Misbehaviours: `stderr_flood` is written synchronously on the main thread, at start and
before each `tools/call` answer. That is deliberate (STDIO-4): a client that neither
drains nor discards stderr fills the pipe and the mock blocks, so its calls stop working
and the case sees it; a client that discards stderr never notices. `exit_at_once` exits
before reading anything, `garbage` answers every line with non-JSON text, `oversize_at`
answers that method with one line over the size in the spec (default 1 MiB + 64 KiB),
`spawn_child` leaves a sleeping child in the server's process group (STDIO-5),
`drop_call` "close"/"reset" end the process after reading a call ("stall": no answer),
`exit_at` exits when that method arrives (unanswered), `ignore_sigterm` leaves only SIGKILL to
end it, `daemonize` forks and lets the first process exit (the fork serves, same group),
`linger` keeps it running after stdin closes (STDIO-5).

Also here, light enough to import anywhere: `StdioMock(spec, workdir)`, which writes the
spec file and names the journal and the command line, and `pid_alive` / `process_state`
/ `pids_in_group`, to check that a client reaped what it started (STDIO-5).

Run: `python -S /abs/path/mocks/stdio_entry.py --spec FILE --journal FILE [extra args...]`
(extra args are accepted and only recorded), as `StdioMock.command` does; this file runs
the same way, only with a slower start.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import sys
import threading
import time

# The stdio mock starts ~60 times a suite run: `typing` would add ~5 ms of CPU to each
# start, and these modules use it in annotations only (strings, never evaluated).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

_HERE = os.path.dirname(os.path.abspath(__file__))
# The folder holding the `mcp_host_conformance` package: the repository (where `mocks/` is a
# top-level folder the package links) or the folder the package is installed in.
_ROOT = os.path.dirname(_HERE)
if os.path.basename(_ROOT) == "mcp_host_conformance":
    _ROOT = os.path.dirname(_ROOT)


def _make_mocks_importable() -> None:
    # Run as a script, sys.path[0] is this folder: its modules would shadow nothing today,
    # but the package root is what we want. The mock runs without `site` (`python -S`, see
    # StdioMock), so the package is found from here, installed or not.
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
        sys.path[0] = _ROOT
    try:
        import mcp_host_conformance.mocks.spec  # noqa: F401
    except ImportError:
        sys.path.insert(0, _ROOT)


_make_mocks_importable()

from mcp_host_conformance.mocks import _rpc  # noqa: E402
from mcp_host_conformance.mocks.behaviour import GARBAGE, Behaviour, Plan  # noqa: E402
from mcp_host_conformance.mocks.journal import Entry, FileJournal, rpc_entry  # noqa: E402
from mcp_host_conformance.mocks.json_input import (  # noqa: E402
    MAX_JSON_BYTES,
    JsonInputError,
    read_json,
)
from mcp_host_conformance.mocks.spec import (  # noqa: E402
    ServerSpec,
    SpecError,
    dump_spec,
    healthy,
    load_spec,
    new_marker_token,
    with_markers,
)

# What StdioMock runs: a short script importing `main` from here (stdio_entry.py says why).
SCRIPT = os.path.join(_HERE, "stdio_entry.py")
MAX_LINE_BYTES = MAX_JSON_BYTES  # a longer line is refused (and skipped) unread
LINGER_SECONDS = 300.0  # `linger`: how long a server whose stdin closed stays (if not killed)
_FLOOD_CHUNK = b"E" * 65535 + b"\n"


# ---- the process --------------------------------------------------------------------------


def parse_args(args: list[str]) -> tuple[str | None, str | None, list[str]]:
    """(--spec, --journal, everything else). Unknown arguments are kept, never refused."""
    spec = journal = None
    extra: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--spec", "--journal") and i + 1 < len(args):
            if arg == "--spec":
                spec = args[i + 1]
            else:
                journal = args[i + 1]
            i += 2
            continue
        if arg.startswith("--spec="):
            spec = arg[len("--spec=") :]
        elif arg.startswith("--journal="):
            journal = arg[len("--journal=") :]
        else:
            extra.append(arg)
        i += 1
    return spec, journal, extra


class StdioServer:
    """Serves one spec on a byte stream (stdout unless `out` is given, as in tests)."""

    def __init__(
        self, spec: ServerSpec, journal_path: str | None, out: BinaryIO | None = None
    ) -> None:
        self.spec = spec
        self.behaviour = Behaviour(spec)
        self.journal_path = journal_path
        self.out = out
        self.out_lock = threading.Lock()

    # journal ---------------------------------------------------------------------------
    def record(self, entry: Entry) -> None:
        if self.journal_path:
            try:
                FileJournal.append_line(self.journal_path, entry)
            except OSError:
                pass  # a journal we cannot write must not take the protocol down

    def event(self, name: str, **extra: Any) -> None:
        self.record(Entry(kind="event", extra={"event": name, **extra}))

    # output ----------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        with self.out_lock:
            out = self.out or sys.stdout.buffer
            try:
                out.write(data)
                out.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.event("exit", reason="stdout-closed")
                os._exit(0)

    def send(self, message: dict[str, Any]) -> None:
        # UTF-8 as is (a multi-byte character stays multi-byte, as over HTTP: NET-4 counts
        # bytes); text only JSON's escapes can carry (a lone surrogate) falls back to them.
        try:
            line = _rpc.compact(message).encode("utf-8")
        except UnicodeEncodeError:
            line = json.dumps(message, separators=(",", ":")).encode()
        self.send_raw(line + b"\n")

    def flood(self, when: str, total: int) -> None:
        left = total
        try:
            while left > 0:
                chunk = _FLOOD_CHUNK[:left]
                written = os.write(2, chunk)
                left -= written
        except OSError as exc:  # stderr closed by the client: it discards, nothing to do
            self.event("stderr-flooded", when=when, bytes=total - left, error=exc.strerror)
            return
        self.event("stderr-flooded", when=when, bytes=total)

    # input -----------------------------------------------------------------------------
    def handle_line(self, line: bytes) -> None:
        text = line.strip()
        if not text:
            return
        try:
            message = read_json(text)
        except JsonInputError as exc:
            self.refuse(text, str(exc), len(line))
            return
        kind, problem = _rpc.classify(message)
        self.record(rpc_entry(message, kind, body_size=len(line)))
        if kind == "invalid" and problem is not None:
            self.reply_or_garbage(problem)
        elif kind == "request":
            if message["method"] == self.spec.misbehaviour.exit_at:
                self.event("exit", reason="exit_at", method=message["method"])
                os._exit(0)
            self.execute(self.behaviour.plan(message))
        # notifications and responses from the client need no answer

    def refuse(self, text: bytes, reason: str, size: int) -> None:
        """Journal an unreadable line and answer a JSON-RPC parse error."""
        self.record(rpc_entry(text, "unreadable", error=reason, body_size=size))
        self.reply_or_garbage(_rpc.error(None, _rpc.PARSE_ERROR, f"Parse error: {reason}"))

    def reply_or_garbage(self, message: dict[str, Any]) -> None:
        if self.spec.misbehaviour.garbage:
            self.send_raw(GARBAGE + b"\n")
        else:
            self.send(message)

    def execute(self, plan: Plan) -> None:
        """Carry out what `behaviour.decide` planned for one request."""
        for event in plan.events:
            self.record(Entry(kind="event", extra=dict(event)))
        if plan.garbage:
            self.send_raw(GARBAGE + b"\n")
            return
        if plan.stall or plan.drop == "stall":
            return
        if plan.drop:  # "close" or "reset": a stdio server's connection is its process
            self.event("exit", reason=f"call-dropped-{plan.drop}")
            os._exit(0)
        if plan.barrier:  # waits on a thread of its own: the reader goes on reading
            waiter = threading.Thread(target=self.deliver_after_barrier, args=(plan,), daemon=True)
            waiter.start()
        elif plan.delay or (plan.progress and plan.progress_interval):
            # on a thread of its own: the reader goes on reading while the call works
            timer = threading.Timer(plan.delay, self.deliver, args=(plan,))
            timer.daemon = True
            timer.start()
        else:
            self.deliver(plan)

    def deliver_after_barrier(self, plan: Plan) -> None:
        # imported here: it needs `socket`, a tenth of every other start's imports
        from mcp_host_conformance.mocks import barrier

        assert plan.barrier is not None
        barrier.arrive_blocking(plan.barrier, self.spec.name)
        if plan.delay:
            threading.Event().wait(plan.delay)  # on this thread only: the plan's delay
        self.deliver(plan)

    def deliver(self, plan: Plan) -> None:
        if plan.flood_stderr:
            self.flood("tools/call", plan.flood_stderr)
        for note in plan.progress:
            if plan.progress_interval:
                threading.Event().wait(plan.progress_interval)
            self.send(note)
        if plan.reply is not None:
            self.send(plan.reply)
        if plan.tools_after is not None:
            self.send(_rpc.notification("notifications/tools/list_changed"))

    def serve(self) -> int:
        stdin = sys.stdin.buffer
        while True:
            line = stdin.readline(MAX_LINE_BYTES + 1)
            if not line:
                if self.spec.misbehaviour.linger:
                    self.event("lingering", reason="stdin-closed")
                    time.sleep(LINGER_SECONDS)  # until a signal ends it (bounded all the same)
                self.event("exit", reason="stdin-closed")
                return 0
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                size = len(line) + skip_line(stdin)
                self.refuse(line[:200], f"a line over {MAX_LINE_BYTES} bytes", size)
                continue
            self.handle_line(line)


def skip_line(stream: Any) -> int:
    """Read and drop the rest of an overlong line (bounded memory); the bytes dropped."""
    dropped = 0
    while True:
        piece = stream.readline(65536)
        dropped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return dropped


def daemonize(server: StdioServer) -> None:
    """Fork; the first process exits at once, the forked one goes on serving on the same
    pipes and in the same process group (STDIO-5), its pid journalled."""
    if os.fork() != 0:
        os._exit(0)
    server.event("daemonized", pid=os.getpid(), pgid=os.getpgid(0))


def spawn_child(server: StdioServer) -> None:
    """Start a child that stays in our process group and sleeps until killed (STDIO-5).

    It holds none of our pipes (a client waiting for EOF on our stdout must not wait for
    it), and it outlives us if nobody signals the group; `sleep` ends it after 5 minutes
    anyway, so a broken client's leftover does not linger for ever."""
    import shutil
    import subprocess

    sleep = shutil.which("sleep")
    command = [sleep, "300"] if sleep else [sys.executable, "-c", "import time; time.sleep(300)"]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
    )
    server.event("child-spawned", pid=child.pid, pgid=os.getpgid(child.pid))


def main(argv: list[str] | None = None) -> int:
    full_argv = list(sys.argv) if argv is None else list(argv)
    spec_path, journal_path, extra = parse_args(full_argv[1:])
    if journal_path:
        journal_path = os.path.abspath(journal_path)
    try:
        spec = load_spec(spec_path, checked=True) if spec_path else ServerSpec()
    except SpecError as exc:
        print(f"mcp_host_conformance.mocks.stdio_server: {exc}", file=sys.stderr)
        return 2
    server = StdioServer(spec, journal_path)
    server.record(
        Entry(
            kind="process",
            argv=full_argv,
            env=dict(os.environ),
            pid=os.getpid(),
            pgid=os.getpgid(0),
            extra={
                "cwd": os.getcwd(),
                "ppid": os.getppid(),
                "sid": os.getsid(0),
                "extra_args": extra,
            },
        )
    )

    def on_signal(signum: int, _frame: Any) -> None:
        server.event("exit", reason="signal", signal=signal.Signals(signum).name)
        raise SystemExit(128 + signum)

    bad = spec.misbehaviour
    for sig in (signal.SIGTERM, signal.SIGHUP):
        # An ignored SIGTERM stays ignored in the children it spawns (exec keeps it).
        ignored = sig == signal.SIGTERM and bad.ignore_sigterm
        signal.signal(sig, signal.SIG_IGN if ignored else on_signal)
    if bad.spawn_child:
        spawn_child(server)
    if bad.daemonize:
        daemonize(server)
    if bad.stderr_flood:  # before an exit at once too: what a crashing server writes
        server.flood("start", bad.stderr_flood)
    if bad.exit_at_once is not None:
        server.event("exit", reason="exit_at_once", code=bad.exit_at_once)
        return int(bad.exit_at_once)
    try:
        return server.serve()
    except KeyboardInterrupt:
        server.event("exit", reason="signal", signal="SIGINT")
        return 130


# ---- preparing one, and checking on it, from the test side ---------------------------------

_counter = itertools.count()


class _Healthy:
    def __init__(self, mock: StdioMock) -> None:
        self.mock = mock

    def __enter__(self) -> None:
        dump_spec(healthy(self.mock.spec), self.mock.spec_path)

    def __exit__(self, *exc: object) -> None:
        dump_spec(self.mock.spec, self.mock.spec_path)


class StdioMock:
    """A stdio mock ready to be spawned by a client: spec file, journal file, command."""

    def __init__(self, spec: ServerSpec, workdir: str | os.PathLike[str]) -> None:
        # checked (a wrong spec fails here, not in the child) and marked, so the mock model
        # finds this mock's tools (mocks.spec.with_markers)
        self.marker_token = new_marker_token()
        self.spec = spec = with_markers(spec, self.marker_token)
        workdir = os.path.abspath(os.fspath(workdir))
        os.makedirs(workdir, exist_ok=True)
        stem = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', spec.name)}-{os.getpid()}-{next(_counter)}"
        self.spec_path = os.path.join(workdir, f"{stem}.spec.json")
        self.journal_path = os.path.join(workdir, f"{stem}.journal.jsonl")
        dump_spec(spec, self.spec_path)
        self.journal = FileJournal(self.journal_path)
        # What the script sees as sys.argv (the journal records it) ...
        self.argv = [SCRIPT, "--spec", self.spec_path, "--journal", self.journal_path]
        # ... run without `site`: the mock needs only the standard library and this package,
        # and an environment's .pth hooks (an editable install's import finder: 30 ms) would
        # double the cost of each of the ~60 starts of a suite run.
        self.command = [sys.executable, "-S", *self.argv]

    def healthy(self) -> _Healthy:
        """`with mock.healthy():` it starts as a healthy server (`spec.healthy`) inside the
        block: a case adds it to a host that syncs at add, then it misbehaves as its spec says
        at every later start. (No contextlib: this module stays light.)"""
        return _Healthy(self)

    def process_entries(self) -> list[Entry]:
        """One entry per time the mock was started (argv, env, pid, pgid, cwd)."""
        return self.journal.entries(kind="process")

    def pids(self) -> list[int]:
        return [e.pid for e in self.process_entries() if e.pid is not None]

    def live_pids(self) -> list[int]:
        """Recorded pids still present, zombies included (started but not reaped)."""
        return [p for p in self.pids() if pid_alive(p)]


def process_state(pid: int) -> str:
    """ "gone", "zombie" (exited, not reaped by its parent) or "running" (any other state)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return "gone"
    except OSError:
        return "running"
    # The command name may hold spaces and parentheses: the state follows the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields and fields[0] == "X":  # dead, being removed
        return "gone"
    return "zombie" if fields and fields[0] == "Z" else "running"


def pid_alive(pid: int) -> bool:
    """True while the pid exists at all, zombies included: a zombie was never reaped."""
    return process_state(pid) != "gone"


def pids_in_group(pgid: int) -> list[int]:
    """Every process (zombies included) whose process group is `pgid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid):
            found.append(int(name))
    return found


if __name__ == "__main__":
    sys.exit(main())
