"""How late this process's own clocks run: the longest stall its ticking threads and mock
loops saw since it was last asked.

Why: a timing verdict (a server given up on in time, a call timed out) read while the machine
itself was starved says nothing about the host. Each mock loop ticks every TICK seconds and
notes how late the tick came (a loop busy with its own work, or the process not scheduled);
the harness's clock thread does the same beside them (`harness.run.starvation`). Whoever judges
a case takes the worst lateness of the case's window from here.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Final

TICK: Final = 0.1  # seconds between two ticks of a mock loop: ~10 wake-ups a second each


class Lateness:
    """The worst lateness noted since the last `take()` (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._worst = 0.0

    def note(self, seconds: float) -> None:
        with self._lock:
            if seconds > self._worst:
                self._worst = seconds

    def worst(self) -> float:
        """The worst lateness of the current window."""
        with self._lock:
            return self._worst

    def take(self) -> float:
        """The worst lateness since the last take, and start a new window."""
        with self._lock:
            worst, self._worst = self._worst, 0.0
        return worst


LATENESS: Final = Lateness()  # one per process: its mocks' loops and the harness's clock


def tick_loop(loop: asyncio.AbstractEventLoop, into: Lateness = LATENESS) -> None:
    """From now on, `loop` notes how late its ticks come into `into` until it stops."""

    def tick(due: float) -> None:
        into.note(max(0.0, loop.time() - due))
        loop.call_later(TICK, tick, loop.time() + TICK)

    loop.call_later(TICK, tick, loop.time() + TICK)
