"""The suite fails nothing against an accepted variant: the reference client with one
behaviour changed in a way the rules allow (`tests/zoo/variants.py`: the confirmation's
arguments in the seed's quoted form and a warning in other words; a host that never resumes
an SSE stream; structuredContent shown beside the text). A case that fails one checks the
reference client's way of meeting a rule, not the rule.

Strategy: the same whole-suite runs as the zoo's self-test (`tests/test_zoo.py`), started
together from one session fixture, in the zoo's xdist group.
"""

from __future__ import annotations

import pytest

from mcp_host_conformance.zoo.variants import VARIANTS
from tests import test_zoo

pytestmark = pytest.mark.xdist_group("zoo")


def locator(name: str) -> str:
    return f"mcp_host_conformance.zoo.variants:{name.upper().replace('-', '_')}"


@pytest.fixture(scope="session")
def variant_runs(request, tmp_path_factory):
    selected = [
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_suite_fails_nothing"
        and hasattr(item, "callspec")
    ]
    runs = test_zoo.Runs([locator(n) for n in selected], tmp_path_factory.mktemp("variants"))
    yield runs
    runs.close()


@pytest.mark.selftest
@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_suite_fails_nothing(name, variant_runs):
    """No requirement fails against the variant, and every rule it exercises was checked."""
    variant = next(v for v in VARIANTS if v.name == name)
    run = variant_runs.get(locator(name))
    assert run.report is not None, f"{name}: no JSON report (exit {run.returncode})\n{run.output}"
    failed = run.failed_ids()
    lines = [f"{name}: a case fails a host that keeps the rules"]
    for rid in sorted(failed):
        lines.append(f"  {rid}: failed")
        lines += run.cases_failing(rid)
    assert not failed, "\n".join(lines)
    unchecked = {rid: run.outcome(rid) for rid in variant.exercises}
    unchecked = {rid: o for rid, o in unchecked.items() if o not in ("passed", "partial")}
    assert not unchecked, f"{name}: rules it exercises were not checked: {unchecked}"
    assert run.returncode == 0, f"{name}: exit status {run.returncode}\n{run.output[-2000:]}"
