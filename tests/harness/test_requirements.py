import pytest

from mcp_host_conformance.harness.verdicts.requirements import (
    AREAS,
    CORE_AREAS,
    REQUIREMENTS,
    parse_catalog,
    requirement,
)


def test_the_core_has_sixty_three_must_and_should_ids():
    core = [r for r in REQUIREMENTS.values() if r.profile is None and r.level != "INFO"]
    assert len(core) == 63  # 60 from the seeds, CFG-6, CRED-6 and HARD-1


def test_areas_are_in_catalog_order_core_first():
    assert CORE_AREAS[:4] == ["CFG", "DISC", "EXP", "APR"]
    assert AREAS[: len(CORE_AREAS)] == CORE_AREAS
    assert "PIN" in AREAS and "PIN" not in CORE_AREAS


def test_a_requirement_carries_level_rule_and_observation():
    apr2 = requirement("APR-2")
    assert (apr2.area, apr2.level, apr2.profile) == ("APR", "MUST", None)
    assert apr2.rule.startswith("Approval is default-deny")
    assert "Journal count" in apr2.observed


def test_bold_markers_are_removed_from_the_rule_text():
    assert "**" not in requirement("DISC-8").rule
    assert "Decision:" in requirement("DISC-8").rule


def test_profile_rows_name_their_profile():
    assert requirement("PIN-1").profile == "pinning"
    assert requirement("FLAG-1").level == "SHOULD"
    assert "journal" in requirement("PIN-1").observed  # the optional How column


def test_unknown_id_is_a_clear_key_error():
    with pytest.raises(KeyError, match="unknown requirement ID 'NOPE-1'"):
        requirement("NOPE-1")


SMALL = """# title
## ABC: things

| ID | Level | Rule | How |
|---|---|---|---|
| ABC-1 | MUST | Do **it**. | Look. |
| ABC-2 | INFO | Measure. | Report. |

## Optional profiles, elsewhere

| ID | Profile | Level | Rule |
|---|---|---|---|
| XY-1 | `xy` | SHOULD | Maybe. |
"""


def test_parse_a_small_catalog():
    parsed = parse_catalog(SMALL)
    assert list(parsed) == ["ABC-1", "ABC-2", "XY-1"]
    assert parsed["ABC-1"].rule == "Do it."
    assert parsed["XY-1"].profile == "xy"


@pytest.mark.parametrize(
    "row, message",
    [
        ("| ABC-1 | MAY | x | y |", "level 'MAY'"),
        ("| ABC-1 | MUST | x | y |\n| ABC-1 | MUST | x | y |", "twice"),
    ],
)
def test_malformed_catalogs_are_refused(row, message):
    with pytest.raises(ValueError, match=message):
        parse_catalog("## ABC: t\n" + row)
