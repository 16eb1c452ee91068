"""The baseline's pure rules; the four behaviours through pytest are in test_reporting.py."""

import pytest

from mcp_host_conformance.harness.verdicts.baseline import (
    BaselineError,
    CaseRecord,
    audit,
    load_baseline,
    parse_baseline,
)
from mcp_host_conformance.harness.verdicts.outcomes import EXPECTED_FAILURE, NOT_APPLICABLE, PASSED
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS


def test_parse_ignores_comments_and_blank_lines():
    baseline = parse_baseline("# known gaps\n\nAPR-2  # tracked in #12\napproval::test_x\n")
    assert baseline.entries == {"APR-2": 3, "approval::test_x": 4}


def test_two_ids_on_a_line_are_refused_with_the_line_number():
    with pytest.raises(BaselineError, match=r"f.txt:2: one requirement or case ID per line"):
        parse_baseline("APR-2\nAPR-3 APR-4\n", "f.txt")


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(BaselineError, match="cannot read the expected-failures file"):
        load_baseline(tmp_path / "absent.txt")


def test_covers_a_listed_case_or_all_broken_requirements():
    baseline = parse_baseline("APR-2\napproval::test_x\n")
    assert baseline.covers("approval::test_x", ["RES-1"])
    assert baseline.covers("approval::test_y", ["APR-2"])
    assert not baseline.covers("approval::test_y", ["APR-2", "APR-3"])
    assert not baseline.covers("approval::test_y", [])


def test_audit_finds_stale_and_unknown_entries():
    baseline = parse_baseline("APR-2\nAPR-3\nPIN-1\napproval::test_b\nNOPE-1\napproval::gone\n")
    cases = [
        CaseRecord("approval::test_a", ("APR-2",), EXPECTED_FAILURE),
        CaseRecord("approval::test_b", ("APR-3",), PASSED),
        CaseRecord("pinning::test_c", ("PIN-1",), NOT_APPLICABLE),
    ]
    stale, unknown = audit(baseline, cases, REQUIREMENTS)
    assert stale == ["APR-3", "approval::test_b"]
    assert unknown == ["NOPE-1", "approval::gone"]


def test_a_huge_file_is_refused_without_reading_it_all(tmp_path):
    from mcp_host_conformance.harness.verdicts.baseline import MAX_BASELINE

    path = tmp_path / "huge.txt"
    path.write_bytes(b"APR-2\n" * (MAX_BASELINE // 6 + 10))
    with pytest.raises(BaselineError, match="is over"):
        load_baseline(path)


def test_a_deselected_case_is_neither_stale_nor_unknown():
    from mcp_host_conformance.harness.verdicts.baseline import DESELECTED

    baseline = parse_baseline("approval::test_x\nAPR-3\n")
    cases = [
        CaseRecord("approval::test_x", ("APR-2",), DESELECTED),
        CaseRecord("approval::test_y", ("APR-3",), DESELECTED),
    ]
    assert audit(baseline, cases, REQUIREMENTS) == ([], [])
