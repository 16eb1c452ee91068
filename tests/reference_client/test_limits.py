from mcp_host_conformance.reference_client.limits import (
    MAX_DEFINITIONS_BYTES,
    MAX_SCHEMA_BYTES,
    MAX_TOOLS,
    check_tools,
    json_size,
    page_limit_reason,
)


def tool(name="t", schema=None, description="d"):
    return {
        "name": name,
        "description": description,
        "inputSchema": schema if schema is not None else {"type": "object"},
    }


def schema_of_size(size):
    base = {"type": "object", "description": ""}
    pad = size - json_size(base)
    return {"type": "object", "description": "x" * pad}


def test_json_size_is_compact_utf8():
    assert json_size({"a": "é"}) == len('{"a":"é"}'.encode())
    assert json_size([1, 2]) == 5


def test_ok_list():
    assert check_tools([tool("a"), tool("b")]) is None
    assert check_tools([]) is None


def test_tool_count_limit():
    assert check_tools([tool(f"t{i}") for i in range(MAX_TOOLS)]) is None
    reason = check_tools([tool(f"t{i}") for i in range(MAX_TOOLS + 1)])
    assert "129" in reason and "128" in reason


def test_schema_must_be_object():
    for bad in ([], "object", 3, None):
        reason = check_tools([{"name": "t", "inputSchema": bad}])
        assert "JSON object" in reason
    assert "no inputSchema" in check_tools([{"name": "t"}])


def test_schema_size_limit():
    assert json_size(schema_of_size(MAX_SCHEMA_BYTES)) == MAX_SCHEMA_BYTES
    assert check_tools([tool(schema=schema_of_size(MAX_SCHEMA_BYTES))]) is None
    reason = check_tools([tool(schema=schema_of_size(MAX_SCHEMA_BYTES + 1))])
    assert "16 KiB" in reason


def test_schema_size_counts_utf8_bytes():
    schema = {"type": "object", "description": "é" * (9 * 1024)}  # 9 K chars, 18 KiB bytes
    assert "16 KiB" in check_tools([tool(schema=schema)])


def test_definitions_total_limit():
    medium = schema_of_size(15 * 1024)
    assert check_tools([tool(f"t{i}", medium) for i in range(4)]) is None
    reason = check_tools([tool(f"t{i}", medium) for i in range(5)])
    assert "64 KiB" in reason and str(MAX_DEFINITIONS_BYTES) in reason


def test_hostile_shapes_never_raise():
    assert check_tools("nope")
    assert check_tools([1])
    assert check_tools([{"inputSchema": {}}])
    assert check_tools([tool("a"), tool("a")])
    assert check_tools([tool(description=5)])
    assert check_tools([tool(schema={"x": float("nan")})])
    deep: dict = {}
    cur = deep
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    assert check_tools([tool(schema=deep)])


def test_page_reason_names_limit():
    assert "16" in page_limit_reason()
