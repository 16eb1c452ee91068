"""scripts/hosts_matrix.py: docs/hosts.md, the requirement x host matrix, kept current."""

import importlib.util
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from mcp_host_conformance.harness.verdicts.baseline import load_baseline, parse_baseline

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
    # a host with an evidence page is named by a link to it
    assert "| requirement | level | Reference host | [Codex CLI](hosts/codex.md) |" in page
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
    baseline = load_baseline(_ROOT / host.baseline) if host.baseline else parse_baseline("")
    failures = [f for f in shot["failures"] if f["outcome"] != "warning"]
    failing = {f["case"] for f in failures}
    # as the run judges it: a failure is expected when its case or every rule it broke is listed
    unlisted = {f["case"] for f in failures if not baseline.covers(f["case"], f["failed"])}
    listed = {entry for entry in baseline.entries if "::" in entry}
    assert not unlisted and listed <= failing, (
        f"{host.key}: snapshot and baseline disagree: only in the snapshot "
        f"{sorted(unlisted)}, only in the baseline {sorted(listed - failing)}"
    )


def _machine_paths() -> list[str]:
    """Where this machine keeps what a report may quote: the interpreter, the checkout, the
    installed packages, the home and temporary directories."""
    return [
        sys.executable,
        str(_ROOT),
        sysconfig.get_paths()["purelib"],
        str(Path.home()),
        tempfile.gettempdir(),
    ]


def _holds(page: str, path: str) -> bool:
    # as a path of its own, not the tail of a relative one (`.tox/<env>/tmp/report.json`)
    return re.search(rf"(?<![\w.<>/-]){re.escape(path)}(?![\w.-])", page) is not None


def test_a_page_holds_no_absolute_path_of_the_machine():
    """A report quotes the command of a stdio server the harness started (this machine's
    interpreter, its checkout or installed package) and may quote the host's own files: the
    page says `python` and repository-relative paths, never where it was made."""
    purelib = sysconfig.get_paths()["purelib"]
    did = (
        f"MCP server s: 1 tools from {sys.executable} {_ROOT}/mcp_host_conformance/mocks/"
        f"stdio_server.py; {Path(purelib) / 'mcp_host_conformance' / 'mocks' / 'stdio_entry.py'}"
        f" {Path.home() / '.config' / 'host.json'} {Path(tempfile.gettempdir()) / 'x' / 'y.json'}"
        f"; POST /moved/mcp at http://127.0.0.1:8080/mcp"
    )
    case = {"id": "t::a", "requirements": ["NET-4"], "outcome": "failed", "actual": did}
    shot = hosts_matrix.snapshot(report({"NET-4": "failed"}, [case]), "ts")
    taken_before = {**shot, "failures": [{**shot["failures"][0], "did": did}]}
    for snapshot in (shot, taken_before):
        page = hosts_matrix.render({"ts": snapshot})
        held = [path for path in _machine_paths() if _holds(page, path)]
        assert not held, f"the page holds {held}"
        assert "from python mcp_host_conformance/mocks/stdio_server.py" in page
        assert "mcp_host_conformance/mocks/stdio_entry.py host.json y.json" in page
        assert "POST /moved/mcp at http://127.0.0.1:" in page  # a request path is no file


def test_docs_hosts_md_and_its_snapshots_hold_no_machine_path():
    page = (_ROOT / "docs" / "hosts.md").read_text("utf-8")
    held = [path for path in _machine_paths() if _holds(page, path)]
    assert not held, f"docs/hosts.md holds {held}"
    machine = re.compile(rf"(?<![\w.:/<>-])/(?:{hosts_matrix._MACHINE_ROOTS})/")
    assert not machine.search(page), machine.search(page)
    for key, shot in hosts_matrix.load_snapshots().items():
        for failure in shot["failures"]:
            assert hosts_matrix._machine_free(failure["did"]) == failure["did"], key


def test_a_client_s_name_stays_in_its_cell():
    shot = hosts_matrix.snapshot(report({"RES-6": "passed"}, []), "reference")
    shot["client"] = {"name": "a`b|c\nd", "version": "1\x1b[2J"}
    page = hosts_matrix.render({"reference": shot})
    assert "| Reference host | `a'b\\|c\\x0ad` 1\\x1b[2J | `conformance-inprocess` |" in page
    assert "\x1b" not in page


def missing_evidence(shot: dict, page: str) -> list[str]:
    """The rules a snapshot fails that its evidence page has no row (`| RULE | ...`) for."""
    failing = {rid for rid, o in shot["requirements"].items() if o in hosts_matrix.FAILING}
    rows = set(re.findall(r"^\| ([A-Z]+-\d+)\b", page, re.MULTILINE))
    return sorted(failing - rows)


@pytest.mark.parametrize("host", [h for h in hosts_matrix.HOSTS if h.baseline], ids=lambda h: h.key)
def test_every_failed_rule_of_an_example_host_has_its_evidence_row(host):
    """docs/hosts/<host>.md gives each rule the host fails a row saying what shows it (the
    line of the host's source, or a journal excerpt), and the matrix links to the page. A
    rule that starts failing when the baseline is updated needs its row."""
    page = hosts_matrix.evidence_page(host)
    assert page is not None, f"{host.key}: no evidence page (docs/hosts/{host.key}.md)"
    shot = hosts_matrix.load_snapshots()[host.key]
    missing = missing_evidence(shot, page.read_text("utf-8"))
    assert not missing, f"{host.key}: failed rules without an evidence row: {missing}"
    assert f"](hosts/{host.key}.md)" in hosts_matrix.render({host.key: shot})


def test_a_failed_rule_without_its_row_is_caught():
    shot = hosts_matrix.snapshot(report({"RES-6": "failed", "HARD-1": "warning"}, []), "ts")
    page = "| HARD-1 (SHOULD) | seen | `host.ts:12` |\n| RES-7 | seen | `host.ts:40` |\n"
    assert missing_evidence(shot, page) == ["RES-6"]
    assert missing_evidence(shot, page + "| RES-6 | seen | `host.ts:9` |\n") == []
