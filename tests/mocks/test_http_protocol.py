"""The HTTP mock speaks Streamable HTTP MCP correctly, seen through raw httpx."""

from __future__ import annotations

import json

import httpx
import pytest

from mcp_host_conformance.mocks.spec import MISSING, Reply, ServerSpec, Tool
from tests.mocks.conftest import parse_messages


def _spec(**kw):
    tools = kw.pop(
        "tools", [Tool("echo", "echoes"), Tool("hello", "greets", reply=Reply.text("hi", "there"))]
    )
    return ServerSpec(name="proto", tools=tools, **kw)


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_initialize_answers_the_clients_version_and_issues_a_session(start_mock, raw, mode):
    mock = start_mock(_spec(response_mode=mode, instructions="be nice"))
    client = raw(mock)
    reply = client.initialize("2025-03-26")
    assert reply["result"]["protocolVersion"] == "2025-03-26"
    assert reply["result"]["capabilities"]["tools"] == {"listChanged": True}
    assert reply["result"]["serverInfo"]["name"] == "proto"
    assert reply["result"]["instructions"] == "be nice"
    assert client.session_id
    assert mock.journal.methods() == ["initialize", "notifications/initialized"]


def test_unsupported_version_gets_the_latest(start_mock, raw):
    client = raw(start_mock(_spec()))
    assert client.initialize("1999-01-01")["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_response_mode_sets_the_content_type(start_mock, raw, mode):
    client = raw(start_mock(_spec(response_mode=mode)))
    client.initialize()
    response = client.post({"jsonrpc": "2.0", "id": 5, "method": "ping"})
    expected = "text/event-stream" if mode == "sse" else "application/json"
    assert response.headers["content-type"].startswith(expected)
    assert parse_messages(response) == [{"jsonrpc": "2.0", "id": 5, "result": {}}]


def test_notification_gets_202(start_mock, raw):
    client = raw(start_mock(_spec()))
    client.initialize()
    response = client.post({"jsonrpc": "2.0", "method": "notifications/whatever"})
    assert response.status_code == 202 and response.content == b""


def test_tools_list_pages_with_opaque_cursor(start_mock, raw):
    tools = [Tool(f"t{i}") for i in range(5)]
    client = raw(start_mock(_spec(tools=tools, page_size=2)))
    client.initialize()
    names, cursor, pages = [], None, 0
    while True:
        reply = client.request("tools/list", {"cursor": cursor} if cursor else None)
        pages += 1
        names += [t["name"] for t in reply["result"]["tools"]]
        cursor = reply["result"].get("nextCursor")
        if not cursor:
            break
        assert "2" not in cursor or not cursor.isdigit()
    assert names == [f"t{i}" for i in range(5)] and pages == 3


def test_bad_cursor_is_invalid_params(start_mock, raw):
    client = raw(start_mock(_spec()))
    client.initialize()
    assert client.request("tools/list", {"cursor": "nope!"})["error"]["code"] == -32602


def test_raw_schema_and_annotations_are_sent_as_they_are(start_mock, raw):
    tools = [
        Tool("arr", input_schema=["not", "an", "object"]),
        Tool("none", input_schema=MISSING),
        Tool("ro", annotations={"readOnlyHint": True}),
    ]
    client = raw(start_mock(_spec(tools=tools)))
    client.initialize()
    listed = client.request("tools/list")["result"]["tools"]
    assert listed[0]["inputSchema"] == ["not", "an", "object"]
    assert "inputSchema" not in listed[1]
    assert listed[2]["annotations"] == {"readOnlyHint": True}


def test_call_echoes_arguments_as_compact_json(start_mock, raw):
    client = raw(start_mock(_spec()))
    client.initialize()
    reply = client.request("tools/call", {"name": "echo", "arguments": {"q": "a b", "n": [1, 2]}})
    assert reply["result"]["content"] == [{"type": "text", "text": '{"q":"a b","n":[1,2]}'}]


@pytest.mark.parametrize(
    "reply, expected",
    [
        (
            Reply.text("a", "b"),
            {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        ),
        (Reply.structured_only({"k": 1}), {"content": [], "structuredContent": {"k": 1}}),
        (Reply.tool_error("bad"), {"content": [{"type": "text", "text": "bad"}], "isError": True}),
        (
            Reply.image("AAAA"),
            {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
        ),
        (
            Reply.resource_blob("file:///b", "QkxPQg=="),
            {
                "content": [
                    {
                        "type": "resource",
                        "resource": {
                            "uri": "file:///b",
                            "blob": "QkxPQg==",
                            "mimeType": "application/octet-stream",
                        },
                    }
                ]
            },
        ),
    ],
)
def test_call_replies_as_specified(start_mock, raw, reply, expected):
    client = raw(start_mock(_spec(tools=[Tool("t", reply=reply)])))
    client.initialize()
    assert client.request("tools/call", {"name": "t", "arguments": {}})["result"] == expected


def test_jsonrpc_error_reply(start_mock, raw):
    client = raw(start_mock(_spec(tools=[Tool("t", reply=Reply.rpc_error("boom", code=-32000))])))
    client.initialize()
    assert client.request("tools/call", {"name": "t"})["error"] == {
        "code": -32000,
        "message": "boom",
    }


def test_pad_to_grows_the_result(start_mock, raw):
    client = raw(
        start_mock(
            _spec(
                tools=[
                    Tool(
                        "big",
                        reply=Reply(content=[{"type": "text", "text": "head"}], pad_to=70_000),
                    )
                ]
            )
        )
    )
    client.initialize()
    result = client.request("tools/call", {"name": "big"})["result"]
    size = len(json.dumps(result, separators=(",", ":")))
    assert 69_000 < size < 71_000 and result["content"][0]["text"] == "head"


def test_errors_for_unknown_tool_and_method(start_mock, raw):
    client = raw(start_mock(_spec()))
    client.initialize()
    assert client.request("tools/call", {"name": "nope"})["error"]["code"] == -32602
    assert client.request("resources/list")["error"]["code"] == -32601
    assert (
        client.request("tools/call", {"name": "echo", "arguments": [1]})["error"]["code"] == -32602
    )
    assert client.request("tools/call", {"name": 7})["error"]["code"] == -32602


def test_invalid_json_is_a_parse_error_and_journalled(start_mock, raw):
    mock = start_mock(_spec())
    client = raw(mock)
    client.initialize()
    response = client.post(None, raw=b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    last = mock.journal.entries(kind="http")[-1]
    assert last.extra["error"] == "parse error" and last.extra["raw"].startswith('{"jsonrpc"')


@pytest.mark.parametrize(
    "message",
    [
        [],
        42,
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "str"},
        {"jsonrpc": "2.0", "id": 1},
    ],
)
def test_invalid_requests_get_32600_and_the_mock_survives(start_mock, raw, message):
    mock = start_mock(_spec())
    client = raw(mock)
    client.initialize()
    response = client.post(message)
    assert response.status_code == 400
    errors = response.json()
    errors = errors if isinstance(errors, list) else [errors]
    assert errors and all(e["error"]["code"] == -32600 for e in errors)
    assert client.request("ping")["result"] == {}


def test_batch_gets_one_reply_per_request(start_mock, raw):
    client = raw(start_mock(_spec(response_mode="json")))
    client.initialize()
    response = client.post(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/x"},
            {"jsonrpc": "2.0", "id": 2, "method": "nope"},
        ]
    )
    replies = response.json()
    assert [r["id"] for r in replies] == [1, 2] and replies[1]["error"]["code"] == -32601


def test_session_is_required_and_delete_ends_it(start_mock, raw):
    mock = start_mock(_spec())
    client = raw(mock)
    client.initialize()
    sid = client.session_id
    client.session_id = None
    assert client.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 400
    client.session_id = "unknown"
    assert client.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 404
    client.session_id = sid
    assert client.client.delete(mock.url, headers={"mcp-session-id": sid}).status_code == 200
    assert client.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 404
    assert client.client.delete(mock.url, headers={"mcp-session-id": sid}).status_code == 404


def test_journal_records_http_and_rpc_entries(start_mock, raw):
    mock = start_mock(_spec())
    client = raw(mock)
    client.initialize()
    client.post(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"x": 1}},
        },
        headers={"X-Token": "abc"},
    )
    call = mock.journal.entries("tools/call")[0]
    assert (
        call.kind == "rpc"
        and call.id == 9
        and call.params == {"name": "echo", "arguments": {"x": 1}}
    )
    assert call.headers["x-token"] == "abc"
    http = mock.journal.entries(kind="http")
    assert [e.http_method for e in http] == ["POST"] * 3
    assert http[-1].path == "/mcp" and http[-1].body_size > 0 and http[-1].connection
    assert http[-1].headers["x-token"] == "abc"


def test_journal_endpoint_and_reset(start_mock, raw):
    mock = start_mock(_spec())
    raw(mock).initialize()
    base = mock.url.rsplit("/", 1)[0]
    entries = httpx.get(base + "/__journal").json()
    assert [e["method"] for e in entries if e["kind"] == "rpc"] == [
        "initialize",
        "notifications/initialized",
    ]
    assert httpx.post(base + "/__reset").status_code == 204
    assert httpx.get(base + "/__journal").json() == [] and mock.journal.is_empty()


def test_keep_alive_serves_many_requests_on_one_connection(start_mock, raw):
    mock = start_mock(_spec())
    client = raw(mock)
    client.initialize()
    for _ in range(5):
        client.request("ping")
    assert len({e.connection for e in mock.journal.entries(kind="http")}) == 1


def test_garbage_http_gets_400_and_the_mock_survives(start_mock, raw):
    import socket

    mock = start_mock(_spec())
    with socket.create_connection(("127.0.0.1", mock.port), timeout=5) as sock:
        sock.sendall(b"NONSENSE\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    raw(mock).initialize()


def test_other_paths_and_methods(start_mock):
    mock = start_mock(_spec())
    base = mock.url.rsplit("/", 1)[0]
    assert httpx.get(base + "/elsewhere").status_code == 404
    assert httpx.put(mock.url).status_code == 405
