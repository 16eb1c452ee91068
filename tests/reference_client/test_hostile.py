"""Bad input from a hostile server never crashes the host or leaks a secret (issue point 7).

At discovery the server is reported unavailable with a reason; at call time the call gets
`failed` or `unknown` with a message. The hostile servers are tiny raw HTTP servers (and one
stdio script), because the mocks are too well-behaved to send these bytes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.model_script import Step, function_call_outputs
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.reference_client.config import HttpServerConfig, StdioServerConfig
from mcp_host_conformance.reference_client.discovery import discover
from mcp_host_conformance.reference_client.engine import HostEngine
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.transports import parse_json
from tests.reference_client.engine_support import RawHttpServer, ScriptedUI, http_answer, run

SECRET = "hostile-canary-Zx81"
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "h", "version": "1"},
}
TOOLS = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}


def envelope(id_: int, result_json: str) -> bytes:
    return f'{{"jsonrpc":"2.0","id":{id_},"result":{result_json}}}'.encode()


HOSTILE_BODIES: dict[str, bytes | str] = {
    "invalid-json": b"{not json",
    "wrong-types": '{"tools":"nope"}',
    "tool-not-object": '{"tools":[42]}',
    "huge-int": '{"tools":[{"name":"t","inputSchema":{"type":"object","x":' + "9" * 5000 + "}}]}",
    "huge-float": '{"tools":[{"name":"t","inputSchema":{"type":"object","x":1e999}}]}',
    "nan": '{"tools":[{"name":"t","inputSchema":{"type":"object","x":NaN}}]}',
    "invalid-utf8": b'{"tools":[{"name":"t\xff\xfe","inputSchema":{"type":"object"}}]}',
    "lone-surrogate": '{"tools":[{"name":"t\\udc80","inputSchema":{"type":"object"}}]}',
    "deep-nesting": '{"tools":[{"name":"t","inputSchema":' + "[" * 50000 + "]" * 50000 + "}]}",
    "nested-200": '{"tools":[{"name":"t","inputSchema":{"a":'
    + '{"a":' * 200
    + "1"
    + "}" * 200
    + "}}]}",
    "result-array": "[1,2,3]",
    "wrong-id": None,  # handled below
    "not-jsonrpc": None,
}


def body_for(kind: str, id_: int) -> bytes:
    if kind == "wrong-id":
        return envelope(id_ + 1000, json.dumps(TOOLS))
    if kind == "not-jsonrpc":
        return json.dumps({"id": id_, "result": TOOLS}).encode()
    body = HOSTILE_BODIES[kind]
    if isinstance(body, bytes) and not body.startswith(b'{"tools"'):
        return body  # not even an envelope
    raw = body if isinstance(body, bytes) else body.encode()
    return f'{{"jsonrpc":"2.0","id":{id_},"result":'.encode() + raw + b"}"


def hostile(method_bodies: dict[str, object]):
    """A responder that answers initialize properly and `method_bodies[method](id)` otherwise."""

    def respond(request: bytes) -> bytes | None:
        head, _, body = request.partition(b"\r\n\r\n")
        if head.startswith(b"DELETE"):
            return http_answer(200, b"")
        message = json.loads(body)
        if "id" not in message:
            return http_answer(202, b"")
        method, id_ = message["method"], message["id"]
        if method == "initialize":
            return http_answer(200, envelope(id_, json.dumps(INIT)))
        make = method_bodies.get(method)
        if make is None:
            return http_answer(200, envelope(id_, json.dumps(TOOLS)))
        return make(id_)

    return respond


async def status_of(url: str, timeout: float = 0.5):
    result = await discover(
        [HttpServerConfig("evil", url, {"Authorization": SECRET})],
        environ={},
        connect_timeout=timeout,
        redactor=Redactor([SECRET]),
    )
    for server in result.servers.values():
        await server.session.close()
    return result.statuses[0]


@pytest.mark.parametrize("kind", sorted(HOSTILE_BODIES))
def test_hostile_tools_list_makes_the_server_unavailable(kind: str) -> None:
    responder = hostile({"tools/list": lambda id_: http_answer(200, body_for(kind, id_))})
    with RawHttpServer(responder) as server:
        status = run(status_of(server.url))
    assert not status.connected, kind
    assert status.reason and SECRET not in status.line
    assert status.line.startswith("MCP server evil unavailable: ")


def test_endless_event_stream_is_bounded_by_the_timeout() -> None:
    def endless(id_: int) -> bytes:
        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        return head + b"".join(b"c\r\n: keepalive\n\r\n" for _ in range(100))  # and never ends

    with RawHttpServer(hostile({"tools/list": endless})) as server:
        status = run(status_of(server.url, timeout=0.3))
    assert "no answer within 0.3 s" in status.reason


def test_endless_sse_line_is_cut_at_one_mib() -> None:
    def flood(id_: int) -> bytes:
        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        chunk = b"data: " + b"x" * (256 * 1024)
        return head + b"".join(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(6))

    with RawHttpServer(hostile({"tools/list": flood})) as server:
        status = run(status_of(server.url, timeout=30))
    assert "1 MiB" in status.reason


def test_parse_json_never_raises_anything_but_protocol_error() -> None:
    from mcp_host_conformance.reference_client.transports import ProtocolError

    for kind in HOSTILE_BODIES:
        try:
            parse_json(body_for(kind, 1))
        except ProtocolError:
            pass


@pytest.mark.parametrize(
    "call_body,expected",
    [
        (lambda id_: http_answer(200, b"{garbage"), "unknown"),
        (lambda id_: http_answer(200, envelope(id_, '{"content":"not a list"}')), "failed"),
        (
            lambda id_: http_answer(
                200, envelope(id_, '{"content":[{"type":"text","text":1e999}]}')
            ),
            "unknown",
        ),
        (lambda id_: http_answer(200, envelope(id_, "[" * 5000 + "]" * 5000)), "unknown"),
        (
            lambda id_: http_answer(200, f'{{"jsonrpc":"2.0","id":{id_},"error":"bad"}}'.encode()),
            "unknown",
        ),
        (lambda id_: http_answer(500, b"oops"), "unknown"),
        (lambda id_: http_answer(400, b"no"), "failed"),
        (
            lambda id_: http_answer(
                200, envelope(id_, json.dumps({"content": [{"type": "text", "text": SECRET}]}))
            ),
            "completed",
        ),
    ],
)
def test_hostile_call_answers_give_failed_or_unknown(
    tmp_path: Path, call_body, expected: str
) -> None:
    ui = ScriptedUI(approvals=["y"])
    with RawHttpServer(hostile({"tools/call": call_body})) as server, MockResponses() as model:
        model.script([Step.call(server="evil", tool="t", arguments={}), Step.text("fine")])
        host = HostEngine(
            [HttpServerConfig("evil", server.url, {"Authorization": SECRET})],
            model_url=model.url,
            model_key=model.api_key,
            environ={},
            cwd=tmp_path,
            ui=ui,
            connect_timeout=10.0,
            call_timeout=30.0,
        )

        async def go():
            try:
                await host.start()
                return await host.ask("q")
            finally:
                await host.close()

        report = run(go())
        sent = [e.extra["body"] for e in model.journal.entries(kind="http")]
    assert report.calls[0].status == expected
    assert report.calls[0].output
    # decided on the answer, not by waiting out the call timeout (a host that hangs on it
    # would be "unknown" too)
    assert "call timeout" not in report.calls[0].output
    assert SECRET not in json.dumps(sent) and SECRET not in ui.text
    assert len(function_call_outputs(sent[1])) == 1


def test_hostile_stdio_server_lines(tmp_path: Path) -> None:
    script = tmp_path / "evil.py"
    script.write_text(
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if 'id' not in m: continue\n"
        "    if m['method'] == 'initialize':\n"
        "        r = {'protocolVersion': '2025-06-18', 'capabilities': {}, "
        "'serverInfo': {'name': 'e', 'version': '1'}}\n"
        "        sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': m['id'], "
        "'result': r}) + '\\n')\n"
        "    else:\n"
        '        sys.stdout.buffer.write(b\'{"jsonrpc":"2.0","id":2,'
        '"result":{"tools":[{"name":"\\xff"}]}}\\n\')\n'
        "    sys.stdout.flush()\n"
    )

    async def go():
        result = await discover(
            [StdioServerConfig("evil", sys.executable, [str(script)], {"TOKEN": SECRET})],
            environ={"PATH": "/usr/bin:/bin"},
            connect_timeout=10.0,
            redactor=Redactor([SECRET]),
        )
        return result.statuses[0]

    status = run(go())
    assert not status.connected and "UTF-8" in status.reason
