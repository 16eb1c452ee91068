"""The catalog of monitors: each one a function of a case's record to its findings, with the
rules it can fail and the profiles it applies to.

Strategy: a monitor is declared where it is written (`@monitor(...)`), so the catalog,
the documentation table and the self-test that proves each monitor acts outside its own
rule's cases (tests/test_monitors*.py) all read the same list. A monitor must never blame a
host for what the case arranged: it judges only what a conforming host could not have done
in any case (a call nobody approved, a secret where it was never configured), and stays
silent where the record cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS

__all__ = ["MONITORS", "Check", "Monitor", "monitor"]

Check = Callable[[Observed], Iterable[Finding]]


@dataclass(frozen=True)
class Monitor:
    name: str
    rules: tuple[str, ...]
    watches: str  # one line: what it watches, for the documentation
    check: Check
    # not run for a host that claims one of these (a profile that replaces the rule)
    unless: frozenset[str] = frozenset()
    # run only for a host that claims all of these (a profile's own rule)
    only: frozenset[str] = frozenset()

    def applies(self, profiles: frozenset[str]) -> bool:
        return not (self.unless & profiles) and self.only <= profiles

    def finding(self, rule: str, expected: str, actual: str) -> Finding:
        if rule not in self.rules:
            raise ValueError(f"monitor {self.name} does not watch {rule}")
        return Finding(rule, self.name, expected, actual)


MONITORS: list[Monitor] = []


def monitor(
    name: str,
    rules: str,
    watches: str,
    unless: Iterable[str] = (),
    only: Iterable[str] = (),
) -> Callable[[Callable[[Monitor, Observed], Iterable[Finding]]], Monitor]:
    """Declare a monitor: `rules` is a space-separated list of the IDs it can fail. The
    function gets its own Monitor (to make findings) and the case's record."""
    ids = tuple(rules.split())
    unknown = [rid for rid in ids if rid not in REQUIREMENTS]
    if unknown:
        raise ValueError(f"monitor {name}: unknown requirement IDs {unknown}")

    def declare(function: Callable[[Monitor, Observed], Iterable[Finding]]) -> Monitor:
        holder: list[Monitor] = []

        def check(observed: Observed) -> Iterable[Finding]:
            return function(holder[0], observed)

        made = Monitor(name, ids, watches, check, frozenset(unless), frozenset(only))
        holder.append(made)
        if any(m.name == name for m in MONITORS):
            raise ValueError(f"two monitors named {name}")
        MONITORS.append(made)
        return made

    return declare
