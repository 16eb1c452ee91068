"""The self-test's suite runs, forked from a process that has imported their dependencies.

Why: a suite run started as a new interpreter (`sandbox -- python -m pytest ...`) spends
about a second of CPU before its first case: the sandbox's own interpreter, then pytest,
hypothesis and the reference client's imports (httpx, httpcore, jsonschema...). The
self-test runs the suite ~180 times, so that second was ~7% of its CPU. Here a fork server
(a process started once, with PRELOAD imported: everything but the reference client, which
a run imports itself, after its broken client's patches) forks a child per run: measured, a
one-case run against a broken client 1.0 s of CPU forked against 1.9 s as a new
interpreter.

What a forked run keeps from a run in a new interpreter, and how:
- its own network namespace: the child seals itself (`sandbox.seal`, the name server on a
  thread, as `mcp-host-conformance run` does) before pytest starts; the fork server runs
  no thread, which sealing needs;
- its own working directory, environment (replaced, not merged), output (stdout and stderr
  to one file), stdin (/dev/null) and SIGCHLD disposition (the server's children are reaped
  by the kernel; a run's own are waited for as usual);
- the order of its own imports: PRELOAD brings in no module pytest rewrites in a run, nor
  the reference client or the zoo (NOT_PRELOADED says why; `preloaded_too_early` checks it,
  in a test);
- its exit: `atexit` handlers run (the run's temp root is removed by one), then the child
  ends with pytest's exit status, which it sends to the caller first (it is not the
  caller's child).
What differs: every forked run has the fork server's string hash seed (a new interpreter
drew its own), and a collector that runs less often (GC_THRESHOLDS). Not multiprocessing's
forkserver: it runs the caller's `__main__` again in every child.

`ZOO_FORK=0` runs each as a new interpreter instead (run_suite's other path).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path

ENABLED = os.environ.get("ZOO_FORK", "1") != "0"
# Imported once by the fork server: what every run imports before its first case, but the
# reference client (see NOT_PRELOADED).
PRELOAD = (
    "pytest",
    "hypothesis",
    "jsonschema",
    "httpx",
    "httpcore",
    "anyio",
    "h11",
    "certifi",
    "mcp_host_conformance.harness.cases.hostrun",
    "mcp_host_conformance.harness.plugin.fixtures",
    "mcp_host_conformance.harness.run.fresh_process",
    "mcp_host_conformance.harness.run.loader",
    "mcp_host_conformance.harness.cases.mock_contract",
    "mcp_host_conformance.harness.sandbox.network",
    "mcp_host_conformance.mocks.http_server",
    "mcp_host_conformance.mocks.stdio_server",
)
# What a run must import itself, so none of PRELOAD's imports may bring it in:
# - the modules pytest rewrites in a run (the plugins given with `-p`, the suite's conftest
#   and case modules): imported before its rewrite hook is installed, a module keeps plain
#   asserts (with a warning);
# - the reference client and the zoo: a broken client patches a seam (`M.f`) before the
#   reference client's other modules are imported, and one that binds the name itself
#   (`from M import f`) gets the patched one only then. A new interpreter imports them in
#   that order; a fork server that had imported the reference client made six broken
#   clients of `discovery.discover` pass (the engine kept the original).
NOT_PRELOADED = (
    "mcp_host_conformance.harness.plugin.hooks",
    "_hypothesis_pytestplugin",
    "mcp_host_conformance.conformance.",
    "mcp_host_conformance.reference_client",
    "mcp_host_conformance.zoo",
)
_ROOT = Path(__file__).resolve().parents[1]  # where `tests` is importable from
_LISTENER_FD_ENV = "ZOO_FORK_LISTENER_FD"
_ALIVE_FD_ENV = "ZOO_FORK_ALIVE_FD"
_SOCKET_ENV = "ZOO_FORK_SOCKET"
CRASHED = -1  # the exit status given for a run that ended without saying its own
# A run's collector, less often than CPython's (700, 10, 10): perf put the collector at ~9% of
# a suite run's CPU (its heap is pytest's, hypothesis's and the host's), most of it in young
# collections finding little. Only the self-test's runs: a user's run keeps the defaults, and
# a verdict that moved with them would show here as a broken client caught otherwise.
GC_THRESHOLDS = (20000, 20, 20)

_socket_path: str | None = None
_starting = threading.Lock()


def _server(env: dict[str, str]) -> str:
    """The fork server's socket path; the server is started on first use, with `env`, and
    ends when this process does (its end of a pipe closes)."""
    global _socket_path
    with _starting:
        if _socket_path is None:
            path = os.path.join(tempfile.mkdtemp(prefix="zoo-forks-"), "socket")
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(64)
            alive_read, alive_write = os.pipe()  # the write end stays here, never written
            subprocess.Popen(
                [sys.executable, "-c", "from tests.forked_runs import serve; serve()"],
                cwd=_ROOT,
                env={
                    **env,
                    _LISTENER_FD_ENV: str(listener.fileno()),
                    _ALIVE_FD_ENV: str(alive_read),
                    _SOCKET_ENV: path,
                },
                pass_fds=(listener.fileno(), alive_read),
                stdin=subprocess.DEVNULL,
            )
            listener.close()
            os.close(alive_read)
            os.set_inheritable(alive_write, False)
            _socket_path = path
        return _socket_path


def run(
    argv: Sequence[str], cwd: Path, env: dict[str, str], output: Path, bound: float
) -> int | None:
    """`pytest argv` in a child of the fork server: its exit status (CRASHED when it ended
    without one), or None when it did not end within `bound` seconds (it is killed)."""
    request = {"argv": list(argv), "cwd": str(cwd), "env": env, "output": str(output)}
    with _connected(env) as conn:
        conn.sendall(json.dumps(request).encode())
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(bound)
        pid = 0
        try:
            with conn.makefile("rb") as lines:
                pid = int(lines.readline() or 0)
                status = lines.readline() if pid else b""
        except TimeoutError:
            if pid:
                os.kill(pid, signal.SIGKILL)
            return None
    return int(status) if status.strip() else CRASHED


def _connected(env: dict[str, str]) -> socket.socket:
    """A connection to the fork server, started anew if the one there was has ended."""
    global _socket_path
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(_server(env))
    except OSError:
        with _starting:
            _socket_path = None
        conn.close()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(_server(env))
    return conn


def serve() -> None:
    """The fork server's loop (in its own interpreter): a child per connection."""
    listener = socket.socket(fileno=int(os.environ.pop(_LISTENER_FD_ENV)))
    alive = int(os.environ.pop(_ALIVE_FD_ENV))
    path = os.environ.pop(_SOCKET_ENV)
    for name in PRELOAD:
        __import__(name)
    from mcp_host_conformance.mocks.spec import prepare_checks

    prepare_checks()  # the mock specs' check compiled once, not in every run
    # What PRELOAD made lives as long as every child: out of the collector's reach, a child's
    # full collections skip it (and do not write to its pages, which stay shared).
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    while True:
        ready, _, _ = select.select([listener, alive], [], [])
        if alive in ready:  # the caller ended: so does the server, leaving nothing behind
            os.unlink(path)
            os.rmdir(os.path.dirname(path))
            os._exit(0)
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            os.close(alive)
            _child(conn)
        conn.close()


def _child(conn: socket.socket) -> None:
    status = 3
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        gc.set_threshold(*GC_THRESHOLDS)
        with conn.makefile("rb") as reader:
            request = json.loads(reader.read())
        conn.sendall(f"{os.getpid()}\n".encode())
        fd = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]  # as `python -m pytest` started there would have it
        os.environ.clear()
        os.environ.update(request["env"])
        from mcp_host_conformance.harness.sandbox.network import seal, serve_dns

        seal()
        serve_dns()
        import pytest

        status = int(pytest.main(request["argv"]))
    except BaseException:  # noqa: BLE001 - reported in the run's output, as a crash would be
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(f"{status}\n".encode())
        finally:
            os._exit(status)


def preloaded_too_early() -> list[str]:
    """The modules of NOT_PRELOADED that the fork server has imported before its first fork
    (should be none): this module and PRELOAD, in a new interpreter started as it is."""
    probe = (
        "import sys\n"
        "from tests.forked_runs import NOT_PRELOADED, PRELOAD\n"
        "for name in PRELOAD: __import__(name)\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith(NOT_PRELOADED)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.split()
