"""A case that starts its host a second time as its own device (RES-5's second session, for
the calls a turn limit leaves) judges its rule only if the host starts again: a host that
fails to start again with the servers it connected a moment ago fails DISC-1, named as the
case's precondition, never the case's own rule (opencode, after a stop that left its lock
behind, could not connect its remote servers at the next start: docs/hosts/opencode.md)."""

from __future__ import annotations

import pytest

from mcp_host_conformance.harness.contract.adapter import AdapterError, StartOptions
from mcp_host_conformance.harness.verdicts.outcomes import PreconditionFailure
from tests.harness.bare_host import bare_host


class _Session:
    text = ""
    statuses: list = []


class StartsOnce:
    """An adapter whose host starts, then fails every later start."""

    def __init__(self) -> None:
        self.starts = 0

    def start(self, options: StartOptions) -> _Session:
        self.starts += 1
        if self.starts > 1:
            raise AdapterError("opencode: GET /mcp: TimeoutError: timed out")
        return _Session()


def test_a_failed_second_start_is_disc_1_s_precondition(tmp_path):
    host = bare_host(tmp_path, StartsOnce())
    host.start()
    with pytest.raises(PreconditionFailure) as raised:
        host.start_again()
    assert raised.value.ids == ["DISC-1"]
    assert "its next start failed: opencode: GET /mcp" in str(raised.value)


def test_a_failed_first_start_is_still_the_case_s_own(tmp_path):
    adapter = StartsOnce()
    adapter.starts = 1
    with pytest.raises(AdapterError):
        bare_host(tmp_path, adapter).start()


def test_a_host_that_starts_again_goes_on(tmp_path):
    class Always(StartsOnce):
        def start(self, options):
            return _Session()

    host = bare_host(tmp_path, Always())
    host.start()
    assert host.start_again() is host.runs[-1]
