"""The monitor of the host's configuration during a conversation: the model cannot change it
(CFG-6).

Strategy: `Running.ask` takes a digest of every configuration file the host reported
writing before and after each question; a file whose bytes changed while the model was
being answered was changed by the session, whatever the model called.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding


@monitor(
    "configuration-untouched-by-turns",
    "CFG-6",
    "no configuration file the host wrote changed while a question was answered",
)
def configuration_untouched(self: Monitor, observed: Observed) -> Iterator[Finding]:
    changes = [c for host in observed.hosts for c in host.config_changes]
    if changes:
        question, path = changes[0]
        yield self.finding(
            "CFG-6",
            "only the user's configuration command or file changes the configuration",
            f"{path} changed during the question {question!r}",
        )


@monitor(
    "project-config-ignored",
    "CFG-2",
    "the servers named only in the project files every case's working directory holds were "
    "never contacted or started",
)
def project_config_ignored(self: Monitor, observed: Observed) -> Iterator[Finding]:
    if observed.lures_reached:
        yield self.finding(
            "CFG-2",
            "MCP configuration found in the working directory is never read",
            "; ".join(observed.lures_reached[:3]),
        )
