#!/usr/bin/env python3
"""Load the machine with CPU burners: for benchmarks and flake checks under load.

Usage:
    python scripts/cpu_load.py [--per-core 2] [--session-each] -- COMMAND...  # COMMAND loaded
    python scripts/cpu_load.py [--per-core 2] [--session-each]                # burn until Ctrl-C

A burner is a process spinning in a loop at normal priority (`--per-core 2`: two per core,
which puts the load average near 2x the cores plus whatever the command itself runs: load 10
on 2 cores beside a busy command). The burners share one session and process group of their
own, like a neighbour's job: another terminal's `stress -c 4`, or a CI job beside yours.
They are killed when the command ends, when this script is interrupted, and when it is
terminated.

Why one session: where the kernel shares the CPU between sessions (autogroup,
/proc/sys/kernel/sched_autogroup_enabled, which applies to processes in the root cgroup: this
machine, not a systemd service or a container), a burner in a session of its own weighs as
much as the whole command: four of them left the command a fifth of the CPU, not the half
that two burners per core take elsewhere. `--session-each` gives each burner its own session
all the same: the harshest load this machine can make, for flake hunting.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mcp_host_conformance.harness.cli import usable_cpus as cores  # noqa: E402

SPIN = "while True: pass"
# A leader in a session of its own forks the burners (they share its session and process
# group), prints their pids, and on SIGTERM kills and reaps them. The handler is set before
# the first fork, so no SIGTERM can leave a burner spinning without its leader.
LEADER = """
import os, signal, sys
burners = []
def stop(*_):
    for pid in burners:
        os.kill(pid, signal.SIGKILL)
    for pid in burners:
        os.waitpid(pid, 0)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
for _ in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            pass
    burners.append(pid)
print(*burners, flush=True)
while True:
    signal.pause()
"""


@contextmanager
def burning(count: int, *, session_each: bool = False) -> Iterator[list[int]]:
    """`count` burners for the duration of the block (their pids): in one session of their
    own, or (`session_each`) each in its own."""
    if session_each:
        with _separate(count) as pids:
            yield pids
        return
    leader = subprocess.Popen(
        [sys.executable, "-S", "-c", LEADER, str(count)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert leader.stdout is not None
        yield [int(pid) for pid in leader.stdout.readline().split()]
    finally:
        leader.terminate()
        try:
            leader.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(leader.pid, signal.SIGKILL)
            leader.wait()
        if leader.stdout is not None:
            leader.stdout.close()


@contextmanager
def _separate(count: int) -> Iterator[list[int]]:
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(
                subprocess.Popen([sys.executable, "-S", "-c", SPIN], start_new_session=True)
            )
        yield [proc.pid for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-core", type=int, default=2, help="burners per core (default 2)")
    parser.add_argument(
        "--session-each",
        action="store_true",
        help="each burner in a session of its own (harsher where the kernel shares the CPU "
        "between sessions: autogroup)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND to run under load")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    signal.signal(signal.SIGTERM, _stop)
    count = args.per_core * cores()
    try:
        with burning(count, session_each=args.session_each):
            how = "a session each" if args.session_each else "one session"
            sys.stderr.write(f"cpu_load: {count} burners running ({how})\n")
            if not command:
                signal.pause()
                return 0
            return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
