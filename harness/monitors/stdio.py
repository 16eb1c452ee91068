"""Monitors of the stdio servers a host starts: argv verbatim (STDIO-1), an environment of
PATH, HOME, LANG and the configured variables only (STDIO-2), a process group of its own
(STDIO-3), none of its stderr shown (STDIO-4), and nothing of it left once the host stopped
(STDIO-5).

Strategy: the stdio mock journals, the moment it starts, its argv, environment, pid and
process group, and the pids of what it spawned; the configuration the host was given is the
harness's own record. STDIO-5 is read from /proc after every session of the case stopped,
waiting a bounded grace for the exit (there is no event for another process's exit).
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator

from mcp_host_conformance.harness.cases.observe import wait_until
from mcp_host_conformance.harness.contract.adapter import StdioServer
from mcp_host_conformance.harness.monitors.observed import Observed, Served
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.mocks.stdio_server import process_state

ALLOWED_ENV = {"PATH", "HOME", "LANG"}
# Python's own locale coercion (PEP 538) adds LC_CTYPE inside the mock when LANG is unset
# or "C": the mock's interpreter put it there, not the client.
COERCED_LC_CTYPE = {"C.UTF-8", "C.utf8", "UTF-8"}
FLOOD_SEEN = "E" * 256  # the stdio mock's stderr flood is runs of "E"


def _configs(observed: Observed, served: Served) -> list[StdioServer]:
    return [c for c in observed.configured if isinstance(c, StdioServer) and c.name in served.names]


def _stdio(observed: Observed) -> Iterator[Served]:
    for served in observed.served:
        if served.stdio and served.names:
            yield served


@monitor(
    "argv-verbatim",
    "STDIO-1",
    "every stdio server started got its configured arguments verbatim (no shell: `a;b`, "
    "`$HOME`, spaces arrive as given)",
)
def argv_verbatim(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for served in _stdio(observed):
        configs = _configs(observed, served)
        for entry in served.mock.process_entries():
            tail = list(entry.argv or [])[1:]  # argv[0] is the mock's script, as Python sees it
            given = [list(c.args) for c in configs]
            if configs and not any(args[len(args) - len(tail) :] == tail for args in given):
                yield self.finding(
                    "STDIO-1",
                    f"{served.label} started with its arguments verbatim",
                    f"it got {tail!r}; configured {given[-1]!r}",
                )
                break


def _normal(name: str) -> str:
    return name.lower().replace("-", "")


@functools.lru_cache(maxsize=1)
def _installed_locales() -> frozenset[str] | None:
    try:
        done = subprocess.run(
            ["locale", "-a"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(_normal(n) for n in done.stdout.split())


def _c_locale(lang: str | None) -> bool:
    """Whether a Python stdio server started with LANG=`lang` (and no LC_ALL) runs in the C
    locale, where the interpreter itself sets LC_CTYPE (PEP 538's coercion) before the mock
    can record its environment: no LANG, C or POSIX, or a locale this machine lacks."""
    if lang in (None, "", "C", "POSIX"):
        return True
    installed = _installed_locales()
    return installed is None or _normal(str(lang)) not in installed


@monitor(
    "environment-clean",
    "STDIO-2",
    "every stdio server's environment held only PATH, HOME, LANG and its configured variables",
)
def environment_clean(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for served in _stdio(observed):
        configured = {key for c in _configs(observed, served) for key in c.env}
        for entry in served.mock.process_entries():
            env = dict(entry.env or {})
            if env.get("LC_CTYPE") in COERCED_LC_CTYPE and _c_locale(env.get("LANG")):
                env.pop("LC_CTYPE")
            extra = sorted(set(env) - ALLOWED_ENV - configured)
            if extra:
                yield self.finding(
                    "STDIO-2",
                    f"{served.label}'s environment: PATH, HOME, LANG and what was configured",
                    f"also {', '.join(extra[:8])}" + (" ..." if len(extra) > 8 else ""),
                )
                break


@monitor(
    "own-process-group",
    "STDIO-3",
    "every stdio server ran as the leader of a process group of its own",
)
def own_process_group(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for served in _stdio(observed):
        for entry in served.mock.process_entries():
            if entry.pid and entry.pgid and entry.pgid != entry.pid:
                yield self.finding(
                    "STDIO-3",
                    f"{served.label} runs in its own process group",
                    f"pid {entry.pid} in process group {entry.pgid}",
                )
                break


@monitor(
    "stderr-not-shown",
    "STDIO-4",
    "nothing a stdio server wrote to stderr (a flood, or what it said before exiting at once) "
    "appeared in what the user saw",
)
def stderr_not_shown(self: Monitor, observed: Observed) -> Iterator[Finding]:
    flooding = [s for s in _stdio(observed) if s.mock.spec.misbehaviour.stderr_flood]
    if flooding and any(FLOOD_SEEN in text for text in observed.seen):
        yield self.finding(
            "STDIO-4",
            "a stdio server's error output is discarded, never shown",
            f"{flooding[0].label}'s stderr output appeared in what the user saw",
        )


def _spawned(served: Served) -> list[int]:
    return [
        int(e.extra["pid"])
        for e in served.entries
        if e.kind == "event"
        and e.extra.get("event") in ("child-spawned", "daemonized")
        and isinstance(e.extra.get("pid"), int)
    ]


@monitor(
    "nothing-left-behind",
    "STDIO-5",
    "once every session of the case stopped, no stdio server it started was running or a "
    "zombie, and nothing it spawned in its group was running",
)
def nothing_left_behind(self: Monitor, observed: Observed) -> Iterator[Finding]:
    if not observed.all_stopped:
        return  # a session whose stop failed: its failure is the case's, not this rule's
    for served in _stdio(observed):
        pids = [e.pid for e in served.mock.process_entries() if e.pid]
        spawned = _spawned(served)

        def settled(pids: list[int] = pids, spawned: list[int] = spawned) -> bool:
            return all(process_state(p) == "gone" for p in pids) and all(
                process_state(p) != "running" for p in spawned
            )

        if (pids or spawned) and not wait_until(settled, observed.grace):
            left = [f"{p} ({process_state(p)})" for p in pids if process_state(p) != "gone"]
            left += [f"{p} (spawned, running)" for p in spawned if process_state(p) == "running"]
            yield self.finding(
                "STDIO-5",
                f"{served.label} stopped and reaped with its group when the host stopped",
                f"left after {observed.grace:.1f} s: {', '.join(left[:4])}",
            )
