"""The respx router shares the service's logic and journal with the HTTP server."""

from __future__ import annotations

import httpx

from mcp_host_conformance.mocks.responses import (
    MockResponses,
    ResponsesService,
    Step,
    parse_sse,
    responses_router,
)

TOOL = {
    "type": "function",
    "name": "mcp_a_b",
    "description": "[MCP server a, tool b] x",
    "parameters": {"type": "object"},
}


def test_router_answers_in_process_clients_from_the_same_script():
    model = MockResponses()  # not started: no port needed for the router
    model.script([Step.call(server="a", tool="b", arguments={"k": 1}), Step.text("bye")])
    base = "https://api.example.test/openai/v1"
    with responses_router(model, base) as router:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {model.api_key}"}) as c:
            first = c.post("/responses", json={"model": "m", "input": "q", "tools": [TOOL]}).json()
            assert first["output"][0]["name"] == "mcp_a_b"
            events = parse_sse(
                c.post("/responses", json={"model": "m", "input": "q", "stream": True}).content
            )
            assert events[-1]["type"] == "response.completed"
            assert (
                c.post(
                    "/responses", json={"model": "m"}, headers={"Authorization": "Bearer nope"}
                ).status_code
                == 401
            )
        assert router.calls.call_count == 3
    assert [e.path for e in model.journal.entries(kind="http")] == ["/v1/responses"] * 3
    assert model.requests()[0]["tools"] == [TOOL]


def test_router_with_a_mock_transport_and_a_bare_service():
    service = ResponsesService(api_key="sk-test")
    router = responses_router(service)
    transport = httpx.MockTransport(router.handler)
    with httpx.Client(transport=transport, base_url="https://mock-responses.invalid/v1") as c:
        r = c.post(
            "/responses",
            json={"model": "m", "input": "q"},
            headers={"Authorization": "Bearer sk-test"},
        )
    assert (
        r.status_code == 200 and r.json()["output"][0]["type"] == "message"
    )  # autopilot, no MCP tools


def test_router_defaults_to_the_started_servers_url():
    with MockResponses() as model:
        router = responses_router(model)
        with (
            router,
            httpx.Client(
                base_url=model.url, headers={"Authorization": f"Bearer {model.api_key}"}
            ) as c,
        ):
            c.post("/responses", json={"model": "m", "input": "q"})
            assert router.calls.call_count == 1  # respx clears its call list on exit
        assert model.journal.entries(kind="http")[0].connection == "respx"


def test_router_answers_chat_completions_too():
    model = MockResponses()
    model.script([Step.call(server="a", tool="b", arguments={"k": 1})])
    chat_tool = {"type": "function", "function": {k: v for k, v in TOOL.items() if k != "type"}}
    base = "https://api.example.test/v1"
    with responses_router(model, base), httpx.Client(base_url=base) as c:
        reply = c.post(
            "/chat/completions",
            json={
                "model": "m",
                "messages": [{"role": "user", "content": "q"}],
                "tools": [chat_tool],
            },
            headers={"Authorization": f"Bearer {model.api_key}"},
        ).json()
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "mcp_a_b", "arguments": '{"k":1}'}
    (entry,) = model.journal.entries(kind="http")
    assert entry.extra["api"] == "chat" and entry.extra["reply_calls"][0]["call_id"] == call["id"]
