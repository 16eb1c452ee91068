"""Benchmark of the conformance suite (a script, not a test): wall time, its floor, per-case
overhead, the same at load.

Strategy: what a user and CI pay is wall time, so each figure is one real
`mcp-host-conformance run` in a subprocess, as a user runs it: against the reference client
in-process (`--client reference`) and through the driver (`--client-cmd "mcp-reference-host
driver"`), with the default workers (twice the CPUs: the cases mostly wait) and `--serial`.
Beside each figure its floors: the longest case (no schedule ends before it), the sum of
the cases bound by a deliberate wait (a client timeout given to the host, a grace period),
the waits a serial run cannot avoid, and the CPU time of the run and everything it started
divided by the cores (no schedule ends before that either). The per-case overhead is
measured with no-op cases run N times (a bare case, a client start and stop, one turn with
one approved call), as medians.

The machine is shared and noisy: `--loaded` repeats every run with CPU burners running (two
per core by default, `scripts/cpu_load.py`) and gives loaded / idle ratios from the same
invocation, which move much less than the figures themselves. Every run's case outcomes are
compared: the default, serial and driver runs must give the same result for every case.
Targets (issue 13): default run in-process under 8 s, through the driver under 10 s, at
most twice that under load. `--update-docs` writes the figures into docs/benchmarks.md.

The runs may write bytecode (PYTHONDONTWRITEBYTECODE is cleared, as tox does): otherwise
pytest cannot cache its assertion rewrites and every process pays about a second of CPU
re-rewriting hypothesis and this project, which is not what CI pays.

    python benchmarks/bench_suite.py [--repeat 1] [-n 20] [--only inprocess,driver]
                                     [--loaded] [--per-core 2] [--session-each] [--update-docs]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import xml.etree.ElementTree as ET
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from cpu_load import burning, cores  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
TARGETS_S = {"inprocess": 8.0, "driver": 10.0}  # issue 13: the default run, low load
LOADED_FACTOR = 2.0  # ... and at most this much longer under load
DRIVER_CMD = "mcp-reference-host driver"
CLIENTS = {
    "inprocess": ["--client", "reference"],
    "driver": ["--client-cmd", DRIVER_CMD],
}
MODES = {"default": [], "serial": ["--serial"]}
# Cases whose duration is mostly a timeout given to the client (connect 1.5 s, call 1.0 s)
# or a grace period: their floor is the timeout itself, whatever the harness does.
TIMEOUT_BOUND_MARKERS = ("timeout", "stalling", "failed_servers", "in_parallel")

OVERHEAD_CASES = textwrap.dedent(
    '''
    """No-op cases for the per-case overhead (written by benchmarks/bench_suite.py)."""
    import pytest

    from mcp_host_conformance.mocks.model_script import Step
    from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

    N = range({n})


    @pytest.mark.parametrize("i", N)
    def test_bare_case(case, i):
        """Fixtures only: temp dirs, the model mock, teardown."""


    @pytest.mark.parametrize("i", N)
    def test_start_stop(host, i):
        """A client with no server: start, stop."""
        host.start().stop()


    @pytest.mark.parametrize("i", N)
    def test_one_turn(host, http_mock, model, i):
        """One HTTP server, one approved call, two model requests."""
        docs = http_mock(
            ServerSpec(name="docs", tools=[Tool("query", "q", reply=Reply.text("ok"))])
        )
        host.add_http("docs", docs)
        running = host.start()
        model.script(
            [Step.call(server="docs", tool="query", arguments={{"q": "x"}}), Step.text("ok")]
        )
        turn = running.ask("look it up")
        assert [c.status for c in turn.calls] == ["completed"], turn.calls
        running.stop()
    '''
)


@dataclass
class Run:
    client: str
    mode: str
    loaded: bool
    wall: float
    status: int
    outcomes: dict[str, int] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)  # case id -> seconds
    results: dict[str, str] = field(default_factory=dict)  # case id -> outcome
    cpu: float = 0.0  # CPU seconds of the run and everything it started

    @property
    def cpu_floor(self) -> float:
        """No schedule on this machine's cores ends before its CPU time is spent."""
        return self.cpu / cores()

    @property
    def label(self) -> str:
        return f"{self.client}, {self.mode}" + (", loaded" if self.loaded else "")

    @property
    def busy(self) -> float:
        return sum(self.durations.values())

    @property
    def longest(self) -> float:
        return max(self.durations.values(), default=0.0)

    @property
    def timeout_bound(self) -> float:
        return sum(
            d for c, d in self.durations.items() if any(m in c for m in TIMEOUT_BOUND_MARKERS)
        )


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}


def _pytest(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, int, str]:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env={**_env(), **(env or {})},
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - began, done.returncode, done.stdout + done.stderr


def suite_run(client: str, mode: str, loaded: bool, scratch: Path) -> Run:
    report = scratch / "report.json"
    argv = [
        sys.executable, "-m", "mcp_host_conformance.harness.cli", "run",
        *CLIENTS[client], *MODES[mode], "--report-json", str(report),
        "--", "-p", "no:cacheprovider",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=scratch, env=_env(), capture_output=True, text=True)
    run = Run(client, mode, loaded, time.perf_counter() - began, done.returncode)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        sys.stderr.write((done.stdout + done.stderr)[-3000:])
        return run
    run.outcomes = dict(data["summary"]["cases"])
    run.durations = {c["id"]: float(c.get("duration") or 0.0) for c in data["cases"]}
    run.results = {c["id"]: str(c["outcome"]) for c in data["cases"]}
    if done.returncode != 0:
        sys.stderr.write(f"-- {run.label}: exit {done.returncode}\n{done.stdout[-3000:]}\n")
    return run


def overhead(client: str, n: int, scratch: Path) -> dict[str, float]:
    """Median seconds per no-op case (setup + call + teardown, from JUnit XML)."""
    folder = scratch / f"overhead-{client}"
    folder.mkdir()
    (folder / "test_overhead.py").write_text(OVERHEAD_CASES.format(n=n))
    junit = folder / "junit.xml"
    args = [
        str(folder / "test_overhead.py"),
        *CLIENTS[client],
        "-p",
        "no:randomly",
        "-p",
        "no:xdist",
    ]
    _, status, output = _pytest([*args, "--junitxml", str(junit), "--rootdir", str(folder)], folder)
    if status != 0:
        sys.stderr.write(output[-3000:])
    if not junit.exists():  # the run ended before any case (an uninstalled driver command)
        raise SystemExit(f"bench_suite: the {client} overhead run reported no case (above)")
    times: dict[str, list[float]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "").split("[")[0]
        times.setdefault(name, []).append(float(case.get("time") or 0.0))
    return {name: statistics.median(values) for name, values in times.items()}


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{cores()} cores, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, load average {load}"
    )


LOOP_ADDITIONS = 3_000_000


def loop_speed() -> float:
    """Milliseconds a fixed pure-Python loop takes here, best of three: the machine's speed
    moves by up to 2x within a day (a shared host), and every figure moves with it."""
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        total = 0
        for i in range(LOOP_ADDITIONS):
            total += i
        best = min(best, time.process_time() - began)
    return best * 1000


def cpu_ticks() -> tuple[int, int]:
    """(all, stolen) CPU ticks since boot from /proc/stat ((0, 0) where there is none)."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return sum(fields[:8]), fields[7] if len(fields) > 7 else 0


def stolen_share(before: tuple[int, int], after: tuple[int, int]) -> str:
    total, stolen = after[0] - before[0], after[1] - before[1]
    return f"{100 * stolen / total:.1f}%" if total > 0 else "unknown"


def verdict(run: Run, idle: dict[tuple[str, str], Run]) -> str:
    if run.mode != "default":
        return ""
    target = TARGETS_S[run.client]
    if run.loaded:
        base = idle.get((run.client, run.mode))
        if base is None or not base.wall:
            return ""
        ratio = run.wall / base.wall
        ok = ratio <= LOADED_FACTOR
        return f"{ratio:.2f}x idle: {'meets' if ok else 'OVER'} the {LOADED_FACTOR:g}x target"
    return f"{'meets' if run.wall < target else 'OVER'} the {target:g} s target"


def differences(runs: list[Run]) -> list[str]:
    """Cases whose outcome is not the same in every run that has a report."""
    reported = [r for r in runs if r.results]
    cases = sorted({c for r in reported for c in r.results})
    lines = []
    for case in cases:
        seen = {r.label: r.results.get(case, "absent") for r in reported}
        if len(set(seen.values())) > 1:
            lines.append(f"- {case}: " + "; ".join(f"{k}: {v}" for k, v in seen.items()))
    return lines


def render(
    runs: list[Run],
    costs: dict[str, dict[str, float]],
    started: str,
    load_before: str,
    burn: str,
    speed: str = "",
) -> str:
    idle = {(r.client, r.mode): r for r in runs if not r.loaded}
    lines = [
        f"Measured {started} on {load_before} (start of the run){burn}.",
        *([speed] if speed else []),
        "",
        "| run | wall | target | floor: longest case | floor: deliberate waits "
        "| floor: CPU / cores | sum of case durations | cases |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for run in runs:
        cases = (
            ", ".join(f"{v} {k}" for k, v in sorted(run.outcomes.items()))
            or f"no report (exit {run.status})"
        )
        lines.append(
            f"| {run.label} | {run.wall:.1f} s | {verdict(run, idle)} | {run.longest:.1f} s "
            f"| {run.timeout_bound:.1f} s | {run.cpu_floor:.1f} s ({run.cpu:.1f} s CPU) "
            f"| {run.busy:.1f} s | {cases} |"
        )
    ratios = []
    for loaded in (False, True):
        suffix = ", loaded" if loaded else ""
        by = {(r.client, r.mode): r for r in runs if r.loaded == loaded}
        for client in CLIENTS:
            a, b = by.get((client, "serial")), by.get((client, "default"))
            if a and b:
                ratios.append(f"{client} default / serial{suffix}: {b.wall / a.wall:.2f}")
        a, b = by.get(("inprocess", "default")), by.get(("driver", "default"))
        if a and b:
            ratios.append(f"driver / in-process (default{suffix}): {b.wall / a.wall:.2f}")
    if ratios:
        lines += ["", "Ratios within this run: " + "; ".join(ratios) + "."]
    diff = differences(runs)
    lines += [
        "",
        "Case outcomes identical in every run above."
        if not diff
        else "Case outcomes that differ between the runs:",
    ]
    if diff:
        lines += ["", *diff]
    if costs:
        lines += ["", "Per-case overhead (median of the no-op cases, setup + call + teardown):", ""]
        lines += [
            "| client | fixtures only | start + stop | one turn, one call |",
            "|---|---:|---:|---:|",
        ]
        for client, cost in costs.items():
            cells = [
                f"{cost.get(k, float('nan')) * 1000:.0f} ms"
                for k in ("test_bare_case", "test_start_stop", "test_one_turn")
            ]
            lines.append(f"| {client} | " + " | ".join(cells) + " |")
    serial = [r for r in runs if r.mode == "serial" and not r.loaded and r.durations]
    if serial:
        top = sorted(serial[0].durations.items(), key=lambda kv: -kv[1])[:8]
        lines += ["", f"Slowest cases ({serial[0].label}):", ""]
        lines += [f"- {d:.2f} s {cid}" for cid, d in top]
    return "\n".join(lines)


def update_docs(figures: str) -> None:
    begin, end = "<!-- bench_suite:begin -->", "<!-- bench_suite:end -->"
    text = DOC.read_text() if DOC.exists() else f"# Benchmarks\n\n{begin}\n{end}\n"
    if begin not in text:
        text += f"\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    DOC.write_text(f"{head}{begin}\n{figures}\n{end}{tail}")


def measure(
    clients: list[str],
    repeat: int,
    loaded: bool,
    burners: int,
    scratch: Path,
    session_each: bool = False,
) -> list[Run]:
    runs: list[Run] = []
    with burning(burners, session_each=session_each) if loaded else nullcontext():
        for client in clients:
            for mode in MODES:
                best: Run | None = None
                for attempt in range(repeat):
                    sub = scratch / f"{client}-{mode}-{'loaded' if loaded else 'idle'}-{attempt}"
                    sub.mkdir()
                    run = suite_run(client, mode, loaded, sub)
                    print(f"{run.label}: {run.wall:.1f} s (exit {run.status})", flush=True)
                    if best is None or (run.status, run.wall) < (best.status, best.wall):
                        best = run
                assert best is not None
                runs.append(best)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=1, help="full runs per configuration (the best is kept)"
    )
    parser.add_argument(
        "-n", dest="n", type=int, default=20, help="no-op cases of each kind for the overhead"
    )
    parser.add_argument("--only", default="inprocess,driver", help="clients: inprocess,driver")
    parser.add_argument(
        "--loaded", action="store_true", help="repeat every run with CPU burners running"
    )
    parser.add_argument("--per-core", type=int, default=2, help="burners per core (--loaded)")
    parser.add_argument(
        "--session-each",
        action="store_true",
        help="each burner in a session of its own (--loaded; scripts/cpu_load.py)",
    )
    parser.add_argument(
        "--update-docs", action="store_true", help=f"write the figures into {DOC.relative_to(ROOT)}"
    )
    args = parser.parse_args(argv)
    clients = [c for c in args.only.split(",") if c]
    unknown = set(clients) - set(CLIENTS)
    if unknown:
        parser.error(f"unknown client(s): {', '.join(sorted(unknown))}")
    started = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    load_before = machine()
    speed_before = loop_speed()
    print(f"machine: {load_before}; fixed loop {speed_before:.0f} ms", flush=True)

    costs: dict[str, dict[str, float]] = {}
    burners = args.per_core * cores()
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        scratch = Path(tmp)
        for client in clients:
            costs[client] = overhead(client, args.n, scratch)
            print(
                f"overhead {client}: "
                + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in costs[client].items()),
                flush=True,
            )
        ticks = cpu_ticks()
        runs = measure(clients, args.repeat, False, burners, scratch)
        stolen = stolen_share(ticks, cpu_ticks())
        speed = (
            f"Machine speed: a fixed Python loop ({LOOP_ADDITIONS:,} additions, best of 3) took "
            f"{speed_before:.0f} ms before the runs and {loop_speed():.0f} ms after the idle ones "
            f"(compare figures only at similar speeds); the hypervisor took {stolen} of the CPU "
            "during the idle runs."
        )
        burn = ""
        if args.loaded:
            runs += measure(clients, args.repeat, True, burners, scratch, args.session_each)
            how = "a session each" if args.session_each else "in one session"
            burn = (
                f"; loaded runs with {burners} CPU burners ({how}), load average then {machine()}"
            )
    figures = render(runs, costs, started, load_before, burn, speed)
    print()
    print(figures)
    if args.update_docs:
        update_docs(figures)
        print(f"\nwritten to {DOC}")
    ok = all(r.status == 0 for r in runs) and not differences(runs)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
