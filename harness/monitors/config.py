"""The monitors of the host's configuration: the model cannot change it during a
conversation (CFG-6), a project's files name no server the host contacts (CFG-2), and a
verified-add host saves no server whose first sync failed (SYNC-1).

Strategy: `Running.ask` takes a digest of every configuration file the host reported
writing before and after each question; a file whose bytes changed while the model was
being answered was changed by the session, whatever the model called.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcp_host_conformance.harness.monitors.observed import Observed, Served
from mcp_host_conformance.harness.monitors.offered import _failing_at_discovery
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


def _sync_fails(served: Served) -> bool:
    """Whether a first sync with the server, as its spec serves it, cannot succeed: it fails at
    connect or breaks a discovery limit (a server that rejects only a wrong header is not
    told here: whether the host sent the right one is CRED's)."""
    bad = served.mock.spec.misbehaviour
    if bad.reject_status and bad.accept_header:
        return False
    return _failing_at_discovery(served)


@monitor(
    "failed-sync-not-saved",
    "SYNC-1",
    "a server a verified-add host contacted while it was added, whose first sync could not "
    "succeed (it fails at connect or breaks a discovery limit), is not contacted at any "
    "later start: nothing of it was saved",
    only=("verified-add",),
)
def failed_sync_not_saved(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # A case not about the profile adds a healthy stand-in and clears what it received: no
    # contact during the add is then on record, and nothing is judged.
    adds, starts = observed.of("add"), observed.of("start")
    for served in observed.served:
        reached = served.reached
        synced = [a for a in adds if any(a.began <= e.time <= a.ended for e in reached)]
        if not synced or not _sync_fails(served):
            continue
        first = synced[0]
        later = next(
            (
                s
                for s in starts
                if s.began > first.ended and any(s.began <= e.time <= s.ended for e in reached)
            ),
            None,
        )
        if later is not None:
            yield self.finding(
                "SYNC-1",
                f"server {first.text!r}, whose first sync at add could not succeed, is not saved",
                "a later start contacted it",
            )
            return
