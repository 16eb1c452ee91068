"""The mock model service: a model that calls tools on cue, over three APIs.

Strategy: `MockResponses` is a real HTTP server on 127.0.0.1 (for any host, in any
language) and `responses_router` is a respx router (for in-process httpx clients); both
call the same `ResponsesService`, so they answer alike. It speaks the OpenAI Responses API
(`POST /v1/responses`), OpenAI Chat Completions (`POST /v1/chat/completions`) and the
Anthropic Messages API (`POST /v1/messages`), streaming or not, from one script and into
one journal. What the model says comes from a script of `Step`s (see
`mcp_host_conformance.mocks.responses.script`); with no script it plays an autopilot that
calls each offered MCP tool once and then answers in text. Every request is journalled
whole (headers, parsed body, which API) before it is judged, so a case sees what a host
sent even when the service rejected it.

    with MockResponses() as model:
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")]
        )
        ... point the host at model.url (OpenAI) or model.anthropic_url with model.api_key ...
        model.requests()   # the bodies it received

Standalone: `python -m mcp_host_conformance.mocks.responses [--script FILE]` prints one
JSON line with the URLs, key and journal URL, then serves until Ctrl-C / SIGTERM.

Layout: `mock` (MockResponses, responses_router), `service` (request handling, no
transport), `faces` (each API's authentication, checks and answers), `wire`, `wire_chat`,
`wire_messages` (each API's shapes and rejections, pure), `script` (Step and the planner,
pure), `bodies` (reading a request of any of the three APIs, pure), `__main__`
(standalone).
"""

from mcp_host_conformance.mocks.responses.bodies import (
    as_responses,
    function_call_outputs,
    function_calls,
    input_items,
    instructions,
    label,
    offered_functions,
    offered_mcp_tools,
    offered_tools,
    tool_outputs,
    user_texts,
)
from mcp_host_conformance.mocks.responses.mock import MockResponses, responses_router
from mcp_host_conformance.mocks.responses.script import Step, script_from_json
from mcp_host_conformance.mocks.responses.service import ResponsesService
from mcp_host_conformance.mocks.responses.wire import parse_sse

__all__ = [
    "MockResponses",
    "ResponsesService",
    "Step",
    "as_responses",
    "function_call_outputs",
    "function_calls",
    "input_items",
    "instructions",
    "label",
    "offered_functions",
    "offered_mcp_tools",
    "offered_tools",
    "parse_sse",
    "responses_router",
    "script_from_json",
    "tool_outputs",
    "user_texts",
]
