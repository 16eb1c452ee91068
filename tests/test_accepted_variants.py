"""The suite fails nothing against an accepted variant but the rules of presentation it
does not follow: the reference client with one behaviour changed in a way the rules allow,
or presented as real hosts present it (`tests/zoo/variants.py`: the confirmation's
arguments in the seed's quoted form and a warning in other words; a host that never resumes
an SSE stream; structuredContent shown beside the text; no status word to the model; a
menu for approval; no arguments shown; a turn that ends on a refusal; status lines of its
own). A case that fails one otherwise checks the reference client's way of meeting a rule,
not the rule.

Strategy: the same suite runs as the zoo's self-test (`tests/test_zoo.py`), in the same pool
(the session fixture `selftest_runs`, tests/conftest.py), in the zoo's xdist group, with the
same impact selection: a variant is the reference client with seams, so a case that executes
none of them runs as against the reference, and only the others run. A rule it exercises must
then be checked by a case that executed one of its seams (not by the reference's outcome).
"""

from __future__ import annotations

import pytest

from mcp_host_conformance.zoo.variants import VARIANTS
from tests import test_zoo

pytestmark = pytest.mark.xdist_group("zoo")


@pytest.mark.selftest
@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_suite_fails_nothing(name, selftest_runs):
    """No requirement fails against the variant but the rules of presentation it does not
    follow (`breaks`, exactly), and every rule it exercises was checked."""
    variant = next(v for v in VARIANTS if v.name == name)
    run = selftest_runs.get(test_zoo.variant_locator(name))
    assert run.report is not None, f"{name}: no JSON report (exit {run.returncode})\n{run.output}"
    failed = run.failed_ids()
    lines = [f"{name}: a case fails a host that keeps the rules"]
    for rid in sorted(failed - variant.breaks):
        lines.append(f"  {rid}: failed")
        lines += run.cases_failing(rid)
    assert not failed - variant.breaks, "\n".join(lines)
    kept = sorted(variant.breaks - failed)
    assert not kept, f"{name}: the rules of the presentation it breaks did not fail: {kept}"
    unchecked = {
        rid: run.outcome(rid)
        for rid in variant.exercises - variant.breaks  # those failed, as they must: checked
        if run.requirement_outcome(rid) not in ("passed", "partial")
    }
    assert not unchecked, f"{name}: rules it exercises were not checked: {unchecked}"
    assert (run.returncode == 0) == (not variant.breaks), (
        f"{name}: exit status {run.returncode}\n{run.output[-2000:]}"
    )
