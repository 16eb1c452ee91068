"""The client under test started again in a process of its own (a restarted host).

Strategy: some rules hold "on every start" or "never", and a host can keep state in its
process that hides a break: names hashed with Python's per-process `hash()`, a
configuration change kept in memory, a counter that lives as long as the process. A case
checks such a rule across a process boundary with `restarted(host, config)`, a `Host` on the
same HOME, project and model whose adapter is a driver process started for it:

- an out-of-process client (`--client-cmd`): a new process of the same driver command;
- an in-process adapter (`--client`, an entry point, a zoo name): a driver process that
  loads the same client and serves it (`python -m mcp_host_conformance.harness.run.fresh_process
  [--client-path DIR]... CLIENT`, the run's client path included), as `mcp-reference-host
  driver` does for the reference host.

The new process gets a PYTHONHASHSEED of its own (this process's plus one when it is set,
else a fixed one), so string hashing differs from this process's. Sessions started through
it are stopped and the process ends when the `with` block ends.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from mcp_host_conformance.harness.run.loader import choose_client, load_adapter

if TYPE_CHECKING:
    import pytest

    from mcp_host_conformance.harness.cases.hostrun import Host
    from mcp_host_conformance.harness.contract.adapter import Adapter

# The case side (`restarted`, `fresh_process_command`) imports pytest and the harness when
# called; the served process (`main`) never needs them, and it starts once per restart.

__all__ = ["PER_CASE_ENV", "fresh_process_command", "main", "restarted", "shared"]

# Set (to anything but "" or "0"): every case gets a restarted host of its own instead of the
# run's shared one, so each process serves one case only: for tools that credit a process's
# work to the case it started in (the self-test's traced runs, tests/zoo_impact.py).
PER_CASE_ENV: Final = "MCP_HOST_CONFORMANCE_RESTART_PER_CASE"

_FALLBACK_SEED: Final = 104729  # any fixed seed: an unset one is random in this process


def _hash_seed() -> str:
    current = os.environ.get("PYTHONHASHSEED", "")
    if current.isdigit():
        return str((int(current) + 1) % 4294967296)
    return str(_FALLBACK_SEED)


def fresh_process_command(config: pytest.Config) -> str:
    """The driver command that runs this run's client in a new process (the client the run
    chose: `choose_client`, as the run's own adapter was)."""
    from mcp_host_conformance.harness.cases.items import option

    client, client_cmd = choose_client(
        option(config, "client", None), option(config, "client_cmd", None)
    )
    if client_cmd is not None:
        argv = shlex.split(client_cmd)
    else:
        assert client is not None
        folders: list[str] = option(config, "client_path", [])
        paths = [a for folder in folders for a in ("--client-path", os.path.abspath(folder))]
        argv = [
            sys.executable,
            "-m",
            "mcp_host_conformance.harness.run.fresh_process",
            *paths,
            client,
        ]
    return shlex.join(["env", f"PYTHONHASHSEED={_hash_seed()}", *argv])


def shared(config: pytest.Config, started: list[Adapter]) -> Adapter:
    """The run's shared restarted host (`started`: none yet, or the one), started on first
    use."""
    if started:
        return reused(started)
    return _start(config, started)


def own(config: pytest.Config, started: list[Adapter]) -> Adapter:
    """The running case's own restarted host (`started`: the case's, none yet or the one),
    started on first use: what it does is this case's alone, again when the case restarts
    twice (never `reused`)."""
    return started[0] if started else _start(config, started)


def _start(config: pytest.Config, started: list[Adapter]) -> Adapter:
    from mcp_host_conformance.harness.run.client_under_test import timeout_scale
    from mcp_host_conformance.harness.run.driver import DriverAdapter

    started.append(
        DriverAdapter(fresh_process_command(config), timeout_scale=timeout_scale(config))
    )
    return started[0]


def reused(started: list[Adapter]) -> Adapter:
    """The shared restarted host an earlier case started: what it does for this case is
    credited to that one by a tool that follows processes (a case calling this always runs
    in the self-test's impact selection)."""
    return started[0]


def per_case() -> bool:
    return os.environ.get(PER_CASE_ENV, "") not in ("", "0")


@contextmanager
def restarted(host: Host, config: pytest.Config) -> Iterator[Host]:
    """`host` (its HOME, project, model and records) driven through a new process."""
    from mcp_host_conformance.harness.run.client_under_test import timeout_scale
    from mcp_host_conformance.harness.run.driver import DriverAdapter

    adapter = DriverAdapter(fresh_process_command(config), timeout_scale=timeout_scale(config))
    fresh = dataclasses.replace(host, adapter=adapter)
    started = len(host.runs)
    try:
        yield fresh
    finally:
        try:
            for running in host.runs[started:]:
                try:
                    running.stop()
                except Exception:  # noqa: BLE001 - the case's own checks say what went wrong
                    pass
        finally:
            adapter.close()


def main(argv: list[str]) -> int:
    """Serve the client named by the last argument (as `--client` takes it) over the driver
    protocol, each `--client-path DIR` before it first on sys.path."""
    from mcp_host_conformance.harness.contract.driver_server import serve

    folders = argv[:-1][1::2]
    if not argv or argv[:-1][0::2] != ["--client-path"] * len(folders):
        print(
            "usage: python -m mcp_host_conformance.harness.run.fresh_process "
            "[--client-path DIR]... CLIENT",
            file=sys.stderr,
        )
        return 2
    for folder in reversed(folders):
        sys.path.insert(0, folder)
    return serve(load_adapter(client=argv[-1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
