"""A broken client defined outside the zoo, as a project's own tests would define one
(used by test_broken_client_outside_the_zoo.py)."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import BrokenClient, constant

# Breaks nothing CRED-5 looks at: a longer stop timeout of the reference adapter.
SLOW_TO_STOP = BrokenClient(
    name="outside-the-zoo",
    description="the reference client with a longer stop timeout, defined outside the zoo",
    fails={"SESS-1"},
    seams=(constant("mcp_host_conformance.reference_client.adapter.STOP_TIMEOUT", 31.0),),
)
