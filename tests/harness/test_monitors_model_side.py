"""The monitors read a host's model requests as the host sent them: a function inside a
Responses `namespace` tool is known by both names (three servers' `ping` are three
functions, and a call of one is a call of that server's tool), and a host speaking Chat
Completions or the Messages API is judged as one speaking the Responses API."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mcp_host_conformance.harness.monitors.calls import sent_once
from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.monitors.offered import exposed_names
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.spec import ServerSpec, Tool, tool_marker


def _server(token: str, calls: int) -> SimpleNamespace:
    journal = Journal()
    for _ in range(calls):
        journal.record(
            Entry(
                kind="rpc",
                method="tools/call",
                params={"name": "ping", "arguments": {}},
                extra={"message_kind": "request"},
            )
        )
    return SimpleNamespace(
        spec=ServerSpec(tools=[Tool("ping")]), marker_token=token, journal=journal
    )


def _model(path: str, api: str, body: dict[str, Any], calls: list[dict[str, Any]]) -> Any:
    journal = Journal()
    journal.record(
        Entry(
            kind="http",
            http_method="POST",
            path=path,
            extra={"body": body, "api": api, "reply_calls": calls},
        )
    )
    return SimpleNamespace(journal=journal)


def _observed(servers: dict[str, SimpleNamespace], model: Any, tmp_path: Path) -> Observed:
    host = SimpleNamespace(
        bound=servers, moments=[], seen=[], config_paths=[], session_files=[], servers={}
    )
    return Observed(
        [host],  # type: ignore[list-item]
        list(servers.values()),
        model,
        None,
        tmp_path,
        tmp_path,
        frozenset(),
    )


def _ping(server: SimpleNamespace) -> str:
    return f"Answers pong. ({tool_marker(server.marker_token, 'ping')})"


def test_namespaced_functions_of_one_name_are_apart(tmp_path: Path) -> None:
    servers = {name: _server(f"tok-{name}", calls=1) for name in ("first", "second", "third")}
    tools = [
        {
            "type": "namespace",
            "name": f"mcp__{name}__",
            "tools": [{"type": "function", "name": "ping", "description": _ping(server)}],
        }
        for name, server in servers.items()
    ]
    calls = [
        {"call_id": f"c{i}", "name": "ping", "arguments": "{}", "namespace": f"mcp__{name}__"}
        for i, name in enumerate(servers)
    ]
    model = _model("/v1/responses", "responses", {"tools": tools, "input": []}, calls)
    observed = _observed(servers, model, tmp_path)

    assert [c.served.names for c in observed.model_calls if c.served] == [
        ["first"],
        ["second"],
        ["third"],
    ]
    assert list(sent_once.check(observed)) == []
    twins = [f for f in exposed_names.check(observed) if "functions of that name" in f.actual]
    assert twins == []


def test_one_name_offered_twice_in_one_namespace_is_caught(tmp_path: Path) -> None:
    servers = {name: _server(f"tok-{name}", calls=0) for name in ("first", "second")}
    functions = [
        {"type": "function", "name": "mcp_x", "description": _ping(s)} for s in servers.values()
    ]
    model = _model("/v1/responses", "responses", {"tools": functions, "input": []}, [])
    findings = list(exposed_names.check(_observed(servers, model, tmp_path)))
    assert any("2 functions of that name" in f.actual for f in findings)


def test_a_retry_is_caught_whichever_api_the_host_speaks(tmp_path: Path) -> None:
    servers = {"docs": _server("tok-docs", calls=2)}
    chat = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "mcp_docs_ping", "description": _ping(servers["docs"])},
            }
        ],
    }
    calls = [{"call_id": "c1", "name": "mcp_docs_ping", "arguments": "{}"}]
    model = _model("/v1/chat/completions", "chat", chat, calls)
    observed = _observed(servers, model, tmp_path)

    assert len(observed.requests) == 1
    assert [c.tool for c in observed.model_calls] == ["ping"]
    assert [f.rule for f in sent_once.check(observed)] == ["RETRY-1"]
    assert list(exposed_names.check(observed)) == []


def test_a_call_the_model_makes_again_is_no_retry_of_the_host(tmp_path: Path) -> None:
    """An invited retry: told its call failed, the model calls the same tool again with the
    same arguments in its next reply; two model calls, two tools/call, no finding. A third
    tools/call (the host or a library sending one again) is one."""
    tools = [{"type": "function", "name": "mcp_docs_ping"}]

    def model_of(server: SimpleNamespace) -> Any:
        tools[0]["description"] = _ping(server)
        journal = Journal()
        for n in (1, 2):
            call = {"call_id": f"c{n}", "name": "mcp_docs_ping", "arguments": '{"n":1}'}
            body = {"tools": tools, "input": [{"role": "user", "content": "ping"}]}
            extra = {"body": body, "api": "responses", "reply_calls": [call]}
            journal.record(
                Entry(kind="http", http_method="POST", path="/v1/responses", extra=extra)
            )
        return SimpleNamespace(journal=journal)

    invited = {"docs": _server("tok-docs", calls=2)}
    assert list(sent_once.check(_observed(invited, model_of(invited["docs"]), tmp_path))) == []
    resent = {"docs": _server("tok-docs", calls=3)}
    findings = list(sent_once.check(_observed(resent, model_of(resent["docs"]), tmp_path)))
    assert [f.rule for f in findings] == ["RETRY-1"] and "for 2 call(s)" in findings[0].actual
