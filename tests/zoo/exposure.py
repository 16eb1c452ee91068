"""Broken clients for EXP: what the model receives."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import BrokenClient, replaced


@replaced("mcp_host_conformance.reference_client.naming.plain_name")
def _lowercase_server(original):
    def raw_name(server, tool):
        return original(server.lower(), tool)

    return raw_name


@replaced("mcp_host_conformance.reference_client.naming.hashed_name")
def _guessed_name(original):
    from mcp_host_conformance.reference_client import naming

    del original

    def hashed_name(server, tool, attempt):
        # The forbidden "safe" guess: bad characters become "_", cut at 64; a clash gets a counter.
        guess = naming.DISALLOWED.sub("_", naming.plain_name(server, tool))[: naming.MAX_LENGTH]
        return guess if attempt == 0 else f"{guess[: naming.MAX_LENGTH - 4]}_{attempt}"

    return hashed_name


@replaced("mcp_host_conformance.reference_client.offering.function_tool")
def _strict(original):
    def function_tool(server, tool, exposed_name):
        return {**original(server, tool, exposed_name), "strict": True}

    return function_tool


@replaced("mcp_host_conformance.reference_client.offering.function_tool")
def _no_note(original):
    def function_tool(server, tool, exposed_name):
        offered = original(server, tool, exposed_name)
        description = offered["description"]
        offered["description"] = description[: description.index(" (Arguments are sent")]
        return offered

    return function_tool


@replaced("mcp_host_conformance.reference_client.model.ModelClient.respond")
def _builtins_only_at_first(original):
    from mcp_host_conformance.reference_client import builtins

    async def respond(self, input_items, tools, instructions, tool_choice=None):
        if any(item.get("type") == "function_call_output" for item in input_items):
            tools = [t for t in tools if t.get("name") not in builtins.NAMES]
        return await original(self, input_items, tools, instructions, tool_choice)

    return respond


CLIENTS = [
    BrokenClient(
        "lowercases-server-name",
        "Names functions mcp_<server in lower case>_<tool>.",
        {"EXP-1"},
        (_lowercase_server,),
    ),
    BrokenClient(
        "drops-hash-suffix",
        "Replaces disallowed characters with `_` and cuts at 64 instead of adding a hash suffix.",
        {"EXP-2"},
        (_guessed_name,),
    ),
    BrokenClient(
        "strict-functions",
        "Offers MCP tools with `strict: true`.",
        {"EXP-3"},
        (_strict,),
    ),
    BrokenClient(
        "no-untrusted-note",
        "Leaves out the note that arguments go to the server and results are untrusted.",
        {"EXP-4"},
        (_no_note,),
    ),
    BrokenClient(
        "drops-builtins-after-a-call",
        "Stops offering its built-in tools once a tool output is in the conversation.",
        {"EXP-5"},
        (_builtins_only_at_first,),
    ),
]
