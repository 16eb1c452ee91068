"""Server specs and one-call runs that several conformance cases build the same way.

Strategy: a case states the rule it checks; the spec of an ordinary server and the usual
"one approved call, then stop" run are not part of any rule, so they live here once and
a case that needs something else builds it itself.
"""

from __future__ import annotations

from typing import Any

from mcp_host_conformance.harness.cases.hostrun import Host, Running
from mcp_host_conformance.harness.cases.mock_contract import ModelService
from mcp_host_conformance.harness.contract.adapter import Turn
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

__all__ = ["one_approved_query", "tool_spec"]


def tool_spec(name: str, **misbehaviour: Any) -> ServerSpec:
    """A server `name` with one tool `query` answering `answer from NAME`, misbehaving as told."""
    return ServerSpec(
        name=name,
        tools=[Tool("query", "Looks something up.", reply=Reply.text(f"answer from {name}"))],
        misbehaviour=Misbehaviour(**misbehaviour),
    )


def one_approved_query(
    host: Host, model: ModelService, server: str, offer_rule: str | None = None
) -> tuple[Running, Turn]:
    """Script one call of `server`'s `query`, start, ask (approved), stop; (running, turn).
    `offer_rule`: as for `Running.ask`."""
    model.script([Step.call(server=server, tool="query", arguments={}), Step.text("done")])
    running = host.start()
    turn = running.ask("use it", approve="y", offer_rule=offer_rule)
    running.stop()
    return running, turn
