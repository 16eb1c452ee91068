#!/usr/bin/env python3
"""Write how long each broken client's suite run took in a self-test, for the pool's order.

Usage:
    python scripts/zoo_durations.py BASETEMP [--out tests/zoo_durations.json]

BASETEMP is a self-test's `--basetemp` (or the `zoo0` folder in it): each client's run
leaves `seconds.txt` beside its report there (without it, the report's case durations are
summed). The self-test starts the runs longest first,
estimating each from the reference run's case durations; a client whose bug makes a case
wait out a bound (a start that never ends, a call timed with the connect timeout) takes far
longer than that, and started late it ends the self-test alone. With this file, a run starts
as early as the longer of its estimate and its measured seconds (tests/test_zoo.py,
`run_priority`). Only an order: a stale figure changes no verdict. Exit status 2 when
BASETEMP holds no run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECONDS_FILE = "seconds.txt"  # tests/test_zoo.py, SECONDS_FILE
SHARD_PREFIX = "shard-"  # tests/test_zoo.py, SHARD_DIR: a part of a traced run, not a client's


def measured(basetemp: Path) -> dict[str, float]:
    """Client name -> seconds, from every run folder under `basetemp` that has a figure."""
    found: dict[str, float] = {}
    # a run past its bound leaves its seconds but no report: the run this order is for
    runs = {p.parent for name in (SECONDS_FILE, "report.json") for p in basetemp.glob(f"**/{name}")}
    runs = {run for run in runs if not run.name.startswith(SHARD_PREFIX)}
    for run in sorted(runs):
        seconds = _seconds(run)
        if seconds is not None:
            found[run.name] = round(seconds, 1)
    return found


def _seconds(run: Path) -> float | None:
    try:
        return float((run / SECONDS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    try:
        cases = json.loads((run / "report.json").read_text(encoding="utf-8"))["cases"]
        return sum(float(case["duration"]) for case in cases)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("basetemp", type=Path, help="a self-test's --basetemp")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "tests" / "zoo_durations.json", help="where to write"
    )
    args = parser.parse_args(argv)
    from mcp_host_conformance.zoo import BROKEN

    seconds = {name: s for name, s in measured(args.basetemp).items() if name in BROKEN}
    if not seconds:
        print(f"{args.basetemp}: no broken client's run found", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(dict(sorted(seconds.items())), indent=1) + "\n")
    print(f"wrote {len(seconds)} clients' seconds to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
