#!/usr/bin/env python3
"""Run the whole conformance suite N times and show flaky cases and anything left behind.

Usage: python scripts/flake_check.py [--runs 20] [--workers N] [--client NAME] [-- PYTEST ARGS]

Each run is `pytest --pyargs mcp_host_conformance.conformance --mcphc-workers WORKERS -p randomly
--randomly-seed SEED --mcphc-report-json FILE` in a subprocess (seed printed, so a run can be
replayed). After each run:

- processes: this script makes itself a *child subreaper* (Linux prctl), so every process the
  run started and did not reap (a mock stdio server, a driver, a `sleep` grandchild, even
  after a double fork or setsid) is re-parented to this script instead of init. Any live
  process in that tree once the run has ended is a leftover. Watching "new processes of this
  user" instead would count other people's test runs on the same machine.
- listening ports: new LISTEN sockets on loopback (/proc/net/tcp, tcp6) whose owning process
  is in that tree. New listeners owned by other processes are counted but not blamed.
- temp dirs: the run gets a private TMPDIR, so whatever is still in it afterwards (the
  harness's `mcphc-*` case roots, `mock-tls-*`, `mocks-*`, or anything else) is a leftover;
  pytest's own `pytest-of-*` basetemp is ignored (pytest keeps the last three on purpose).

Outcomes come from the JSON report (docs/report-schema.md): a case whose outcome is not the
same in every run that produced a report (or that is missing from one) is flaky; a run that
produced no report at all (an internal error, a collection error) counts as a broken run
and its output is kept in $TMPDIR/flake-check-run-N-seed-S.log. Leftovers are reported, then
killed/removed so the next run starts clean. Exit status 0 only when no case is flaky, no
run left anything behind and every run ended within its bound; 1 otherwise.

Strategy: the checks are pure functions over snapshots (`flaky_cases`, `new_listeners`,
`leftover_entries`) so they can be tested without running the suite; `main` only starts
processes and prints.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from mcp_host_conformance.harness.cli import default_workers  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36
SETTLE = (
    3.0  # seconds a process or socket gets to go away after the run ended (killed ones exit async)
)
KEPT_TEMP = ("pytest-of-",)  # pytest's basetemp, kept on purpose


# ---- pure checks -------------------------------------------------------------------------------


def flaky_cases(runs: Sequence[Mapping[str, str]]) -> dict[str, list[str]]:
    """Case ID -> its outcome in each run ("missing" when absent),
    for cases whose outcome varies."""
    every = sorted({cid for run in runs for cid in run})
    flaky = {}
    for cid in every:
        seen = [run.get(cid, "missing") for run in runs]
        if len(set(seen)) > 1:
            flaky[cid] = seen
    return flaky


def listening_sockets(tables: Iterable[str]) -> dict[str, str]:
    """Inode -> "address:port" of every LISTEN socket in /proc/net/tcp-style text."""
    found = {}
    for text in tables:
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A = TCP_LISTEN
                continue
            address, port = fields[1].split(":")
            found[fields[9]] = f"{_address(address)}:{int(port, 16)}"
    return found


def _address(hex_address: str) -> str:
    if len(hex_address) == 8:  # IPv4, little-endian
        return ".".join(str(int(hex_address[i : i + 2], 16)) for i in (6, 4, 2, 0))
    return "::1" if hex_address == "00000000000000000000000001000000" else f"[{hex_address}]"


def is_loopback_or_any(address: str) -> bool:
    host = address.rsplit(":", 1)[0]
    return host.startswith("127.") or host in ("0.0.0.0", "::1") or set(host.strip("[]")) <= {"0"}


def new_listeners(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    return {
        inode: addr
        for inode, addr in after.items()
        if inode not in before and is_loopback_or_any(addr)
    }


def leftover_entries(names: Iterable[str]) -> list[str]:
    """Entries of the run's private TMPDIR that count as left behind."""
    return sorted(n for n in names if not n.startswith(KEPT_TEMP))


# ---- /proc snapshots -----------------------------------------------------------------------------


def _proc_stat(pid: int) -> tuple[str, int, str] | None:
    """(state, ppid, command line) of a process, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return None
    # comm may contain spaces or parentheses: the fields after the last ")" are fixed.
    rest = stat[stat.rindex(")") + 2 :].split()
    return rest[0], int(rest[1]), cmdline.strip() or stat[stat.index("(") : stat.rindex(")") + 1]


def processes() -> dict[int, tuple[str, int, str]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _proc_stat(int(entry))
            if info is not None:
                found[int(entry)] = info
    return found


def descendants(root: int, table: Mapping[int, tuple[str, int, str]]) -> dict[int, str]:
    """Live (non-zombie) descendants of `root`: pid -> command line."""
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        state, _, cmdline = table[pid]
        if state != "Z":
            found[pid] = cmdline
        todo += children.get(pid, [])
    return found


def _socket_owners(inodes: Iterable[str]) -> dict[str, set[int]]:
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    owners: dict[str, set[int]] = {inode: set() for inode in wanted.values()}
    if not wanted:
        return owners
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{entry}/fd/{fd}")
            except OSError:
                continue
            if target in wanted:
                owners[wanted[target]].add(int(entry))
    return owners


def _listeners_now() -> dict[str, str]:
    texts = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            texts.append(Path(name).read_text())
        except OSError:
            pass
    return listening_sockets(texts)


def _reap_zombies() -> None:
    # Orphans re-parented to us that already exited: reap them so they do not pile up.
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# ---- one run -------------------------------------------------------------------------------------


@dataclass
class Run:
    number: int
    seed: int
    seconds: float = 0.0
    exit_status: int | None = None
    outcomes: dict[str, str] = field(default_factory=dict)
    processes: dict[int, str] = field(default_factory=dict)
    ports: dict[str, str] = field(default_factory=dict)
    foreign_ports: int = 0
    temp: list[str] = field(default_factory=list)
    timed_out: bool = False
    log: Path | None = None  # the output of a run that produced no report

    @property
    def leftovers(self) -> int:
        return len(self.processes) + len(self.ports) + len(self.temp)


def run_once(number: int, args: argparse.Namespace, extra: Sequence[str]) -> Run:
    run = Run(number, seed=random.randrange(1, 2**31))
    private = Path(tempfile.mkdtemp(prefix=f"flake-check-{number}-"))
    report = Path(tempfile.mkdtemp(prefix="flake-check-report-")) / "report.json"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "mcp_host_conformance.conformance",
        "-q",
        "--mcphc-workers",
        str(args.workers),
        "-p",
        "randomly",
        f"--randomly-seed={run.seed}",
        "--mcphc-report-json",
        str(report),
        "-p",
        "no:cacheprovider",
    ]
    if args.client:
        command += ["--mcphc-client", args.client]
    command += list(extra)
    env = dict(os.environ, TMPDIR=str(private))
    listeners_before = _listeners_now()
    started = time.monotonic()
    child = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    try:
        output, _ = child.communicate(timeout=args.run_timeout)
    except subprocess.TimeoutExpired:
        run.timed_out = True
        os.killpg(child.pid, signal.SIGKILL)
        output, _ = child.communicate()
    run.seconds = time.monotonic() - started
    run.exit_status = child.returncode
    if report.exists():
        data = json.loads(report.read_text())
        run.outcomes = {case["id"]: case["outcome"] for case in data["cases"]}
    else:
        # No report: the run broke (collection error, internal error, timeout). Keep its
        # output for diagnosis; its cases are not counted as flaky one by one.
        run.log = Path(tempfile.gettempdir()) / f"flake-check-run-{number}-seed-{run.seed}.log"
        run.log.write_text(output)
    shutil.rmtree(report.parent, ignore_errors=True)

    # Leftovers: give processes killed at teardown a bounded moment to go away.
    deadline = time.monotonic() + SETTLE
    while True:
        _reap_zombies()
        table = processes()
        mine = descendants(os.getpid(), table)
        fresh = new_listeners(listeners_before, _listeners_now())
        owners = _socket_owners(fresh)
        ours = {i: a for i, a in fresh.items() if owners[i] & set(mine)}
        temp = leftover_entries(os.listdir(private))
        if (not mine and not ours and not temp) or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # polling /proc: there is nothing to wait on for another process's exit
    run.processes, run.ports, run.temp = mine, ours, temp
    run.foreign_ports = len(fresh) - len(ours)
    for pid in mine:  # started by this run (our subtree): clean up before the next one
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(private, ignore_errors=True)
    return run


# ---- output --------------------------------------------------------------------------------------


def _counts(outcomes: Mapping[str, str]) -> str:
    tally: dict[str, int] = {}
    for outcome in outcomes.values():
        tally[outcome] = tally.get(outcome, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(tally.items()))


def print_run(run: Run) -> None:
    status = "TIMEOUT" if run.timed_out else str(run.exit_status)
    print(
        f"{run.number:>3}  seed {run.seed:<10}  {run.seconds:6.1f} s  exit {status:<7}  "
        f"{len(run.outcomes):>3} cases ({_counts(run.outcomes)})  leftovers {run.leftovers}",
        flush=True,
    )
    for pid, cmdline in sorted(run.processes.items()):
        print(f"       leftover process {pid}: {cmdline[:160]}")
    for inode, address in sorted(run.ports.items()):
        print(f"       leftover listening socket {address} (inode {inode})")
    for name in run.temp:
        print(f"       leftover temp entry {name}")
    if run.log:
        print(f"       no report: the run broke; its output is in {run.log}")


def summary(runs: Sequence[Run]) -> tuple[str, bool]:
    broken = [r for r in runs if not r.outcomes]
    flaky = flaky_cases([r.outcomes for r in runs if r.outcomes])
    leftovers = sum(r.leftovers for r in runs)
    timeouts = sum(r.timed_out for r in runs)
    total = sum(r.seconds for r in runs)
    lines = [
        "",
        f"runs: {len(runs)}   total {total:.0f} s   mean {total / max(len(runs), 1):.1f} s/run   "
        f"cases per run: {sorted({len(r.outcomes) for r in runs})}",
        f"flaky cases: {len(flaky)}   leftovers: {leftovers} "
        f"(processes {sum(len(r.processes) for r in runs)}, listening sockets "
        f"{sum(len(r.ports) for r in runs)}, temp entries {sum(len(r.temp) for r in runs)})   "
        f"runs over the bound: {timeouts}   broken runs (no report): {len(broken)}   "
        "(new listeners owned by other processes, not blamed: "
        f"{sum(r.foreign_ports for r in runs)})",
    ]
    for cid, seen in flaky.items():
        lines.append(f"  FLAKY {cid}: " + " ".join(f"{i + 1}:{o}" for i, o in enumerate(seen)))
    ok = not flaky and not leftovers and not timeouts and not broken
    lines.append("flake check PASSED" if ok else "flake check FAILED")
    return "\n".join(lines), ok


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="worker processes (default: as `mcp-host-conformance run`, twice the CPUs)",
    )
    parser.add_argument("--client", help="client under test (default: the reference client)")
    parser.add_argument(
        "--run-timeout", type=float, default=600.0, help="bound on one run, seconds"
    )
    args = parser.parse_args(argv)

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(
            "flake_check: cannot become a child subreaper; leftover processes may be missed",
            file=sys.stderr,
        )
    print(
        f"flake check: {args.runs} runs of the conformance suite, --workers {args.workers}, "
        "random order"
    )
    runs = []
    for number in range(1, args.runs + 1):
        runs.append(run_once(number, args, extra))
        print_run(runs[-1])
    text, ok = summary(runs)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
