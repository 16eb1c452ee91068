"""SSE polling (MCP 2025-11-25 resumability) in the HTTP mock, seen by a hand-driven client.

For each `poll_call` variant: the `tools/call` POST gets a stream holding only a priming
event (id, retry, empty data) that then ends; the client resumes with a GET carrying
`Last-Event-ID`; what that GET gets depends on the variant. Each test asserts the mock
received exactly one `tools/call`, and counts the resumption GETs in the journal.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

ACCEPT = "application/json, text/event-stream"
RESULT_TEXT = "done after polling"


def parse_sse(text: str) -> list[dict[str, Any]]:
    """SSE events as dicts of their fields (data joined; absent fields absent)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event: dict[str, Any] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                event["data"] = f"{event['data']}\n{value}" if "data" in event else value
            else:
                event[name] = value
        if event:
            events.append(event)
    return events


class Poller:
    """Initialize, call a tool, resume: Streamable HTTP by hand."""

    def __init__(self, mock: HttpMock) -> None:
        assert mock.url
        self.url = mock.url
        self.client = httpx2.Client(timeout=10)
        self.session_id = ""
        response = self.client.post(
            self.url,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "poller", "version": "1"},
                },
            },
            headers={"accept": ACCEPT},
        )
        self.session_id = response.headers["mcp-session-id"]

    def headers(self, **extra: str) -> dict[str, str]:
        return {
            "accept": ACCEPT,
            "mcp-session-id": self.session_id,
            "mcp-protocol-version": "2025-11-25",
            **extra,
        }

    def call(self, tool: str = "slow", id_: int = 7) -> httpx2.Response:
        message = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": tool}}
        return self.client.post(self.url, json=message, headers=self.headers())

    def resume(self, last_event_id: str, **options: Any) -> httpx2.Response:
        headers = self.headers(**{"last-event-id": last_event_id})
        headers["accept"] = "text/event-stream"
        return self.client.get(self.url, headers=headers, **options)

    def close(self) -> None:
        self.client.close()


def spec(variant: str, mode: str = "sse", **more: Any) -> ServerSpec:
    return ServerSpec(
        tools=[Tool("slow", reply=Reply.text(RESULT_TEXT)), Tool("quick", reply=Reply.text("q"))],
        response_mode=mode,
        misbehaviour=Misbehaviour(poll_call=variant, poll_retry_ms=25, **more),
    )


@pytest.fixture
def polling(start_mock) -> Iterator[Any]:
    pollers: list[Poller] = []

    def make(variant: str, mode: str = "sse", **more: Any) -> tuple[HttpMock, Poller]:
        mock = start_mock(spec(variant, mode, **more))
        poller = Poller(mock)
        pollers.append(poller)
        return mock, poller

    yield make
    for poller in pollers:
        poller.close()


def primed(response: httpx2.Response) -> str:
    """Check a POST's stream is one priming event (id, retry, empty data) that ended; its id."""
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    (event,) = parse_sse(response.text)
    assert event.get("data", "") == "" and event["retry"] == "25" and event["id"]
    return str(event["id"])


def resumption_gets(mock: HttpMock) -> int:
    return mock.journal.count(
        kind="http", where=lambda e: e.http_method == "GET" and "last-event-id" in e.headers
    )


def call_posts(mock: HttpMock) -> int:
    return mock.journal.count("tools/call")


def result_of(event: dict[str, Any]) -> dict[str, Any]:
    message = json.loads(event["data"])
    assert message["id"] == 7
    return dict(message)


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_deliver_gives_the_result_on_the_resumed_get(polling, mode):
    mock, poller = polling("deliver", mode)
    first = primed(poller.call())
    resumed = poller.resume(first)
    assert resumed.status_code == 200
    (event,) = parse_sse(resumed.text)
    assert result_of(event)["result"]["content"][0]["text"] == RESULT_TEXT
    assert event["id"] != first and event["id"].rpartition("-")[0] == first.rpartition("-")[0]
    assert call_posts(mock) == 1 and resumption_gets(mock) == 1
    get = mock.journal.entries(kind="http")[-1]
    assert get.http_method == "GET" and get.headers["last-event-id"] == first


def test_error_gives_a_json_rpc_error_on_the_resumed_get(polling):
    mock, poller = polling("error")
    (event,) = parse_sse(poller.resume(primed(poller.call())).text)
    assert result_of(event)["error"]["code"] == -32603
    assert call_posts(mock) == 1 and resumption_gets(mock) == 1


def test_close_again_primes_and_closes_once_more_then_delivers(polling):
    mock, poller = polling("close-again")
    first = primed(poller.call())
    second = primed(poller.resume(first))
    assert second != first
    (event,) = parse_sse(poller.resume(second).text)
    assert result_of(event)["result"]["content"][0]["text"] == RESULT_TEXT
    assert call_posts(mock) == 1 and resumption_gets(mock) == 2


def test_resuming_from_an_older_id_replays_what_followed_it(polling):
    mock, poller = polling("close-again")
    first = primed(poller.call())
    second = primed(poller.resume(first))
    replayed = parse_sse(poller.resume(first).text)  # the client missed `second`
    assert [e["id"] for e in replayed][0] == second and "retry" in replayed[0]
    assert result_of(replayed[1])["result"]
    assert call_posts(mock) == 1


def test_stall_answers_the_resumed_get_with_nothing_and_close_still_ends_it(polling):
    mock, poller = polling("stall")
    first = primed(poller.call())
    outcome: dict[str, Any] = {}

    def resume() -> None:
        try:
            outcome["response"] = poller.resume(first, timeout=httpx2.Timeout(60))
        except httpx2.HTTPError as exc:
            outcome["error"] = exc

    reader = threading.Thread(target=resume, daemon=True)
    reader.start()
    events = mock.journal.wait_for(
        kind="event", where=lambda e: e.extra.get("event") == "sse-resumed", timeout=30
    )
    assert events[0].extra["ending"] == "stall" and events[0].extra["events"] == 0
    assert reader.is_alive()  # still waiting: nothing was delivered
    mock.close()
    reader.join(60)
    assert not reader.is_alive()
    response = outcome.get("response")
    assert response is None or json.dumps(parse_sse(response.text)).count('"id": 7') == 0
    assert call_posts(mock) == 1 and resumption_gets(mock) == 1


def test_a_last_event_id_nobody_sent_is_a_400(polling):
    mock, poller = polling("deliver")
    first = primed(poller.call())
    key = first.rpartition("-")[0]
    for wrong in ("nonsense", f"{key}-99", "s999-0", f"{key}-x"):
        assert poller.resume(wrong).status_code == 400
    other = Poller(mock)  # another session may not resume this session's stream
    try:
        assert other.resume(first).status_code == 400
    finally:
        other.close()
    assert parse_sse(poller.resume(first).text)  # the right one still works


def test_event_ids_differ_between_streams_of_a_session(polling):
    _, poller = polling("deliver")
    ids = {primed(poller.call(id_=n)) for n in (1, 2, 3)}
    assert len({i.rpartition("-")[0] for i in ids}) == 3


def test_only_the_listed_tools_poll(polling):
    mock, poller = polling("deliver", poll_tools=["slow"])
    quick = parse_sse(poller.call("quick").text)
    assert len(quick) == 1 and json.loads(quick[0]["data"])["result"]["content"][0]["text"] == "q"
    assert "id" not in quick[0]
    primed(poller.call("slow"))


def test_a_plain_get_stream_never_carries_the_polled_result(polling):
    mock, poller = polling("deliver")
    primed(poller.call())
    headers = poller.headers()
    headers["accept"] = "text/event-stream"
    with poller.client.stream("GET", poller.url, headers=headers) as stream:
        assert stream.status_code == 200
        mock.change_tools([Tool("slow"), Tool("other")])  # something to send on it
        line = next(line for line in stream.iter_lines() if line.startswith("data:"))
    assert json.loads(line[5:])["method"] == "notifications/tools/list_changed"
