"""Server specs and one-call runs that several conformance cases build the same way.

Strategy: a case states the rule it checks; the spec of an ordinary server and the usual
"one approved call, then stop" run are not part of any rule, so they live here once and
a case that needs something else builds it itself.
"""

from __future__ import annotations

import shlex
import socket
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.cases.hostrun import Host, Running
from mcp_host_conformance.harness.cases.mock_contract import ModelService, StdioServerMock
from mcp_host_conformance.harness.contract.adapter import StdioServer, Turn
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

__all__ = ["closed_port_url", "gone_after_add", "one_approved_query", "tool_spec"]


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


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was just released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def gone_after_add(
    host: Host, name: str, mock: StdioServerMock, folder: Path, args: tuple[str, ...] = ()
) -> Path:
    """Configure `name` as a command that runs `mock` while the server is added, and is missing
    from then on (a server uninstalled after it was configured): a host that syncs at add
    (verified-add) saves it, and every host finds the command missing at start. The path."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "mcphc-missing-command"
    script.write_text("#!/bin/sh\nexec " + " ".join(map(shlex.quote, mock.command)) + ' "$@"\n')
    script.chmod(0o755)
    host.add(StdioServer(name=name, command=str(script), args=args))
    script.unlink()
    return script
