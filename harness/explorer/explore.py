"""An exploration: scenarios from a seed until the budget is spent, each violation shrunk
and written to a scenario file; and a replay of such a file.

The budget is a number of scenarios (the same verdict on every run of the same code) or,
for a host author at their desk, seconds. Each (rule, monitor) is shrunk once, the first
time it is seen; later scenarios that show it again only count.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.explorer.dimensions import Visits
from mcp_host_conformance.harness.explorer.generate import Generator
from mcp_host_conformance.harness.explorer.scenario import Scenario, to_json
from mcp_host_conformance.harness.explorer.shrink import shrink
from mcp_host_conformance.harness.explorer.world import Outcome, Violation, World
from mcp_host_conformance.harness.verdicts.outcomes import Finding

__all__ = ["Budget", "Exploration", "Found", "explore", "replay", "scenario_file_name"]

SHRINK_RUNS = 40


@dataclass(frozen=True)
class Budget:
    scenarios: int | None = None
    seconds: float | None = None
    shrink_runs: int = SHRINK_RUNS  # in all, over every violation found

    def spent(self, run: int, began: float) -> bool:
        if self.scenarios is not None and run >= self.scenarios:
            return True
        return self.seconds is not None and time.monotonic() - began >= self.seconds


@dataclass
class Found:
    """A violation: the first finding, the scenario it was first seen in, the shortest one
    that still shows it, and where that was written."""

    finding: Finding
    scenario_index: int
    original: Scenario
    shortest: Scenario
    shrink_runs: int
    seen: int = 1  # scenarios that showed it
    path: Path | None = None
    # what the monitor said of the shortest scenario (its servers, its calls), which the
    # scenario file shows; None: the shortest is the original
    shortest_finding: Finding | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.finding.rule, self.finding.monitor


@dataclass
class Exploration:
    seed: int
    scenarios: int = 0
    visits: Visits = field(default_factory=Visits)
    found: list[Found] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)  # steps a host could not take
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def scenario_file_name(finding: Finding) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{finding.rule}-{finding.monitor}")
    return f"{safe[:80]}.json"


def _error_kind(error: str) -> str:
    # "step 2 (ask): AdapterError: ..." -> "ask: AdapterError": a count, not every message
    if "PreconditionFailure" in error and "EXP-5" in error:
        return "ask: the host offered no MCP tool for the model to call"
    match = re.match(r"(?:step \d+ \()?([a-z -]+)\)?: ([A-Za-z]+)", error)
    return f"{match.group(1)}: {match.group(2)}" if match else error[:60]


def explore(
    world: World,
    seed: int,
    budget: Budget,
    out_dir: Path | None = None,
    about: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Exploration:
    """Explore until `budget` is spent; write each violation's shortest scenario under
    `out_dir` (none written without one)."""
    began = time.monotonic()
    result = Exploration(seed)
    generator = Generator(seed, result.visits)
    shrinking = budget.shrink_runs
    while not budget.spent(result.scenarios, began):
        scenario = generator.scenario()
        outcome = world.run(scenario)
        result.scenarios += 1
        result.visits.add(scenario.visits())
        for error in outcome.errors:
            result.errors[_error_kind(error)] += 1
        result.problems.extend(p for p in outcome.problems if p not in result.problems)
        for violation in outcome.violations:
            known = next((f for f in result.found if f.key == violation.key), None)
            if known is not None:
                known.seen += 1
                continue
            found = _shrunk(world, scenario, violation, result.scenarios - 1, shrinking)
            shrinking -= found.shrink_runs
            result.found.append(found)
            if out_dir is not None:
                found.path = write(out_dir, found, seed, about or {})
            if progress is not None:
                progress(
                    f"{found.finding.rule} broken (monitor {found.finding.monitor}) in "
                    f"scenario {found.scenario_index + 1}; shortest: "
                    f"{len(found.shortest.steps)} step(s)"
                )
    result.seconds = time.monotonic() - began
    return result


# Seconds one finding's shrinking may take, times the timeout scale: a host that hangs in a
# turn costs the harness's bound on every run, and a budget of runs alone then lasts an hour
# (the shortest scenario found by then is written; the verdict is the same).
SHRINK_SECONDS = 120.0


def _shrunk(world: World, scenario: Scenario, violation: Violation, index: int, runs: int) -> Found:
    key = violation.key
    # the steps after the one that showed it showed nothing more
    start = replace(scenario, steps=scenario.steps[: max(0, violation.step + 1)])
    deadline = time.monotonic() + SHRINK_SECONDS * world.timeouts.scale

    kept: list[Finding] = []  # a kept candidate's finding, the last one the shortest's

    def shows(candidate: Scenario) -> bool:
        if time.monotonic() > deadline:
            return False  # out of time: the cut is not kept, and the rest go as fast
        seen = world.run(candidate).first(key)
        if seen is not None:
            kept.append(seen.finding)
        return seen is not None

    shortest, spent = scenario, 0
    if start != scenario and runs > 0:
        spent += 1
        if shows(start):
            shortest = start
    shortest, more = shrink(shortest, shows, max(0, runs - spent))
    found = Found(violation.finding, index, scenario, shortest, spent + more)
    if shortest != scenario and kept:
        found.shortest_finding = kept[-1]
    return found


def write(out_dir: Path, found: Found, seed: int, about: dict[str, Any]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / scenario_file_name(found.finding)
    shown = found.shortest_finding or found.finding
    data = to_json(
        found.shortest,
        shows={
            "rule": shown.rule,
            "monitor": shown.monitor,
            "expected": shown.expected,
            "actual": shown.actual,
        },
        seed=seed,
        found_in_scenario=found.scenario_index + 1,
        steps_before_shrinking=len(found.original.steps),
        **about,
    )
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return path


def replay(world: World, scenario: Scenario) -> Outcome:
    """Run a scenario once, every step, whatever it shows."""
    return world.run(scenario, first_only=False)
