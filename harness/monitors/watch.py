"""Every monitor run over one case's record: the findings, and the monitors that could not
run (a harness problem, never the host's).

Strategy: the monitors are independent, so one that fails to read what a case made (a
journal gone, a body of an unexpected shape) stops only itself; its error is returned
apart from the findings, for the plugin to warn about, and blames no host.
"""

from __future__ import annotations

from mcp_host_conformance.harness.monitors import (  # noqa: F401 - they register themselves
    calls,
    config,
    discovery,
    network,
    offered,
    pinning,
    results,
    secrets,
    sessions,
    stdio,
    terminal,
)
from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.monitors.registry import MONITORS, Monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding

__all__ = ["MONITORS", "Monitor", "watch"]


def watch(observed: Observed) -> tuple[list[Finding], list[str]]:
    """(findings, problems): what every monitor that applies to the host saw, and each
    monitor that failed to run."""
    findings: list[Finding] = []
    problems: list[str] = []
    for monitor in MONITORS:
        if not monitor.applies(observed.profiles):
            continue
        try:
            findings.extend(monitor.check(observed))
        except Exception as exc:  # noqa: BLE001 - a monitor's own failure blames no host
            problems.append(f"monitor {monitor.name} could not run: {type(exc).__name__}: {exc}")
    return findings, problems
