"""Run only the listed cases: the self-test's impact selection (tests/zoo_impact.py).

`-p mcp_host_conformance.zoo.selection` with MCP_ZOO_CASES naming a file of node IDs, one a
line: every other case is deselected (and reported so). With MCP_ZOO_TRACE set (a traced
reference run) it names the running case in MCP_ZOO_CASE, so a process a case starts (the
official framework's client command) records its coverage under that case. With
MCP_ZOO_RECORD naming a file, it records there the calls of the pure functions the zoo
patches, and the cases in which a `replaced_when` seam's `differs` said yes
(tests/zoo/recording.py). Without any of them it does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_host_conformance.zoo import remote_recording
from mcp_host_conformance.zoo.recording import (
    CASE_ENV,
    RECORD_ENV,
    GuardRecorder,
    Recorder,
    zoo_guards,
    zoo_pure_targets,
)

CASES_ENV = "MCP_ZOO_CASES"
TRACE_ENV = "MCP_ZOO_TRACE"
_RECORDER = pytest.StashKey[tuple[Recorder, GuardRecorder, Path]]()


def pytest_configure(config: pytest.Config) -> None:
    destination = os.environ.get(RECORD_ENV)
    if not destination:
        return
    # coverage started in this process too (COVERAGE_PROCESS_START) with a journal recorder
    remote_recording.discard()
    recorder = Recorder(zoo_pure_targets())
    recorder.start()
    guards = GuardRecorder(zoo_guards(), recorder.records)  # over the pure ones' wrappers
    guards.start()
    config.stash[_RECORDER] = (recorder, guards, Path(destination))


def pytest_unconfigure(config: pytest.Config) -> None:
    found = config.stash.get(_RECORDER, None)
    if found is not None:
        recorder, guards, destination = found
        guards.stop()
        recorder.stop()
        recorder.records.dump(destination)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = os.environ.get(CASES_ENV)
    if not listed:
        return
    wanted = set(Path(listed).read_text(encoding="utf-8").splitlines())
    keep = [item for item in items if item.nodeid in wanted]
    dropped = [item for item in items if item.nodeid not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not os.environ.get(TRACE_ENV):
        return (yield)
    os.environ[CASE_ENV] = item.nodeid
    try:
        return (yield)
    finally:
        os.environ.pop(CASE_ENV, None)
