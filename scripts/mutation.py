#!/usr/bin/env python3
"""Mutation testing of the reference client's rule modules, with the conformance suite as the tests.

Usage (by hand, from the repository root; not run in CI):

    python scripts/mutation.py                       # all six rule modules
    python scripts/mutation.py --modules naming limits --max-children 3
    python scripts/mutation.py --report-only         # just the figures of the last run
    python scripts/mutation.py --survivors FILE      # also write every survivor's diff to FILE

It runs mutmut 3 (`pip install mutmut`); the configuration is the `[mutmut]` section of
setup.cfg: the modules to mutate (`only_mutate`), the test set (`conformance/`, run against
the in-process reference client; `tests/` is never the test set), no xdist inside a mutant
run. mutmut copies the project into `mutants/` (git-ignored) and remembers results there, so
a second run only retests what changed; delete `mutants/` to start over.

Strategy: mutmut already picks, for each mutant, only the conformance cases that executed
the mutated function in its first (stats) run, so a mutant of `naming.exposed_names` runs
the EXP/discovery cases and not the 1 s timeout cases of RETRY; that is the per-module case
selection, and it is exact rather than guessed from requirement areas. This script only
restricts the run to the chosen modules and turns `mutmut results` into a table per module
(killed, timeout, survived, score) plus the survivors' diffs, for docs/mutation.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULES = ("naming", "limits", "offering", "confirmation", "results", "redaction")
KILLED = (
    "killed",
    "timeout",
)  # a mutant that hangs the suite is caught (the harness bounds every call)


def parse_results(text: str) -> dict[str, str]:
    """`mutmut results --all true` output -> mutant name -> status."""
    found = {}
    for line in text.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name.startswith("reference_client."):
            found[name] = status.strip()
    return found


def module_of(mutant: str) -> str:
    # mcp_host_conformance.reference_client.naming.x_exposed_names__mutmut_3 -> naming
    return mutant.split(".")[1]


def score_table(statuses: dict[str, str], modules: Iterable[str]) -> tuple[str, float]:
    """A Markdown table per module and the overall score
    (killed + timeout over the mutants tested)."""
    rows = [
        "| module | mutants | killed | timeout | survived | other | score |",
        "|---|---|---|---|---|---|---|",
    ]
    total = Counter()
    for module in modules:
        counts = Counter(s for m, s in statuses.items() if module_of(m) == module)
        total.update(counts)
        rows.append(_row(module, counts))
    rows.append(_row("**all**", total))
    return "\n".join(rows), _score(total)


def _score(counts: Counter) -> float:
    tested = sum(n for s, n in counts.items() if s in KILLED or s == "survived")
    return 100.0 * sum(counts[s] for s in KILLED) / tested if tested else 0.0


def _row(name: str, counts: Counter) -> str:
    other = sum(n for s, n in counts.items() if s not in (*KILLED, "survived"))
    return (
        f"| {name} | {sum(counts.values())} | {counts['killed']} | {counts['timeout']} | "
        f"{counts['survived']} | {other} | {_score(counts):.1f} % |"
    )


def _mutmut(*args: str, capture: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["mutmut", *args], cwd=REPO, text=True, capture_output=capture, check=False
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="+", choices=MODULES, default=list(MODULES))
    parser.add_argument(
        "--max-children", type=int, default=2, help="mutants run in parallel (default 2)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="do not run; report the last results"
    )
    parser.add_argument(
        "--survivors", metavar="FILE", help="write each surviving mutant's diff to FILE"
    )
    args = parser.parse_args(argv)

    if not args.report_only:
        patterns = [f"reference_client.{m}.*" for m in args.modules]
        run = _mutmut("run", "--max-children", str(args.max_children), *patterns)
        if run.returncode != 0:
            print(f"mutation: mutmut run exited {run.returncode}", file=sys.stderr)
            return run.returncode
    listed = _mutmut("results", "--all", "true", capture=True)
    statuses = {
        m: s for m, s in parse_results(listed.stdout).items() if module_of(m) in args.modules
    }
    table, score = score_table(statuses, args.modules)
    print(table)
    survivors = sorted(m for m, s in statuses.items() if s == "survived")
    print(f"\nscore {score:.1f} % ({len(survivors)} survived)")
    for name in survivors:
        print(f"  survived: {name}")
    if args.survivors:
        diffs = [_mutmut("show", name, capture=True).stdout for name in survivors]
        Path(args.survivors).write_text("\n".join(diffs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
