"""The mock OpenAI Responses service: a model that calls tools on cue.

Strategy: `MockResponses` is a real HTTP server on 127.0.0.1 (for any host, in any
language) and `responses_router` is a respx router (for in-process httpx clients); both
call the same `ResponsesService`, so they answer alike. What the model says comes from a
script of `Step`s (see `mcp_host_conformance.mocks.responses.script`); with no script it
plays an autopilot that calls each offered MCP tool once and then answers in text. Every
request is journalled whole (headers and parsed body) before it is judged, so a case
sees what a host sent even when the service rejected it.

    with MockResponses() as model:
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")]
        )
        ... point the host at model.url with model.api_key ...
        model.requests()   # the bodies it received

Standalone: `python -m mcp_host_conformance.mocks.responses [--script FILE]` prints one
JSON line with the url, key and journal URL, then serves until Ctrl-C / SIGTERM.

Layout: `mock` (MockResponses, responses_router), `service` (request handling, no
transport), `wire` (the API's shapes and rejections, pure), `script` (Step and the body
readers, pure), `threaded_http` (the HTTP server), `__main__` (standalone).
"""

from mcp_host_conformance.mocks.responses.mock import MockResponses, responses_router
from mcp_host_conformance.mocks.responses.script import (
    Step,
    function_call_outputs,
    function_calls,
    input_items,
    label,
    offered_mcp_tools,
    offered_tools,
    script_from_json,
)
from mcp_host_conformance.mocks.responses.service import ResponsesService
from mcp_host_conformance.mocks.responses.wire import parse_sse

__all__ = [
    "MockResponses",
    "ResponsesService",
    "Step",
    "function_call_outputs",
    "function_calls",
    "input_items",
    "label",
    "offered_mcp_tools",
    "offered_tools",
    "parse_sse",
    "responses_router",
    "script_from_json",
]
