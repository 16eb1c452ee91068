"""Each Misbehaviour of the HTTP mock does what it says, and is journalled."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest

from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool
from tests.mocks.conftest import parse_messages

CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "t", "arguments": {"a": 1}},
}


def _spec(mode: str = "sse", **mis) -> ServerSpec:
    return ServerSpec(
        tools=[Tool("t", "a tool")], response_mode=mode, misbehaviour=Misbehaviour(**mis)
    )


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("at", ["initialize", "tools/call"])
def test_redirect_at_a_method_points_elsewhere_and_the_target_sees_nothing(
    start_mock, raw, status, at
):
    target = start_mock(_spec())
    mock = start_mock(_spec(redirect_status=status, redirect_to=target.url, redirect_at=at))
    client = raw(mock)
    if at == "initialize":
        response = client.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    else:
        client.initialize()
        response = client.post(CALL)
    assert response.status_code == status
    assert response.headers["location"] == target.url
    assert target.journal.is_empty()
    assert mock.journal.count(at) == 1


def test_redirect_at_call_leaves_discovery_alone(start_mock, raw):
    mock = start_mock(
        _spec(redirect_status=307, redirect_to="http://127.0.0.1:9/mcp", redirect_at="tools/call")
    )
    client = raw(mock)
    client.initialize()
    assert client.request("tools/list")["result"]["tools"][0]["name"] == "t"


@pytest.mark.parametrize("mode", ["sse", "json"])
@pytest.mark.parametrize("at", ["tools/list", "tools/call"])
def test_oversize_sends_one_message_over_1_mib(start_mock, raw, mode, at):
    client = raw(start_mock(_spec(mode, oversize_at=at)))
    client.initialize()
    response = client.post(
        CALL if at == "tools/call" else {"jsonrpc": "2.0", "id": 7, "method": at}
    )
    messages = parse_messages(response)
    assert len(messages) == 1 and messages[0]["id"] == 7 and "result" in messages[0]
    assert len(json.dumps(messages[0], separators=(",", ":"))) > 1024 * 1024
    if at == "tools/list":
        assert messages[0]["result"]["tools"][0]["name"] == "t"


def _raw_call(mock, session_id: str, timeout: float = 5.0) -> bytes | Exception:
    """Send a tools/call on a bare socket; what came back (bytes, b'' on FIN) or the error."""
    body = json.dumps(CALL).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\nmcp-session-id: {session_id}\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", mock.port), timeout=timeout) as sock:
        sock.sendall(head + body)
        try:
            return sock.recv(1000)
        except OSError as exc:
            return exc


def test_flaky_reset_resets_after_reading_the_call(start_mock, raw):
    mock = start_mock(_spec(drop_call="reset"))
    client = raw(mock)
    client.initialize()
    outcome = _raw_call(mock, client.session_id)
    assert isinstance(outcome, ConnectionResetError), outcome
    assert mock.journal.count("tools/call") == 1
    assert mock.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "call-dropped-reset"
    )


def test_flaky_close_closes_cleanly_without_answer(start_mock, raw):
    mock = start_mock(_spec(drop_call="close"))
    client = raw(mock)
    client.initialize()
    assert _raw_call(mock, client.session_id) == b""
    assert mock.journal.count("tools/call") == 1


def test_flaky_stall_never_answers(start_mock, raw):
    mock = start_mock(_spec(drop_call="stall"))
    client = raw(mock)
    client.initialize()
    assert isinstance(_raw_call(mock, client.session_id, timeout=0.2), TimeoutError)
    mock.journal.wait_for("tools/call", timeout=10)
    assert mock.journal.count("tools/call") == 1


def test_flaky_reset_through_httpx(start_mock, raw):
    mock = start_mock(_spec(drop_call="reset"))
    client = raw(mock)
    client.initialize()
    with pytest.raises(httpx.TransportError):
        client.post(CALL)
    assert client.request("ping")["result"] == {}  # the mock itself carries on


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_stall_initialize(start_mock, mode):
    mock = start_mock(_spec(mode, stall=["initialize"]))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(mock.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize"}, timeout=0.2)
    mock.journal.wait_for("initialize", timeout=10)


def test_delay_per_method(start_mock, raw):
    client = raw(start_mock(_spec(delays={"tools/list": 0.2})))
    client.initialize()
    client.request("ping")  # not delayed: behaviour.decide plans the delay per method
    started = time.monotonic()
    client.request("tools/list")
    assert time.monotonic() - started >= 0.2  # a lower bound only: no speed is assumed


@pytest.mark.parametrize("status", [401, 403])
def test_reject(start_mock, raw, status):
    mock = start_mock(_spec(reject_status=status))
    response = raw(mock).post({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    assert response.status_code == status
    assert ("bearer" in response.headers.get("www-authenticate", "").lower()) == (status == 401)
    assert mock.journal.count("initialize") == 1


def test_token_check_accepts_exactly_one_value_and_journals_what_it_saw(start_mock, raw):
    mock = start_mock(_spec(accept_header="Authorization", accept_value="Bearer right"))
    client = raw(mock)
    wrong = client.post(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
        headers={"authorization": "Bearer wrong"},
    )
    assert wrong.status_code == 401 and "Bearer" in wrong.headers["www-authenticate"]
    good = client.post(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
        headers={"authorization": "Bearer right"},
    )
    assert good.status_code == 200
    seen = [e.headers.get("authorization") for e in mock.journal.entries("initialize")]
    assert seen == ["Bearer wrong", "Bearer right"]


def test_change_tools_after_call_notifies_on_the_get_stream(start_mock, raw):
    mock = start_mock(_spec(change_tools_after_call=True, changed_tools=[Tool("renamed")]))
    client = raw(mock)
    client.initialize()
    headers = {"accept": "text/event-stream", "mcp-session-id": client.session_id}
    with (
        httpx.Client(timeout=5) as listener,
        listener.stream("GET", mock.url, headers=headers) as stream,
    ):
        assert stream.status_code == 200
        client.request("tools/call", {"name": "t"})
        lines = stream.iter_lines()
        data = next(line for line in lines if line.startswith("data: "))
        assert json.loads(data[6:])["method"] == "notifications/tools/list_changed"
    assert [t["name"] for t in client.request("tools/list")["result"]["tools"]] == ["renamed"]


def test_get_stream_needs_a_session(start_mock):
    mock = start_mock(_spec())
    assert httpx.get(mock.url, headers={"accept": "text/event-stream"}).status_code == 400
    assert httpx.get(mock.url, headers={"mcp-session-id": "nope"}).status_code == 404


def test_close_ends_stalled_connections_quickly(start_mock, raw):
    mock = start_mock(_spec(drop_call="stall"))
    client = raw(mock)
    client.initialize()
    sock = socket.create_connection(("127.0.0.1", mock.port), timeout=5)
    try:
        body = json.dumps(CALL).encode()
        sock.sendall(
            (
                f"POST /mcp HTTP/1.1\r\nmcp-session-id: {client.session_id}\r\n"
                f"content-length: {len(body)}\r\n\r\n"
            ).encode()
            + body
        )
        mock.journal.wait_for("tools/call", timeout=30)
        closer = threading.Thread(target=mock.close, daemon=True)
        closer.start()
        closer.join(60)  # a generous bound, not a speed claim
        assert not closer.is_alive()
        sock.settimeout(60)
        assert sock.recv(10) == b""
    finally:
        sock.close()


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_garbage_over_http_is_a_body_that_is_not_json_rpc(start_mock, mode):
    mock = start_mock(_spec(mode, garbage=True))
    response = httpx.post(
        mock.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        headers={"accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert response.status_code == 200 and parse_messages_or_none(response) is None
    assert mock.journal.entries(kind="event", where=lambda e: e.extra.get("event") == "garbage")


def parse_messages_or_none(response: httpx.Response) -> list | None:
    try:
        return parse_messages(response) or None
    except ValueError:
        return None


def test_reject_at_one_method_with_a_challenge(start_mock, raw):
    challenge = 'Bearer resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource"'
    mock = start_mock(_spec(reject_status=401, reject_at="tools/call", reject_challenge=challenge))
    client = raw(mock)
    client.initialize()  # not rejected: only tools/call is
    assert client.request("tools/list")["result"]["tools"][0]["name"] == "t"
    response = client.post(CALL)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == challenge
    assert mock.journal.count("tools/call") == 1  # journalled before it was rejected


def test_a_403_carries_no_challenge_unless_given_one(start_mock, raw):
    plain = raw(start_mock(_spec(reject_status=403)))
    response = plain.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert response.status_code == 403 and "www-authenticate" not in response.headers
    scoped = raw(
        start_mock(_spec(reject_status=403, reject_challenge='Bearer error="insufficient_scope"'))
    )
    response = scoped.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert response.headers["www-authenticate"] == 'Bearer error="insufficient_scope"'


@pytest.mark.parametrize(("address", "host"), [("127.0.0.2", "127.0.0.2"), ("::1", "[::1]")])
def test_a_mock_listens_on_another_loopback_address(raw, address, host):
    from mcp_host_conformance.mocks.http_server import HttpMock

    with HttpMock(_spec(), address=address) as mock:
        assert mock.url == f"http://{host}:{mock.port}/mcp"
        client = raw(mock)
        client.initialize()
        assert client.request("tools/list")["result"]["tools"][0]["name"] == "t"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_call_http_status_answers_calls_only(start_mock, raw, status):
    mock = start_mock(_spec(call_http_status=status))
    client = raw(mock)
    client.initialize()
    assert client.request("tools/list")["result"]["tools"][0]["name"] == "t"
    response = client.post(CALL)
    assert response.status_code == status
    assert mock.journal.count("tools/call") == 1
    assert mock.journal.entries(
        kind="event", where=lambda e: e.extra == {"event": "call-http-status", "status": status}
    )


def test_a_lost_session_answers_the_first_call_404_and_forgets_the_session(start_mock, raw):
    """As a server restarted behind the client: the call is read (journalled) and answered
    404 "Session not found"; the session is gone, so only a new initialize gets a session,
    and the call sent again there is answered (a library that does that sent it twice)."""
    mock = start_mock(_spec(call_session_lost=True))
    client = raw(mock)
    client.initialize()
    response = client.post(CALL)
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Session not found"
    assert response.json()["id"] is None  # not the call's response
    assert mock.journal.count("tools/call") == 1
    assert mock.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "session-lost"
    )
    assert client.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).status_code == 404
    client.initialize()
    assert client.request("tools/call", {"name": "t", "arguments": {}})["result"]
    assert mock.journal.count("tools/call") == 2


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_garbage_at_a_method_answers_the_others(start_mock, raw, mode):
    mock = start_mock(_spec(mode, garbage_at="tools/call"))
    client = raw(mock)
    client.initialize()
    assert client.request("tools/list")["result"]["tools"][0]["name"] == "t"
    response = client.post(CALL)
    assert response.status_code == 200 and parse_messages_or_none(response) is None
