"""What a conformance case is, seen from pytest: the one home of these rules.

Strategy: the plugin (which runs cases), the reporting (which turns their verdicts into
outcomes) and the CLI (which lists them) all need to know the same few things about a
pytest item and the run's options; they read them here, so no module reaches into another
and no rule is written twice.

A conformance case is any test with a `requirements` marker, or any test in a module of a
directory named `conformance`; the latter must carry the marker.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import pytest

__all__ = [
    "case_id",
    "case_id_from_nodeid",
    "is_case",
    "option",
    "requirement_ids",
    "strict_mode",
]

T = TypeVar("T")


def is_case(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("requirements") is not None
        or "conformance" in Path(str(item.path)).parent.parts
    )


def requirement_ids(item: pytest.Item) -> list[str]:
    """Every ID named by the item's requirements markers, in order, once each."""
    ids: list[str] = []
    for mark in item.iter_markers("requirements"):
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
    """An option's value, or `default` when the option is not registered (the plugin that
    registers it is not loaded in this run)."""
    try:
        value: T = config.getoption(name)
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
    return bool(option(config, "strict", False))
