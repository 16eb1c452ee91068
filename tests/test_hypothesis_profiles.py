"""The hypothesis profile named by HYPOTHESIS_PROFILE is the one the tests run with."""

from __future__ import annotations

import os

from hypothesis import settings


def test_the_profile_named_in_the_environment_is_loaded():
    expected = os.environ.get("HYPOTHESIS_PROFILE", "dev")
    assert settings.get_profile(expected) == settings.default
    if expected == "ci":
        assert settings.default.derandomize
