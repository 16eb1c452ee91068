"""The scenario explorer as a case of every run: a few generated sessions from a fixed seed,
checked by every rule monitor after every step (docs/explorer.md).

It names no rule of its own: what a monitor sees broken in its sessions fails that rule,
naming this case, the monitor and the shortest scenario that shows it (written to a file
that `mcp-host-conformance explore --replay FILE` runs again). Its figures say how many
scenarios ran, how long they took and which values of the catalogue they visited.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from mcp_host_conformance.harness.cases.items import EXPLORE_SCENARIOS, option
from mcp_host_conformance.harness.explorer.dimensions import DIMENSIONS
from mcp_host_conformance.harness.explorer.explore import Budget, explore, replay
from mcp_host_conformance.harness.explorer.scenario import ScenarioError, load
from mcp_host_conformance.harness.explorer.world import World
from mcp_host_conformance.harness.run.client_under_test import timeout_scale
from mcp_host_conformance.harness.verdicts.outcomes import Finding, MonitorFailure
from mcp_host_conformance.harness.verdicts.safe_text import inline

SCENARIOS_DIR = "mcphc-scenarios"
MAX_REPLAYS = 200  # scenario files replayed from one folder


def _world(pytestconfig, adapter, description, timeouts, lures, second) -> World:
    from mcp_host_conformance.harness.run import fresh_process

    scale = timeout_scale(pytestconfig)
    return World(
        adapter,
        description,
        timeouts,
        lures,
        restarted=lambda: fresh_process.shared(pytestconfig, second),
        grace=max(1.0, 3 * timeouts.grace),
        scale=scale,
    )


def replay_command(config: pytest.Config, path: Path | None) -> str:
    """The command that replays the scenario file `path` against the host this run tested
    (its adapter or driver command, their folders, the run's timeout scale): copied as
    shown, it gives the same verdict."""
    words = ["mcp-host-conformance", "explore"]
    command, client = option(config, "client_cmd", None), option(config, "client", None)
    if command:
        words += ["--client-cmd", command]
    elif client:
        words += ["--client", client]
    folders: list[str] = option(config, "client_path", []) or []
    for folder in folders:
        words += ["--client-path", str(folder)]
    scale = timeout_scale(config)
    if scale != 1:
        words += ["--timeout-scale", f"{scale:g}"]
    return shlex.join([*words, "--replay", str(path)])


def _replay(world: World, replaying: str, record_property) -> list[Finding]:
    """Findings of the scenario file `replaying`, or of every one in that folder."""
    where = Path(replaying)
    paths = sorted(where.glob("*.json")) if where.is_dir() else [where]
    scenarios = []
    for path in paths[:MAX_REPLAYS]:
        try:
            scenarios.append((str(path), load(path.read_bytes())[0]))
        except OSError as exc:
            pytest.fail(f"cannot read the scenario file {inline(str(path))}: {exc.strerror}", False)
        except ScenarioError as exc:
            pytest.fail(f"{inline(str(path))}: {exc}", False)
    findings: list[Finding] = []
    seconds = 0.0
    errors: list[str] = []
    for shown, scenario in scenarios:
        outcome = replay(world, scenario)
        seconds += outcome.seconds
        named = f"{Path(shown).name}: " if len(scenarios) > 1 else ""
        errors += [f"{named}{error}" for error in outcome.errors]
        findings += [
            Finding(
                v.finding.rule,
                v.finding.monitor,
                v.finding.expected,
                f"{v.finding.actual} (replaying {inline(shown)}, after step {v.step + 1})",
            )
            for v in outcome.violations
        ]
    if len(scenarios) > 1:
        record_property("explorer: scenario files replayed", len(scenarios))
    record_property("explorer: seconds", round(seconds, 1))
    if errors:
        record_property("explorer: steps the host could not take", errors[:20])
    return findings


@pytest.mark.mcphc_explorer
def test_generated_sessions(
    pytestconfig, adapter, description, timeouts, _lures, _second_process, record_property
):
    world = _world(pytestconfig, adapter, description, timeouts, _lures, _second_process)
    replaying = option(pytestconfig, "explore_replay", None)
    if replaying:
        findings = _replay(world, replaying, record_property)
        if findings:
            raise MonitorFailure(findings)
        return
    seconds = option(pytestconfig, "explore_seconds", None)
    scenarios = option(pytestconfig, "explore_scenarios", None)
    if seconds is None and scenarios is None:
        scenarios = EXPLORE_SCENARIOS
    if scenarios == 0:
        pytest.skip("the explorer's budget is 0 scenarios (--mcphc-explore-scenarios 0)")
    seed = option(pytestconfig, "explore_seed", None)
    out = Path(option(pytestconfig, "explore_dir", None) or SCENARIOS_DIR)
    result = explore(
        world,
        seed,
        Budget(
            scenarios=scenarios,
            seconds=seconds,
            shrink_runs=option(pytestconfig, "explore_shrink", None),
        ),
        out_dir=out,
        about={"client": f"{inline(description.name)} {inline(description.version)}"},
    )
    record_property("explorer: seed", seed)
    record_property("explorer: scenarios", result.scenarios)
    record_property("explorer: seconds", round(result.seconds, 1))
    visited = sum(1 for d in DIMENSIONS for v in d.values if result.visits.count(d.name, v))
    total = sum(len(d.values) for d in DIMENSIONS)
    record_property("explorer: catalogue values visited", f"{visited} of {total}")
    if result.errors:
        record_property("explorer: steps the host could not take", dict(result.errors))
    if result.found:
        raise MonitorFailure(
            [
                Finding(
                    f.finding.rule,
                    f.finding.monitor,
                    f.finding.expected,
                    f"{f.finding.actual} (explorer: seed {seed}, scenario "
                    f"{f.scenario_index + 1}; shortest, {len(f.shortest.steps)} step(s): "
                    f"{f.path}; replay with {inline(replay_command(pytestconfig, f.path))})",
                )
                for f in result.found
            ]
        )
