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

# Declares the catalog's 10 s connect timeout (describe() is the reference's) but keeps 3 s
# when started with none: only a slow case that observes the real default sees it.
SHORT_REAL_DEFAULT = BrokenClient(
    name="short-real-default",
    description="the reference client whose own connect timeout is 3 s, declared as 10 s",
    fails={"DISC-3"},
    seams=(constant("mcp_host_conformance.reference_client.engine.DEFAULT_CONNECT_TIMEOUT", 3.0),),
)
