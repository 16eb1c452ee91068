"""scripts/hosts_matrix.py: docs/hosts.md, the requirement x host matrix, kept current."""

import importlib.util
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "hosts_matrix", _ROOT / "scripts" / "hosts_matrix.py"
)
hosts_matrix = importlib.util.module_from_spec(_spec)
sys.modules["hosts_matrix"] = hosts_matrix
_spec.loader.exec_module(hosts_matrix)


def report(outcomes: dict[str, str], cases: list[dict]) -> dict:
    return {
        "client": {"name": "h", "version": "1", "profiles": []},
        "environment": {"network": "isolated"},
        "requirements": {rid: {"outcome": o} for rid, o in outcomes.items()},
        "cases": cases,
    }


def test_a_snapshot_keeps_outcomes_and_one_line_per_failure():
    shot = hosts_matrix.snapshot(
        report(
            {"RES-6": "failed", "APR-2": "passed", "NET-3": "expected_failure"},
            [
                {"id": "a::t1", "requirements": ["RES-6"], "outcome": "failed", "actual": "x\n y"},
                {"id": "a::t0", "requirements": ["APR-2"], "outcome": "passed", "actual": ""},
                {
                    "id": "a::t2",
                    "requirements": ["NET-3"],
                    "outcome": "expected_failure",
                    "actual": "",
                    "message": "setup: boom\nmore",
                },
            ],
        ),
        "codex",
    )
    assert shot["network"] == "isolated" and shot["requirements"]["APR-2"] == "passed"
    assert [(f["case"], f["did"]) for f in shot["failures"]] == [
        ("a::t1", "x y"),
        ("a::t2", "setup: boom"),
    ]


def test_the_page_has_a_column_per_host_and_a_line_per_failure():
    shots = {
        "reference": hosts_matrix.snapshot(report({"RES-6": "passed"}, []), "reference"),
        "codex": hosts_matrix.snapshot(
            report(
                {"RES-6": "failed"},
                [{"id": "r::t", "requirements": ["RES-6"], "outcome": "failed", "actual": "a|b"}],
            ),
            "codex",
        ),
    }
    page = hosts_matrix.render(shots)
    assert "| requirement | level | Reference host | Codex CLI |" in page
    assert "| RES-6 | MUST | pass | **FAIL** |" in page
    assert "| CFG-1 | MUST | ? | ? |" in page  # absent from a report: not checked there
    assert "- RES-6 `r::t`: a\\|b" in page
    assert "PIN-1" not in page  # optional profiles are not part of the matrix


def test_docs_hosts_md_is_generated_from_the_committed_snapshots():
    shots = hosts_matrix.load_snapshots()
    assert set(shots) == {h.key for h in hosts_matrix.HOSTS}, "a host has no snapshot"
    page = (_ROOT / "docs" / "hosts.md").read_text("utf-8")
    assert page == hosts_matrix.render(shots) + "\n", (
        "docs/hosts.md is out of date: python scripts/hosts_matrix.py render"
    )


@pytest.mark.parametrize("host", [h for h in hosts_matrix.HOSTS], ids=lambda h: h.key)
def test_every_snapshot_agrees_with_the_baseline_ci_holds_its_host_to(host):
    """CI fails a host's run when it fails a case its baseline does not list, or passes one it
    lists; so a snapshot whose failing cases are its baseline's is the host's current state.
    When a baseline changes, regenerate: python scripts/hosts_matrix.py update."""
    shot = hosts_matrix.load_snapshots()[host.key]
    failing = {f["case"] for f in shot["failures"] if f["outcome"] != "warning"}
    listed = hosts_matrix.baseline_cases(_ROOT / host.baseline) if host.baseline else set()
    assert failing == listed, (
        f"{host.key}: snapshot and baseline disagree: only in the snapshot "
        f"{sorted(failing - listed)}, only in the baseline {sorted(listed - failing)}"
    )
