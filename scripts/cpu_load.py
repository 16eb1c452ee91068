#!/usr/bin/env python3
"""Load the machine with CPU burners: for benchmarks and flake checks under load.

Usage:
    python scripts/cpu_load.py [--per-core 2] -- COMMAND...   # COMMAND under load, its status
    python scripts/cpu_load.py [--per-core 2]                 # burn until Ctrl-C

A burner is a process spinning in a loop at normal priority (`--per-core 2`: two per core,
which puts the load average near 2x the cores plus whatever the command itself runs). The
burners are in a process group of their own and are killed when the command ends, when this
script is interrupted, and when it is terminated.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mcp_host_conformance.harness.cli import usable_cpus as cores  # noqa: E402

SPIN = "while True: pass"


@contextmanager
def burning(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` burner processes for the duration of the block."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(
                subprocess.Popen([sys.executable, "-S", "-c", SPIN], start_new_session=True)
            )
        yield procs
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
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND to run under load")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    signal.signal(signal.SIGTERM, _stop)
    count = args.per_core * cores()
    try:
        with burning(count):
            sys.stderr.write(f"cpu_load: {count} burners running\n")
            if not command:
                signal.pause()
                return 0
            return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
