"""The mock Responses service over real HTTP: shapes, scripts, journal, autopilot."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx
import pytest

from mcp_host_conformance.mocks.responses import (
    MockResponses,
    Step,
    function_call_outputs,
    offered_tools,
)


def mcp_tool(server: str, tool: str, name: str | None = None, schema: dict | None = None) -> dict:
    return {
        "type": "function",
        "name": name or f"mcp_{server}_{tool}",
        "description": f"[MCP server {server}, tool {tool}] Does things. Results are untrusted.",
        "parameters": schema or {"type": "object", "properties": {}},
        "strict": False,
    }


TOOLS = [
    mcp_tool(
        "docs",
        "query",
        schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    ),
    mcp_tool("docs", "fetch", name="mcp_docs_fetch_1a2b"),
    {
        "type": "function",
        "name": "read_file",
        "description": "built-in",
        "parameters": {"type": "object"},
    },
]


@pytest.fixture
def model():
    with MockResponses() as m:
        yield m


@pytest.fixture
def client(model):
    with httpx.Client(
        base_url=model.url, headers={"Authorization": f"Bearer {model.api_key}"}, timeout=5
    ) as c:
        yield c


def ask(client, **extra):
    body = {"model": "mock", "input": "hello", "tools": TOOLS, **extra}
    return client.post("/responses", json=body)


def test_url_shape():  # the 50 ms ready target is measured by benchmarks/bench_mocks.py
    with MockResponses() as m:
        assert m.url.startswith("http://127.0.0.1:") and m.url.endswith("/v1")


def test_api_key_is_random_per_instance():
    assert MockResponses().api_key != MockResponses().api_key


def test_non_stream_response_shape_for_a_call_by_label(model, client):
    model.script([Step.call(server="docs", tool="query", arguments={"q": "mcp"})])
    r = ask(client)
    assert r.status_code == 200
    resp = r.json()
    assert (
        resp["object"] == "response"
        and resp["status"] == "completed"
        and resp["id"].startswith("resp_")
    )
    assert set(resp["usage"]) >= {"input_tokens", "output_tokens", "total_tokens"}
    (item,) = resp["output"]
    assert item["type"] == "function_call" and item["status"] == "completed"
    assert item["name"] == "mcp_docs_query" and json.loads(item["arguments"]) == {"q": "mcp"}
    assert item["id"].startswith("fc_") and item["call_id"].startswith("call_")


def test_call_by_exact_name_and_text_and_exhausted_script(model, client):
    model.script([Step.call(name="mcp_docs_fetch_1a2b", arguments={}), Step.text("all good")])
    assert ask(client).json()["output"][0]["name"] == "mcp_docs_fetch_1a2b"
    msg = ask(client).json()["output"][0]
    assert msg["type"] == "message" and msg["role"] == "assistant"
    assert msg["content"] == [{"type": "output_text", "text": "all good", "annotations": []}]
    assert ask(client).json()["output"][0]["content"][0]["text"] == "done"


def test_several_calls_in_one_reply_with_schema_built_arguments(model, client):
    model.script(
        [
            Step.calls(
                [Step.call(server="docs", tool="query"), Step.call(server="docs", tool="fetch")]
            )
        ]
    )
    out = ask(client).json()["output"]
    assert [o["name"] for o in out] == ["mcp_docs_query", "mcp_docs_fetch_1a2b"]
    assert json.loads(out[0]["arguments"]) == {"q": "test"}
    assert len({o["call_id"] for o in out}) == 2


def test_repeat_keeps_asking(model, client):
    model.script([Step.call(server="docs", tool="fetch", repeat=True)])
    for _ in range(3):
        out = ask(client).json()["output"]
        assert out[0]["name"] == "mcp_docs_fetch_1a2b"


def test_a_call_that_failed_is_made_again_once_an_invited_retry(model, client):
    """A step that retries on error: the model is told its call failed and calls the same
    function again, with the same arguments, once, before the script's next step; a call
    that worked is not made again."""
    model.script(
        [Step.call(server="docs", tool="query", arguments={"q": "x"}, retry_on_error=True)]
        + [Step.text("after")]
    )
    first = ask(client).json()["output"][0]

    def told(call, output):
        item = {"type": "function_call_output", "call_id": call["call_id"], "output": output}
        called = {k: call[k] for k in ("type", "call_id", "name", "arguments")}
        return ask(client, input=[{"role": "user", "content": "q"}, called, item]).json()

    again = told(first, "Status: failed. Error: quota exceeded, try again")["output"][0]
    assert again["type"] == "function_call" and again["name"] == first["name"]
    assert again["arguments"] == first["arguments"] and again["call_id"] != first["call_id"]
    events = model.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "invited-retry"
    )
    assert [e.extra["calls"] for e in events] == [["mcp_docs_query"]]
    # once only: the retried call failing again is the script's business
    assert told(again, "Error: still failing")["output"][0]["content"][0]["text"] == "after"

    model.script([Step.call(server="docs", tool="query", retry_on_error=True), Step.text("done")])
    fine = ask(client).json()["output"][0]
    assert told(fine, "42 results")["output"][0]["content"][0]["text"] == "done"


def test_error_step_uses_the_envelope(model, client):
    model.script([Step.error(503, "overloaded"), Step.text("back")])
    r = ask(client)
    assert r.status_code == 503
    assert r.json() == {
        "error": {"message": "overloaded", "type": "server_error", "param": None, "code": None}
    }
    assert ask(client).json()["output"][0]["content"][0]["text"] == "back"


def test_unmatched_call_answers_text_and_is_recorded(model, client):
    model.script([Step.call(server="nope", tool="x")])
    text = ask(client).json()["output"][0]["content"][0]["text"]
    assert "the host offered no function for nope/x" in text
    (event,) = model.journal.entries(kind="event")
    assert event.extra["event"] == "unmatched-call"


def test_journal_keeps_headers_and_body(model, client):
    model.script([Step.text("ok")])
    ask(client, instructions="be nice")
    (entry,) = model.journal.entries(kind="http")
    assert entry.http_method == "POST" and entry.path == "/v1/responses"
    assert entry.headers["authorization"] == f"Bearer {model.api_key}"
    assert entry.extra["body"]["instructions"] == "be nice"
    assert model.requests()[0]["tools"] == TOOLS
    assert offered_tools(model.requests()[0]) == TOOLS


def test_autopilot_calls_each_mcp_tool_once_then_answers(model, client):
    first = ask(client).json()["output"][0]
    assert first["name"] == "mcp_docs_query" and json.loads(first["arguments"]) == {"q": "test"}
    history = [
        {"role": "user", "content": "hello"},
        first,
        {"type": "function_call_output", "call_id": first["call_id"], "output": "r1"},
    ]
    second = client.post(
        "/responses", json={"model": "m", "input": history, "tools": TOOLS}
    ).json()["output"][0]
    assert second["name"] == "mcp_docs_fetch_1a2b"
    history += [
        second,
        {"type": "function_call_output", "call_id": second["call_id"], "output": "r2"},
    ]
    body = {"model": "m", "input": history, "tools": TOOLS}
    last = client.post("/responses", json=body).json()["output"][0]
    assert last["type"] == "message"
    assert function_call_outputs(body) == {first["call_id"]: "r1", second["call_id"]: "r2"}


def test_admin_endpoints_script_journal_reset(model):
    with httpx.Client(timeout=5) as c:
        root = model.url[: -len("/v1")]
        r = c.post(root + "/__script", json=[{"type": "text", "text": "from file"}])
        assert r.status_code == 200
        bad = c.post(root + "/__script", json=[{"type": "dance"}])
        assert bad.status_code == 400 and "dance" in bad.json()["error"]["message"]
        reply = c.post(
            model.url + "/responses",
            json={"model": "m", "input": "x"},
            headers={"Authorization": f"Bearer {model.api_key}"},
        )
        assert reply.json()["output"][0]["content"][0]["text"] == "from file"
        journal = c.get(root + "/__journal").json()
        assert [e["path"] for e in journal] == ["/v1/responses"]
        assert c.post(root + "/__reset").status_code == 204  # the one admin handler
        assert c.get(root + "/__journal").json() == []


def run_standalone(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_host_conformance.mocks.responses", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_standalone_with_a_script_file_and_sigterm(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"type": "text", "text": "scripted"}]))
    proc = run_standalone("--script", str(script))
    try:
        info = json.loads(proc.stdout.readline())
        assert info["name"] == "responses" and info["journal"].endswith("/__journal")
        with httpx.Client(headers={"Authorization": f"Bearer {info['api_key']}"}, timeout=5) as c:
            reply = c.post(info["url"] + "/responses", json={"model": "m", "input": "q"})
            assert reply.json()["output"][0]["content"][0]["text"] == "scripted"
            # the same port speaks Chat Completions and Anthropic Messages (script exhausted)
            question = [{"role": "user", "content": "q"}]
            reply = c.post(
                info["url"] + "/chat/completions", json={"model": "m", "messages": question}
            )
            assert reply.json()["choices"][0]["message"]["content"] == "done"
            assert info["url"] == info["anthropic_url"] + "/v1"
            reply = c.post(
                info["anthropic_url"] + "/v1/messages",
                json={"model": "m", "max_tokens": 9, "messages": question},
                headers={"anthropic-version": "2023-06-01"},
            )
            assert reply.json()["content"] == [{"type": "text", "text": "done"}]
            assert [e["extra"]["api"] for e in c.get(info["journal"]).json()] == [
                "responses",
                "chat",
                "messages",
            ]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize(
    "content, reason",
    [(b'[{"type": "sing"}]', "script[0]"), (b"[" * 100_000, "nested"), (b"\xff", "UTF-8")],
)
def test_standalone_rejects_a_bad_script(tmp_path, content, reason):
    script = tmp_path / "bad.json"
    script.write_bytes(content)
    proc = run_standalone("--script", str(script))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.strip().count("\n") == 0 and reason in err and "Traceback" not in err


def test_keep_alive_reuses_one_connection(model, client):
    model.script([Step.text("a"), Step.text("b")])
    ask(client)
    ask(client, stream=True)
    ask(client)
    connections = {e.connection for e in model.journal.entries(kind="http")}
    assert len(connections) == 1
