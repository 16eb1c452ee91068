"""Settings shared by the project's own tests.

Strategy: hypothesis profiles live here, in one place, and `HYPOTHESIS_PROFILE` picks one
(tox sets `ci`). Tests say only what is particular to them (`deadline=None` where an
example starts a process); how many examples to run is the profile's business:
- `dev` (default): hypothesis's random search, 100 examples, for the edit-run loop;
- `ci`: 200 examples, derandomized, so a verdict never changes between two CI runs of the same code;
- `fuzz`: 5,000 random examples per property, run by hand before a release
  (`HYPOTHESIS_PROFILE=fuzz pytest tests -k fuzz`).
The conformance suite's own profile (for the cases run against a host) is registered by
the harness's pytest plugin, not here: a user's run never reads this file.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100)
settings.register_profile(
    "ci",
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("fuzz", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def selftest_runs(request, tmp_path_factory):
    """The self-test's whole-suite runs (tests/test_zoo.py, tests/test_accepted_variants.py)
    and the monitors' one-case proof runs (tests/test_monitors_outside.py), every selected one
    started from here, in one pool, when the first of them is needed."""
    from tests import test_zoo  # imports the zoo and the suite: only when a self-test runs

    items = request.session.items
    runs = test_zoo.Runs(
        test_zoo.selected_runs(items),
        tmp_path_factory.mktemp("zoo"),
        test_zoo.selected_proofs(items),
    )
    yield runs
    runs.close()
