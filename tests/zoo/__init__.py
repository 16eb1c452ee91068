"""The zoo of broken clients: the reference client with one behaviour changed each.

Strategy: every requirement of the core profile has at least one broken client that the
suite must fail on it, and `fails` says exactly which requirement IDs a run against it
fails (checked by tests/test_zoo.py). Each client patches one seam of `reference_client`
(see `mcp_host_conformance.zoo.client`); the area modules hold them. `ADAPTERS`
(name -> zero-argument factory) is what the entry-point group `mcp_host_conformance.zoos`
loads, so any of them runs with `mcp-host-conformance run --client NAME`.
"""

from __future__ import annotations

from mcp_host_conformance.zoo import (
    approval,
    configuration,
    credentials,
    discovery,
    exposure,
    hostile_text,
    network,
    profiles,
    profiles_calls,
    profiles_network,
    results,
    retry,
    sessions,
    stdio,
    turn,
)
from mcp_host_conformance.zoo.client import BrokenAdapter, BrokenClient, by_name

__all__ = ["ADAPTERS", "BROKEN", "BrokenClient", "adapter", "broken_clients_for"]

BROKEN: dict[str, BrokenClient] = by_name(
    [
        *configuration.CLIENTS,
        *discovery.CLIENTS,
        *exposure.CLIENTS,
        *approval.CLIENTS,
        *results.CLIENTS,
        *retry.CLIENTS,
        *credentials.CLIENTS,
        *network.CLIENTS,
        *stdio.CLIENTS,
        *sessions.CLIENTS,
        *hostile_text.CLIENTS,
        *turn.CLIENTS,
        *profiles.CLIENTS,
        *profiles_calls.CLIENTS,
        *profiles_network.CLIENTS,
    ]
)

ADAPTERS = BROKEN  # a BrokenClient is its own zero-argument adapter factory


def adapter(name: str) -> BrokenAdapter:
    """The adapter of the broken client `name` (applies its patches to this process)."""
    return BROKEN[name]()


def broken_clients_for(requirement_id: str) -> list[str]:
    return sorted(name for name, client in BROKEN.items() if requirement_id in client.fails)
