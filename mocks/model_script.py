"""Kept for existing imports: the model script lives in `mocks.responses.script`."""

from mcp_host_conformance.mocks.responses.script import (
    MCP_LABEL_PREFIX,
    Call,
    Plan,
    Step,
    arguments_for_schema,
    function_call_outputs,
    function_calls,
    input_items,
    label,
    offered_mcp_tools,
    offered_tools,
    plan_autopilot,
    plan_reply,
    script_from_json,
)

__all__ = [
    "MCP_LABEL_PREFIX",
    "Call",
    "Plan",
    "Step",
    "arguments_for_schema",
    "function_call_outputs",
    "function_calls",
    "input_items",
    "label",
    "offered_mcp_tools",
    "offered_tools",
    "plan_autopilot",
    "plan_reply",
    "script_from_json",
]
