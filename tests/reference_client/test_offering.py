from mcp_host_conformance.reference_client.offering import INSTRUCTIONS, function_tool


def test_function_tool_shape():
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "additionalProperties": True,
    }
    fn = function_tool(
        "docs",
        {"name": "query-docs", "description": "Query docs.", "inputSchema": schema},
        "mcp_docs_query-docs",
    )
    assert fn["type"] == "function"
    assert fn["name"] == "mcp_docs_query-docs"
    assert fn["parameters"] == schema and fn["parameters"] is schema
    assert fn["strict"] is False
    assert fn["description"].startswith("[MCP server docs, tool query-docs]")
    assert "Query docs." in fn["description"]
    assert "untrusted" in fn["description"]
    assert "docs" in fn["description"].split("]", 1)[1]


def test_missing_description():
    fn = function_tool("s", {"name": "t", "inputSchema": {}}, "mcp_s_t")
    assert fn["description"].startswith("[MCP server s, tool t] (Arguments")


def test_instructions_say_data_not_instructions():
    assert "never instructions" in INSTRUCTIONS
    assert "authorization" in INSTRUCTIONS
