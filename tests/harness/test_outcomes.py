import pytest

from mcp_host_conformance.harness.verdicts.outcomes import (
    EXPECTED_FAILURE,
    FAILED,
    INFO,
    NOT_APPLICABLE,
    NOT_OBSERVED,
    PASSED,
    SKIPPED,
    UNCOVERED,
    WARNING,
    ConformanceFailure,
    case_outcome,
    check,
    is_failing,
    severest_level,
    worst,
)


def test_check_passes_silently():
    check(True, ids="APR-2", expected="x", actual="x")


def test_failure_states_rule_expected_and_actual():
    with pytest.raises(ConformanceFailure) as caught:
        check(False, ids=["APR-2", "HARD-1"], expected="denied", actual="completed")
    text = str(caught.value)
    assert text.splitlines()[0].startswith("APR-2 (MUST): Approval is default-deny")
    assert text.splitlines()[1].startswith("HARD-1 (SHOULD): ")
    assert "  expected: denied" in text and "  actual: completed" in text
    assert caught.value.ids == ["APR-2", "HARD-1"]
    assert isinstance(caught.value, AssertionError)


def test_space_separated_ids_are_split():
    assert ConformanceFailure("APR-2 APR-3", "a", "b").ids == ["APR-2", "APR-3"]


def test_failure_needs_a_known_id():
    with pytest.raises(KeyError):
        ConformanceFailure("NOPE-1", "a", "b")
    with pytest.raises(ValueError):
        ConformanceFailure([], "a", "b")


@pytest.mark.parametrize(
    "verdict, level, reason, outcome",
    [
        ("passed", "MUST", "", PASSED),
        ("failed", "MUST", "", FAILED),
        ("failed", None, "", FAILED),
        ("failed", "SHOULD", "", WARNING),
        ("passed", "SHOULD", "", PASSED),
        ("failed", "INFO", "", INFO),
        ("passed", "INFO", "", INFO),
        ("skipped", "MUST", "not applicable: profile pinning not claimed", NOT_APPLICABLE),
        ("skipped", "MUST", "slow: run with --run-slow", SKIPPED),
        ("skipped", "MUST", "not observable: no network namespace here", NOT_OBSERVED),
    ],
)
def test_case_outcome(verdict, level, reason, outcome):
    assert case_outcome(verdict, level, reason) == outcome


def test_severest_level():
    assert severest_level(["EXP-6", "HARD-1"]) == "SHOULD"
    assert severest_level(["HARD-1", "APR-2"]) == "MUST"
    assert severest_level([]) is None


def test_worst_orders_outcomes():
    assert worst([PASSED, NOT_APPLICABLE]) == PASSED
    assert worst([PASSED, WARNING, INFO]) == WARNING
    assert worst([EXPECTED_FAILURE, FAILED]) == FAILED
    assert worst([SKIPPED, NOT_APPLICABLE]) == SKIPPED
    assert worst([]) == UNCOVERED


def test_only_failures_fail_a_run_and_warnings_only_when_strict():
    assert is_failing(FAILED) and not is_failing(WARNING) and is_failing(WARNING, strict=True)
    assert not is_failing(EXPECTED_FAILURE, strict=True) and not is_failing(INFO, strict=True)


def test_a_case_not_applicable_to_the_host_leaves_its_requirement_partial_never_passed():
    from mcp_host_conformance.harness.verdicts.outcomes import (
        NOT_APPLICABLE,
        PARTIAL,
        PASSED,
        Contribution,
        requirement_outcome,
    )

    passed = Contribution("a::ran", PASSED)
    inapplicable = Contribution("a::cannot", NOT_APPLICABLE, "not applicable: no cancel")
    outcome, why = requirement_outcome([passed, inapplicable])
    assert outcome == PARTIAL and "1 not applicable to this host of 2 case(s)" in why
    assert requirement_outcome([inapplicable, inapplicable]) == (NOT_APPLICABLE, "")
    assert requirement_outcome([passed]) == (PASSED, "")


def test_a_rule_no_case_could_observe_is_not_observed_never_not_applicable():
    from mcp_host_conformance.harness.verdicts.outcomes import (
        PARTIAL,
        Contribution,
        requirement_outcome,
    )

    unseen = Contribution("a::unsealed", NOT_OBSERVED, "not observable: no namespace")
    inapplicable = Contribution("a::cannot", NOT_APPLICABLE, "not applicable: no cancel")
    slow = Contribution("a::slow", SKIPPED, "slow: run with --run-slow")
    outcome, why = requirement_outcome([unseen, inapplicable])
    assert outcome == NOT_OBSERVED and "none of its 2 case(s) could observe it" in why
    assert requirement_outcome([unseen, slow])[0] == SKIPPED  # one did not run at all
    outcome, why = requirement_outcome([Contribution("a::ran", PASSED), unseen])
    assert outcome == PARTIAL and "1 not observed here of 2 case(s)" in why
