"""Broken clients for EXP: what the model receives."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import BrokenClient, pure, replaced, replaced_when


@replaced("mcp_host_conformance.reference_client.naming.plain_name")
@pure
def _lowercase_server(original):
    def raw_name(server, tool):
        return original(server.lower(), tool)

    return raw_name


@replaced("mcp_host_conformance.reference_client.naming.hashed_name")
@pure
def _guessed_name(original):
    from mcp_host_conformance.reference_client import naming

    del original

    def hashed_name(server, tool, attempt):
        # The forbidden "safe" guess: bad characters become "_", cut at 64; a clash gets a counter.
        guess = naming.DISALLOWED.sub("_", naming.plain_name(server, tool))[: naming.MAX_LENGTH]
        return guess if attempt == 0 else f"{guess[: naming.MAX_LENGTH - 4]}_{attempt}"

    return hashed_name


@replaced("mcp_host_conformance.reference_client.offering.function_tool")
@pure
def _strict(original):
    def function_tool(server, tool, exposed_name):
        return {**original(server, tool, exposed_name), "strict": True}

    return function_tool


@replaced("mcp_host_conformance.reference_client.offering.function_tool")
@pure
def _no_note(original):
    def function_tool(server, tool, exposed_name):
        offered = original(server, tool, exposed_name)
        description = offered["description"]
        offered["description"] = description[: description.index(" (Arguments are sent")]
        return offered

    return function_tool


def _after_a_call(original, self, input_items, *args, **kwargs) -> bool:
    return any(item.get("type") == "function_call_output" for item in input_items)


@replaced_when("mcp_host_conformance.reference_client.model.ModelClient.respond", _after_a_call)
def _builtins_only_at_first(original):
    from mcp_host_conformance.reference_client import builtins

    async def respond(self, input_items, tools, instructions, tool_choice=None):
        # after a call (`_after_a_call`): the built-in tools are no longer offered
        tools = [t for t in tools if t.get("name") not in builtins.NAMES]
        return await original(self, input_items, tools, instructions, tool_choice)

    return respond


@replaced("mcp_host_conformance.reference_client.naming.is_valid_name")
@pure
def _hash_at_64(original):
    return lambda name: original(name) and len(name) < 64  # off by one at the bound


@replaced("mcp_host_conformance.reference_client.naming.is_valid_name")
@pure
def _dollar_pattern(original):
    from mcp_host_conformance.reference_client import naming

    del original
    return lambda name: naming.NAME_PATTERN.match(name) is not None  # `$` accepts "x\n"


@replaced("mcp_host_conformance.reference_client.naming.hashed_name")
@pure
def _stripped_name(original):
    from mcp_host_conformance.reference_client import naming

    def hashed_name(server, tool, attempt):
        plain = naming.plain_name(server, tool)
        if not naming.DISALLOWED.search(plain):
            return original(server, tool, attempt)  # too long or a clash: hashed
        # Another "safe" guess for bad characters: drop them; a clash gets a counter.
        guess = naming.DISALLOWED.sub("", plain)[: naming.MAX_LENGTH]
        return guess if attempt == 0 else f"{guess[: naming.MAX_LENGTH - 3]}_{attempt + 1}"

    return hashed_name


@replaced("mcp_host_conformance.reference_client.naming.hashed_name")
def _process_hash(original):
    from mcp_host_conformance.reference_client import naming

    del original

    def hashed_name(server, tool, attempt):
        # Python's hash() of a string differs from one process to the next (PYTHONHASHSEED).
        digest = f"{hash((server, tool, attempt)) & 0xFFFFFFFF:08x}"
        prefix = naming.DISALLOWED.sub("_", naming.plain_name(server, tool))
        return f"{prefix[: naming.MAX_LENGTH - 9]}_{digest}"

    return hashed_name


_UNSUPPORTED = ("$schema", "format", "default", "examples")


def _cleaned(schema):
    if isinstance(schema, dict):
        return {k: _cleaned(v) for k, v in schema.items() if k not in _UNSUPPORTED}
    if isinstance(schema, list):
        return [_cleaned(v) for v in schema]
    return schema


@replaced("mcp_host_conformance.reference_client.offering.function_tool")
@pure
def _clean_schema(original):
    def function_tool(server, tool, exposed_name):
        offered = original(server, tool, exposed_name)
        offered["parameters"] = _cleaned(offered["parameters"])  # "for API compatibility"
        return offered

    return function_tool


@replaced("mcp_host_conformance.reference_client.offering.function_tool")
@pure
def _cut_description(original):
    def function_tool(server, tool, exposed_name):
        text = tool.get("description")
        if isinstance(text, str) and len(text) > 1024:
            tool = {**tool, "description": text[:1024]}
        return original(server, tool, exposed_name)

    return function_tool


@replaced("mcp_host_conformance.reference_client.turn.Conversation.offer")
def _builtins_only_without_mcp(original):
    from mcp_host_conformance.reference_client import builtins

    def offer(self, discovery):
        original(self, discovery)
        if discovery.offered:  # "MCP tools replace the built-in ones"
            self.tools = [t for t in self.tools if t.get("name") not in builtins.NAMES]

    return offer


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
    BrokenClient(
        "hashes-names-of-64",
        "Hash-suffixes a valid name of exactly 64 characters (the length bound off by one).",
        # the generated-names case (EXP-2's) also checks that a valid name is kept: its failure
        # names EXP-1, whose rule that is
        {"EXP-1"},
        (_hash_at_64,),
    ),
    BrokenClient(
        "pattern-allows-trailing-newline",
        "Checks names with re.match and `$`, so a tool name ending in a newline is kept.",
        {"EXP-2"},
        (_dollar_pattern,),
    ),
    BrokenClient(
        "strips-disallowed-characters",
        "Drops disallowed characters (a counter on a clash) instead of adding a hash suffix.",
        {"EXP-2"},
        (_stripped_name,),
    ),
    BrokenClient(
        "hashes-with-builtin-hash",
        "Makes the hash suffix with Python's hash(), which changes from process to process.",
        {"EXP-2"},
        (_process_hash,),
    ),
    BrokenClient(
        "cleans-schema-keywords",
        "Removes $schema, format, default and examples from input schemas.",
        {"EXP-3"},
        (_clean_schema,),
    ),
    BrokenClient(
        "cuts-long-descriptions",
        "Cuts a server's tool description to 1,024 characters.",
        {"EXP-4"},
        (_cut_description,),
    ),
    BrokenClient(
        "drops-builtins-with-mcp-tools",
        "Offers its built-in tools only when no MCP tool is registered.",
        {"EXP-5"},
        (_builtins_only_without_mcp,),
    ),
]
