"""UNTR: results marked untrusted (optional profile `untrusted-marking`).

The catalog documents the marking (UNTR-1's decision): the output the model receives for a
call whose result came from a server says `untrusted: true`, as a member of a JSON object
output or as a line of its own before the server's content. Every shape a result can take
is tried in one turn (text, structured content only, an image that is omitted, a tool
error, a JSON-RPC error, a result over 64 KiB that is cut), because a host marks in one code
path and forgets another; and the marking must still be there when a reopened session
replays those outputs to the model (a host that marks only while sending, not in what it
saves, loses it across the restart).
"""

from __future__ import annotations

import pytest

from mcp_host_conformance.harness.cases.observe import (
    call_outputs,
    function_call_outputs,
    last_request,
)
from mcp_host_conformance.harness.cases.profile_support import untrusted_marking
from mcp_host_conformance.harness.verdicts.outcomes import check, precondition
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.named import CANARY_B64
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

pytestmark = pytest.mark.mcphc_profile("untrusted-marking")

# tool -> (its reply, the text of the server's content the marking must precede)
RESULTS = {
    "text": (Reply.text("UNTR text result", "second block"), "UNTR text result"),
    "structured": (Reply.structured_only({"UNTR": "structured result"}), "structured result"),
    "image": (Reply.image(CANARY_B64), ""),
    "tool-error": (Reply.tool_error("UNTR tool error"), "UNTR tool error"),
    "rpc-error": (Reply.rpc_error("UNTR rpc error"), "UNTR rpc error"),
    "big": (
        Reply(content=[{"type": "text", "text": "UNTR big result"}], pad_to=80 * 1024),
        "UNTR big result",
    ),
}


@pytest.mark.mcphc_requirements("UNTR-1")
def test_every_result_handed_to_the_model_is_marked_untrusted(host, http_mock, model):
    """Every result handed on is marked untrusted. **Decision:** as a member
    `"untrusted": true` of a JSON object output, or as a line `untrusted: true` before the
    server's content."""
    tools = [
        Tool(name, f"Answers with a {name} result.", reply=r) for name, (r, _c) in RESULTS.items()
    ]
    docs = http_mock(ServerSpec(tools=tools))
    host.add_http("docs", docs)
    running = host.start()
    model.script(
        [
            Step.calls([Step.call(server="docs", tool=t, arguments={}) for t in RESULTS]),
            Step.text("done"),
        ]
    )
    running.ask("use every tool")
    pairs = call_outputs(model)
    precondition(
        len(pairs) == len(RESULTS) and all(len(outputs) == 1 for _c, outputs in pairs),
        ids="RES-11",
        expected=f"{len(RESULTS)} calls, each with one paired output",
        actual=f"outputs per call {[len(o) for _c, o in pairs]}",
    )
    problems = {
        tool: untrusted_marking(outputs[0], content)
        for (tool, (_r, content)), (_call, outputs) in zip(RESULTS.items(), pairs, strict=True)
    }
    unmarked = {tool: why for tool, why in problems.items() if why}
    check(
        not unmarked,
        ids="UNTR-1",
        expected="every output of a server's result marked `untrusted: true` before its content",
        actual="; ".join(f"{tool}: {why}" for tool, why in unmarked.items()),
    )

    stopped = running.stop()
    precondition(
        stopped.session_id is not None,
        ids="SESS-2",
        expected="the session can be reopened (stop gave its id)",
        actual="no session id",
    )
    reopened = host.start(resume=stopped.session_id)
    model.script([Step.text("noted")])
    reopened.ask("what did the tools say?")
    replayed = function_call_outputs(last_request(model))
    ids = [call["call_id"] for call, _outputs in pairs]
    lost = {
        tool: untrusted_marking(replayed.get(call_id), content) or ""
        for (tool, (_r, content)), call_id in zip(RESULTS.items(), ids, strict=True)
    }
    lost = {tool: why for tool, why in lost.items() if why}
    check(
        not lost,
        ids="UNTR-1",
        expected="the reopened session replays every output still marked untrusted",
        actual="; ".join(f"{tool}: {why}" for tool, why in lost.items()),
    )
