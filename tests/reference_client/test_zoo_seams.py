"""Every seam the broken-client zoo patches exists in the reference client and is public.

A seam is the dotted path a broken client patches: if a rename left it dangling, the broken
client would patch nothing (or fail at start) and its bug would silently be gone. (Import
cycles and the dependency direction are checked for the whole package in
tests/test_import_graph.py.)
"""

from __future__ import annotations

import pkgutil

import pytest

from mcp_host_conformance.zoo import BROKEN

PREFIX = "mcp_host_conformance.reference_client"


def seams() -> list[tuple[str, str]]:
    return sorted({(seam.target, name) for name, c in BROKEN.items() for seam in c.seams})


@pytest.mark.parametrize(("target", "client"), seams())
def test_every_zoo_seam_exists_and_is_public(target: str, client: str) -> None:
    assert target.startswith(PREFIX + "."), f"{client} patches {target}, outside the host"
    try:
        pkgutil.resolve_name(target)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"broken client {client} patches {target}, which does not exist ({exc})")
    for part in target.removeprefix(PREFIX + ".").split("."):
        dunder = part.startswith("__") and part.endswith("__")
        assert dunder or not part.startswith("_"), f"{client} patches a private name: {target}"


def witnesses() -> list[tuple[str, str]]:
    return sorted(
        {(w, name) for name, c in BROKEN.items() for seam in c.seams for w, _ in seam.witnesses}
    )


@pytest.mark.parametrize(("target", "client"), witnesses())
def test_every_watched_function_exists_and_is_public(target: str, client: str) -> None:
    """A `same_until` seam's watched function may be a library's (httpx's `send`): it must
    exist, or the traced run would ask nothing and the client's cases would go unselected."""
    try:
        pkgutil.resolve_name(target)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"broken client {client} watches {target}, which does not exist ({exc})")
    for part in target.split("."):
        dunder = part.startswith("__") and part.endswith("__")
        assert dunder or not part.startswith("_"), f"{client} watches a private name: {target}"
