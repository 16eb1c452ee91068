"""What a conformance case is, seen from pytest: the one home of these rules.

Strategy: the plugin (which runs cases), the reporting (which turns their verdicts into
outcomes) and the CLI (which lists them) all need to know the same few things about a
pytest item and the run's options; they read them here, so no module reaches into another
and no rule is written twice.

The plugin's options and markers carry one prefix (`--mcphc-client`, `mcphc_requirements`), so
they cannot collide with a project's own (`--run-slow`, a `requirements` marker) when pytest
loads both. A conformance case is any test with the `mcphc_requirements` marker, or any test
of the suite's own package (`mcp_host_conformance.conformance`, found by its folder), which
must carry the marker; a project's own folder that happens to be named `conformance` is not
the suite.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Final, TypeVar

import pytest

__all__ = [
    "EXPLORE_SCENARIOS",
    "EXPLORE_SEED",
    "MARK_EXPLORER",
    "MARK_NEEDS_CANCEL",
    "MARK_PROFILE",
    "MARK_REQUIREMENTS",
    "MARK_SLOW",
    "PREFIX",
    "SUITE_PACKAGE",
    "case_id",
    "case_id_from_nodeid",
    "flag",
    "in_suite",
    "is_case",
    "option",
    "requirement_ids",
    "strict_mode",
    "suite_dir",
]

T = TypeVar("T")

PREFIX: Final = "mcphc"  # of every option (`--mcphc-...`) and marker (`mcphc_...`) of the plugin
MARK_REQUIREMENTS: Final = f"{PREFIX}_requirements"
MARK_PROFILE: Final = f"{PREFIX}_profile"
MARK_SLOW: Final = f"{PREFIX}_slow"
MARK_NEEDS_CANCEL: Final = f"{PREFIX}_needs_cancel"
MARK_EXPLORER: Final = f"{PREFIX}_explorer"
# The explorer case's budget in every run: small, and the same scenarios on every run
EXPLORE_SCENARIOS: Final = 6
EXPLORE_SEED: Final = 1
SUITE_PACKAGE: Final = "mcp_host_conformance.conformance"


def flag(name: str) -> str:
    """The plugin's command-line option for `name` (`client_cmd` -> `--mcphc-client-cmd`)."""
    return f"--{PREFIX}-{name.replace('_', '-')}"


@functools.cache
def suite_dir() -> Path:
    """The folder of the suite's own cases (the installed package's, or the checkout's)."""
    spec = importlib.util.find_spec(SUITE_PACKAGE)
    assert spec is not None and spec.origin is not None, "the suite's package is part of ours"
    return Path(spec.origin).resolve().parent


def in_suite(path: str | Path) -> bool:
    """Whether `path` is the suite's own folder or inside it."""
    try:
        return Path(path).resolve().is_relative_to(suite_dir())
    except (OSError, RuntimeError):  # an unreadable path, a loop of links: not ours
        return False


def is_case(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARK_REQUIREMENTS) is not None or in_suite(item.path)


def requirement_ids(item: pytest.Item) -> list[str]:
    """Every ID named by the item's requirements markers, in order, once each."""
    ids: list[str] = []
    for mark in item.iter_markers(MARK_REQUIREMENTS):
        for arg in mark.args:
            for rid in [arg] if isinstance(arg, str) else list(arg):
                if rid not in ids:
                    ids.append(str(rid))
    return ids


def case_id_from_nodeid(nodeid: str) -> str:
    """A case's stable ID, "<module stem>::<test name>" (e.g.
    "test_approval::test_empty_answer_denies"), from its pytest node ID.

    Independent of where the package is installed, so a baseline file travels between
    machines; a class, if any, stays in the name ("test_approval::TestX::test_y[1]")."""
    path, _, rest = nodeid.partition("::")
    return f"{Path(path).stem}::{rest or Path(path).name}"


def case_id(item: pytest.Item) -> str:
    """The stable ID of a collected case (see `case_id_from_nodeid`)."""
    _, _, rest = item.nodeid.partition("::")
    return f"{Path(str(item.path)).stem}::{rest or item.name}"


def option(config: pytest.Config, name: str, default: T) -> T:
    """The value of the plugin's option `name` (`client` is `--mcphc-client`), or `default`
    when the option is not registered (the plugin is not loaded in this run)."""
    try:
        value: T = config.getoption(f"{PREFIX}_{name}")
    except ValueError:
        return default
    return value


def strict_mode(config: pytest.Config) -> bool:
    """Whether SHOULD failures fail the run: pytest's own `--strict` (pytest owns that option
    name: pytest 9 sets the "strict" ini value with it, pytest 8 has it as an option), so the
    suite reads pytest's flag rather than defining a second one."""
    try:
        if config.getini("strict"):
            return True
    except ValueError:  # pytest 8 has no "strict" ini value
        pass
    return bool(getattr(config.option, "strict", False))
