"""What a broken client is: the reference client with one seam patched.

Strategy: a broken client never copies reference code. It names one or a few seams of
`reference_client` (a module attribute: a function, a method, a constant) and, for each, a
function that takes the original and returns its replacement (usually a thin wrapper that
changes one behaviour). The patches are applied with `unittest.mock.patch(...).start()`
when the broken adapter is built: the suite builds its adapter once per process and each run
against a broken client is its own process, so a process-wide patch is what we want. Two
different broken clients in one process would mix their bugs, so that is refused.

A `BrokenClient` is also its own zero-argument factory (calling it gives the adapter), so a
mapping of them is what the entry-point group `mcp_host_conformance.zoos` loads.
"""

from __future__ import annotations

import dataclasses
import pkgutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from unittest import mock

__all__ = ["BrokenAdapter", "BrokenClient", "Seam", "constant", "replaced"]


@dataclass(frozen=True)
class Seam:
    """One patched attribute: `target` is its dotted path, `replacement(original)` the new value."""

    target: str
    replacement: Callable[[Any], Any]


def constant(target: str, value: Any) -> Seam:
    return Seam(target, lambda _original: value)


def replaced(target: str) -> Callable[[Callable[[Any], Any]], Seam]:
    """Decorator: `@replaced("mod.func") def make(original): return new` -> a Seam."""

    def decorate(make: Callable[[Any], Any]) -> Seam:
        return Seam(target, make)

    return decorate


@dataclass(frozen=True)
class BrokenClient:
    name: str
    description: str
    fails: frozenset[str]  # exactly the requirement IDs the suite must fail against it
    seams: tuple[Seam, ...]
    target: str = ""  # the requirement it was made for (one of `fails`)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fails", frozenset(self.fails))
        object.__setattr__(self, "seams", tuple(self.seams))
        if not self.target:
            object.__setattr__(self, "target", min(self.fails))
        if self.target not in self.fails:
            raise ValueError(f"broken client {self.name}: its target {self.target} is not in fails")

    def __call__(self) -> BrokenAdapter:
        return BrokenAdapter(self)


_applied: str | None = None


def apply(client: BrokenClient) -> None:
    """Start every patch of `client`, once per process."""
    global _applied
    if _applied == client.name:
        return
    if _applied is not None:
        raise RuntimeError(
            f"broken client {_applied} is already patched into this process; "
            f"run {client.name} in a process of its own"
        )
    for seam in client.seams:
        original = pkgutil.resolve_name(seam.target)
        mock.patch(seam.target, seam.replacement(original)).start()
    _applied = client.name


def _reference_adapter_class() -> type:
    from mcp_host_conformance.reference_client.adapter import ReferenceAdapter

    return ReferenceAdapter


class BrokenAdapter:
    """The reference adapter, with the broken client's patches applied and its own name."""

    def __init__(self, client: BrokenClient) -> None:
        apply(client)
        self.client = client
        self._reference = _reference_adapter_class()()

    def describe(self):
        from mcp_host_conformance.reference_client.adapter import INTERACTIVE_ADD

        return dataclasses.replace(
            self._reference.describe(),
            name=f"broken:{self.client.name}",
            # the person's own command runs in a process of its own: with the same patches
            interactive_add=[
                sys.executable,
                "-m",
                "mcp_host_conformance.zoo",
                self.client.name,
                *INTERACTIVE_ADD,
            ],
        )

    def add_server(self, home, server):
        return self._reference.add_server(home, server)

    def remove_server(self, home, name):
        return self._reference.remove_server(home, name)

    def list_servers(self, home):
        return self._reference.list_servers(home)

    def start(self, options):
        return self._reference.start(options)


def by_name(clients: Iterable[BrokenClient]) -> dict[str, BrokenClient]:
    found: dict[str, BrokenClient] = {}
    for client in clients:
        if client.name in found:
            raise ValueError(f"two broken clients named {client.name}")
        found[client.name] = client
    return found
