"""What real servers send, the mocks send too: every field of a tool definition, a name of
their own, `$ref`/`$defs` schemas as Pydantic writes them, JSON bodies chunked and SSE
streams with a Content-Length, progress while a call works, and a refused resumption."""

from __future__ import annotations

import json
import subprocess

import pytest

from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool, spec_from_dict
from mcp_host_conformance.mocks.stdio_server import StdioMock
from tests.mocks.conftest import parse_messages

FULL = Tool(
    "lookup",
    "Looks a record up.",
    input_schema={
        "$defs": {"Key": {"type": "object", "properties": {"id": {"type": "string"}}}},
        "type": "object",
        "properties": {"key": {"$ref": "#/$defs/Key"}},
        "required": ["key"],
    },
    annotations={"readOnlyHint": True, "title": "Lookup (annotation)"},
    title="Record lookup",
    output_schema={"type": "object", "properties": {"found": {"type": "boolean"}}},
    icons=[{"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml"}],
    meta={"com.example/version": "3"},
    reply=Reply(content=[{"type": "text", "text": "found"}], structured={"found": True}),
)


def test_a_tool_definition_carries_every_field(start_mock, raw):
    client = raw(start_mock(ServerSpec(name="shapes", tools=[FULL])))
    client.initialize()
    (tool,) = client.request("tools/list")["result"]["tools"]
    assert tool["title"] == "Record lookup"
    assert tool["outputSchema"] == FULL.output_schema
    assert tool["icons"] == FULL.icons and tool["_meta"] == {"com.example/version": "3"}
    assert tool["annotations"]["readOnlyHint"] is True
    assert tool["inputSchema"]["$defs"]["Key"]["properties"] == {"id": {"type": "string"}}
    assert tool["inputSchema"]["properties"]["key"] == {"$ref": "#/$defs/Key"}


def test_a_server_names_itself_however_it_is_configured(start_mock, raw):
    info = {"name": "Acme Knowledge Base", "title": "Acme KB", "version": "7.1.0"}
    client = raw(start_mock(ServerSpec(name="docs", server_info=info)))
    assert client.initialize()["result"]["serverInfo"] == info


def test_a_json_body_can_be_chunked(start_mock, raw):
    client = raw(start_mock(ServerSpec(response_mode="json", framing="chunked", tools=[FULL])))
    client.initialize()
    response = client.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert response.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in response.headers
    assert parse_messages(response)[0]["result"]["tools"][0]["name"] == "lookup"


def test_an_sse_stream_can_come_whole_with_a_length(start_mock, raw):
    client = raw(start_mock(ServerSpec(framing="length", tools=[FULL])))
    client.initialize()
    response = client.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert response.headers["content-type"].startswith("text/event-stream")
    assert int(response.headers["content-length"]) == len(response.content)
    assert parse_messages(response)[0]["result"]["tools"][0]["name"] == "lookup"


def _call(token: object | None) -> dict:
    params: dict = {"name": "slow", "arguments": {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}


SLOW = Tool("slow", reply=Reply(content=[{"type": "text", "text": "done"}], progress=3))


def test_a_call_that_asks_for_progress_gets_it_before_its_result(start_mock, raw):
    client = raw(start_mock(ServerSpec(tools=[SLOW])))
    client.initialize()
    messages = parse_messages(client.post(_call("tok-1")))
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [None]
    assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "tok-1" for m in messages[:3])
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]
    # one that does not ask gets none, as real servers do
    assert len(parse_messages(client.post(_call(None)))) == 1


def test_a_stdio_server_sends_progress_lines_before_the_result(tmp_path):
    mock = StdioMock(ServerSpec(tools=[SLOW]), tmp_path)
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        json.dumps(_call(7)),
    ]
    done = subprocess.run(
        mock.command,
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r.get("method") for r in replies[1:]] == ["notifications/progress"] * 3 + [None]
    assert replies[-1]["id"] == 9


def test_a_server_that_supports_no_resumption_refuses_the_get(start_mock, raw):
    spec = ServerSpec(tools=[Tool("query")], misbehaviour=Misbehaviour(poll_call="refuse-resume"))
    mock = start_mock(spec)
    client = raw(mock)
    client.initialize()
    primed = client.post({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}})
    event_id = next(
        line.split(":", 1)[1].strip() for line in primed.text.splitlines() if line.startswith("id:")
    )
    resumed = client.client.get(
        client.url,
        headers={
            "accept": "text/event-stream",
            "mcp-session-id": str(client.session_id),
            "last-event-id": event_id,
        },
    )
    assert resumed.status_code == 405
    assert mock.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "sse-resume-refused"
    )


@pytest.mark.parametrize(
    "field, value",
    [("framing", "gzip"), ("server_info", "acme")],
)
def test_the_new_fields_are_checked(field, value):
    from mcp_host_conformance.mocks.spec import SpecError

    with pytest.raises(SpecError, match=f"spec.{field}"):
        spec_from_dict({field: value})
