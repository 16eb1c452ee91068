"""A coverage plugin that records the pure functions' calls in the processes a traced
reference run starts, and where the guarded seams' `differs` said yes there
(tests/zoo/recording.py, `JournalRecorder`).

The traced run's processes start coverage from the configuration tests/zoo_impact.py
writes, which names this module as a plugin: coverage cannot start in a process without
loading it, so every process the traced run started whose lines the trace holds kept a
journal of its calls too (one that cannot write its journal ends before coverage saves
anything). That is what lets the self-test trust the records instead of those lines, case
by case. The run's own pytest process starts coverage the same way, and discards this
recording for its in-memory one (tests/zoo/selection.py). Options, in the
configuration's `[mcp_host_conformance.zoo.remote_recording]` section: `journal`, the path
the journals start with, `targets`, the functions to record, one a line, and `guards`, "1" to
watch every guarded seam of the zoo (`zoo_guards`).
"""

from __future__ import annotations

from typing import Any

from mcp_host_conformance.zoo.recording import JournalRecorder, zoo_guards

_ACTIVE: list[JournalRecorder] = []


def coverage_init(reg: Any, options: dict[str, str]) -> None:
    """Coverage's plugin hook: start recording (nothing is registered with coverage)."""
    targets = options.get("targets", "").split()
    guards = zoo_guards() if options.get("guards", "") == "1" else None
    recorder = JournalRecorder(targets, options["journal"], guards)
    recorder.start()
    _ACTIVE.append(recorder)


def discard() -> None:
    """Stop this process's recording and remove its journal: the traced run's own process
    records its calls in memory (tests/zoo/selection.py) and must not do both."""
    while _ACTIVE:
        _ACTIVE.pop().discard()
