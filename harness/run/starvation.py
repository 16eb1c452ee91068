"""A starved machine is not a slow host: a case that failed while the harness's own clock ran
late is run again with a scaled clock, and judged inconclusive if it is starved again.

Why: beside other work (a loaded CI runner, the self-test's many runs on 2 cores) a correct
host misses a bound because nobody ran it, and a timing verdict read then blames the host for
the machine (seen: DISC-3, DISC-7 and RES-6 failed by clients that keep them, at load 20).

How: a clock thread in each run process ticks every TICK seconds and notes how late each
tick came, beside the mocks' loops (`mocks.lateness`): the worst lateness of a case's attempt
is how long the harness itself stood still while it timed the host. A case that failed (or
warned) while that exceeded STARVED_AT seconds times the timeout scale (never less than
STARVED_AT) runs once more, its timeouts BOOST times larger (`clock_boost`, read by the
`timeouts` fixture); the first attempt's reports are dropped. The second attempt's verdict
stands if it passes, if it failed the same rules as the first (a failure that does not move
with the clock is no timing verdict), or if the clock kept time; a different failure on a
clock starved again is inconclusive: the case is not observed, with why (`inconclusive`,
raised by the plugin where the case's own verdict is made; the plugin runs the attempts,
harness/plugin/attempts.py), and fails no rule. A run that was never starved runs each
case once, as before.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

import pytest

from mcp_host_conformance.harness.run.client_under_test import timeout_scale
from mcp_host_conformance.mocks.lateness import LATENESS, TICK, Lateness

__all__ = [
    "BOOST",
    "STARVED_AT",
    "clock_boost",
    "first_verdict",
    "inconclusive",
    "second_attempt",
    "start_clock",
    "starved_at",
    "verdict_of",
]

STARVED_AT: Final = 0.25  # seconds of standing still, times the timeout scale: starved
BOOST: Final = 3.0  # the second attempt's timeouts, times the run's

_ATTEMPT = pytest.StashKey["Attempt"]()
_VERDICT = pytest.StashKey[frozenset[str]]()
_clock_pid: list[int] = []  # the process whose clock thread runs (a fork has none)


@dataclass(frozen=True)
class Attempt:
    """A case's second attempt: what its first one failed, and how long it stood still."""

    first_verdict: frozenset[str]
    first_late: float


def _tick(into: Lateness) -> None:
    while True:
        due = time.monotonic() + TICK
        time.sleep(TICK)
        into.note(max(0.0, time.monotonic() - due))


def start_clock(into: Lateness = LATENESS) -> None:
    """The clock thread of this process (again after a fork: threads do not survive one)."""
    if _clock_pid == [os.getpid()]:
        return
    threading.Thread(target=_tick, args=(into,), name="harness clock", daemon=True).start()
    _clock_pid[:] = [os.getpid()]


def clock_boost(item: pytest.Item) -> float:
    """How much larger this attempt's timeouts are than the run's: 1, or BOOST when the case
    runs again after a starved failure."""
    return BOOST if _ATTEMPT in item.stash else 1.0


def starved_at(item: pytest.Item) -> float:
    """How long the clock may stand still in this attempt before it counts as starved: never
    less than STARVED_AT, a busy machine's ordinary jitter (a run at a tiny scale is a test's)."""
    return STARVED_AT * max(1.0, timeout_scale(item.config) * clock_boost(item))


def verdict_of(item: pytest.Item, ids: frozenset[str]) -> None:
    """The plugin: the rules the case's attempt failed (its own and the monitors')."""
    item.stash[_VERDICT] = ids


def first_verdict(item: pytest.Item) -> frozenset[str]:
    """The rules the attempt that just ended failed (`verdict_of`), forgotten here."""
    found = item.stash.get(_VERDICT, frozenset())
    if _VERDICT in item.stash:
        del item.stash[_VERDICT]
    return found


@contextmanager
def second_attempt(item: pytest.Item, first: frozenset[str], late: float) -> Iterator[str]:
    """While the case runs again: its timeouts BOOST times the run's; gives what its report
    says of it (a figure of the case: it ran twice, and why)."""
    item.stash[_ATTEMPT] = Attempt(first, late)
    try:
        yield (
            f"ran again with {BOOST:g} times the timeouts: the harness's own clock stood still "
            f"for {late:.1f} s in the first attempt, which failed {_rules(first)}"
        )
    finally:
        del item.stash[_ATTEMPT]


def inconclusive(item: pytest.Item, failed: frozenset[str]) -> str:
    """Why the second attempt's failure of `failed` is no verdict ('' when it is one)."""
    attempt = item.stash.get(_ATTEMPT, None)
    if attempt is None or failed == attempt.first_verdict:
        return ""
    late = LATENESS.worst()
    if late <= starved_at(item):
        return ""
    return (
        f"inconclusive: the harness's own clock stood still for {late:.1f} s while this case "
        f"timed the host, and {attempt.first_late:.1f} s in a first attempt at the run's "
        f"timeouts; with {BOOST:g} times those timeouts it failed "
        f"{_rules(failed)}, the first attempt {_rules(attempt.first_verdict)}: on a starved "
        "machine this is no verdict on the host (run again on a quieter machine, or with a "
        "larger --timeout-scale)"
    )


def _rules(ids: frozenset[str]) -> str:
    return ", ".join(sorted(ids)) or "no rule"
