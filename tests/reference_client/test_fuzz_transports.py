"""A small run of scripts/fuzz_transports.py (the full run, 10,000 messages per transport, is
run by hand; its figures are in docs/fuzzing.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_transports.py"
_spec = importlib.util.spec_from_file_location("fuzz_transports", _PATH)
assert _spec is not None and _spec.loader is not None
fuzz_transports = importlib.util.module_from_spec(_spec)
sys.modules["fuzz_transports"] = fuzz_transports  # dataclasses look their module up there
_spec.loader.exec_module(fuzz_transports)


def test_a_small_fuzz_run_has_no_crash_and_no_hang() -> None:
    report = fuzz_transports.run_fuzz(messages=60, seed=2, bound=20.0)
    assert [p.messages for p in report.phases] == [60, 60, 60]
    assert report.crashes == 0, [p.crashes for p in report.phases] + report.loop_errors
    assert report.hangs == 0
    assert "| stdio | 60 |" in fuzz_transports.markdown(report)


def test_the_fuzz_run_would_see_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_host_conformance.reference_client import rpc

    def broken(response: object) -> dict:
        raise KeyError("a reader that is not total")

    monkeypatch.setattr(rpc, "check_response", broken)
    report = fuzz_transports.run_fuzz(messages=5, seed=2, bound=20.0)
    assert report.crashes > 0


def test_generation_is_deterministic_and_the_stdio_answer_always_ends_the_request() -> None:
    import json
    import random

    first = [fuzz_transports.hostile_message(random.Random(7), 3) for _ in range(5)]
    again = [fuzz_transports.hostile_message(random.Random(7), 3) for _ in range(5)]
    assert first == again
    answer = fuzz_transports.stdio_answer(random.Random(1), 42)
    assert json.loads(answer.splitlines()[-1]) == {
        "jsonrpc": "2.0",
        "id": 42,
        "result": {"content": []},
    }
