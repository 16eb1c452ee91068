#!/usr/bin/env python3
"""The explorer's generalization measure: the explorer alone (no targeted case) against
broken clients of the zoo, each in a run of its own; which it catches (a rule of the
client's own `fails` set broken, seen by a monitor) within the budget, and what it saw.

Usage: python scripts/explorer_zoo.py [--scenarios N] [--seed S] [--jobs J] [--sample K]
                                      [--json OUT] [NAME ...]

Prints a Markdown table (docs/explorer.md, "Generalization") and the catch rate. The
explorer must not be tuned to the zoo: this script only reads its verdicts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mcp_host_conformance.harness.plugin.hooks import EXPLORE_SHRINK

RUN_BOUND = 900  # seconds one client's exploration may take before it counts as a miss
# The shrinking every run gives its explorer (EXPLORE_SHRINK), not `explore`'s larger one: the
# measure is of the budget a run gives, and a catch is decided before any shrinking.


@dataclass
class Measured:
    name: str
    target: str
    fails: list[str]
    base: str
    found: list[str] = field(default_factory=list)  # rules the monitors saw broken
    seconds: float = 0.0
    error: str = ""
    scenario_files: int = 0  # shortest scenarios the exploration wrote

    @property
    def caught(self) -> bool:
        return bool(set(self.found) & set(self.fails))


def sample(names: list[str], every: int) -> list[str]:
    """Every `every`-th client in name order: a fixed sample across the zoo's rules."""
    return sorted(names)[::every] if every > 1 else sorted(names)


def measure(name: str, client, scenarios: int, seed: int, bound: float = RUN_BOUND) -> Measured:
    """`name`'s exploration (`client`, the zoo's entry) at `scenarios` from `seed`: what the
    monitors saw broken, as its JSON report says (tests/test_explorer_zoo.py reads it too)."""
    result = Measured(name, client.target, sorted(client.fails), client.base)
    with tempfile.TemporaryDirectory(prefix="mcphc-explorer-zoo-") as tmp:
        report = Path(tmp) / "report.json"
        command = [
            sys.executable, "-m", "mcp_host_conformance.harness.cli", "explore",
            "--client", name, "--scenarios", str(scenarios), "--seed", str(seed),
            "--out", str(Path(tmp) / "scenarios"), "--report-json", str(report),
            "--timeout-scale", "2", "--shrink", str(EXPLORE_SHRINK),
        ]  # fmt: skip
        began = time.monotonic()
        try:
            done = subprocess.run(
                command, cwd=tmp, capture_output=True, text=True, timeout=bound, check=False
            )
        except subprocess.TimeoutExpired:
            result.error = f"no verdict within {bound:g} s"
        else:
            if not report.exists():
                result.error = f"no report: {(done.stdout + done.stderr)[-2000:]}"
        result.scenario_files = len(list((Path(tmp) / "scenarios").glob("*.json")))
        result.seconds = round(time.monotonic() - began, 1)
        if report.exists():
            data = json.loads(report.read_text("utf-8"))
            result.found = sorted(
                {
                    str(f.get("rule"))
                    for case in data.get("cases", [])
                    for f in case.get("monitors", [])
                    if f.get("outcome") in ("failed", "warning", "expected_failure")
                }
            )
    return result


def table(results: list[Measured]) -> str:
    lines = [
        "| broken client | its rule | caught | rules the explorer saw broken |",
        "|---|---|---|---|",
    ]
    for r in sorted(results, key=lambda r: (r.target, r.name)):
        seen = ", ".join(r.found) or (r.error or "nothing")
        lines.append(f"| `{r.name}` | {r.target} | {'yes' if r.caught else 'no'} | {seen} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sample", type=int, default=1, help="every K-th client")
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("names", nargs="*")
    options = parser.parse_args(argv)

    import mcp_host_conformance.zoo as zoo

    names = options.names or sample(list(zoo.BROKEN), options.sample)
    with ThreadPoolExecutor(options.jobs) as pool:
        results = list(
            pool.map(lambda n: measure(n, zoo.BROKEN[n], options.scenarios, options.seed), names)
        )
    caught = sum(r.caught for r in results)
    print(table(results))
    print(
        f"caught {caught} of {len(results)} ({100 * caught / max(1, len(results)):.0f} %) "
        f"with {options.scenarios} scenarios each, seed {options.seed}"
    )
    # a rule seen broken outside a client's own set: a monitor blaming the wrong rule, or a
    # client that breaks more than its cases show; each is worth reading
    for r in results:
        outside = sorted(set(r.found) - set(r.fails))
        if outside:
            print(f"{r.name}: also charged {', '.join(outside)} (its own: {', '.join(r.fails)})")
    if options.json:
        Path(options.json).write_text(
            json.dumps([{**asdict(r), "caught": r.caught} for r in results], indent=1), "utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
