"""The reference host against a real third-party MCP server, over stdio and Streamable HTTP.

Strategy: the server is `@modelcontextprotocol/server-everything` at the version pinned in
package.json; the model is `MockResponses`; the host is driven through its harness adapter
exactly as the conformance suite drives it. Every claim about what reached the server is
checked on the server side (the shim's tap for stdio, the journalling proxy for HTTP),
and every claim about what reached the model on the model's journal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from interop_support import (
    SERVER_NAME,
    EverythingHttp,
    Target,
    calls,
    installed_version,
    listening_addresses,
    pinned_version,
    read_tap,
    result_of,
    running_host,
)

from mcp_host_conformance.harness.contract.adapter import Confirmation
from mcp_host_conformance.mocks.model_script import Step, function_call_outputs
from mcp_host_conformance.mocks.responses import MockResponses
from mcp_host_conformance.mocks.stdio_server import pid_alive, pids_in_group


def approve(_: Confirmation) -> str:
    return "y"


def no_ack(prompt: str) -> bool:
    raise AssertionError(f"unexpected acknowledgement prompt: {prompt}")


def tool_calls(target: Target) -> list[dict]:
    return calls(target.received(), "tools/call")


def outputs_sent_to_model(model: MockResponses) -> list[str]:
    return [o for body in model.requests() for o in function_call_outputs(body).values()]


def test_the_pinned_version_is_installed() -> None:
    assert installed_version() == pinned_version()


def test_discovery_status_line_counts_what_the_server_lists(
    tmp_path: Path, model: MockResponses, target: Target
) -> None:
    with running_host(tmp_path, model, target) as session:
        [status] = session.statuses
        [tools_list] = calls(target.received(), "tools/list")
        listed = result_of(target.sent(), tools_list)["tools"]
    destination = status.destination
    assert status.connected, status.line
    assert status.tools == len(listed) > 0
    assert status.line == f"MCP server {SERVER_NAME}: {len(listed)} tools from {destination}"
    assert status.line in session.text
    assert {"echo", "get-tiny-image", "get-structured-content"} <= {t["name"] for t in listed}


def test_an_approved_echo_is_completed(
    tmp_path: Path, model: MockResponses, target: Target
) -> None:
    model.script(
        [
            Step.call(server=SERVER_NAME, tool="echo", arguments={"message": "hello interop"}),
            Step.text("done"),
        ]
    )
    seen: list[Confirmation] = []
    with running_host(tmp_path, model, target) as session:
        turn = session.ask("echo please", lambda c: seen.append(c) or "y", no_ack)
        [call] = tool_calls(target)
    assert call["params"] == {"name": "echo", "arguments": {"message": "hello interop"}}
    assert [(c.server, c.tool) for c in seen] == [(SERVER_NAME, "echo")]
    assert [(c.status, c.output) for c in turn.calls] == [("completed", "Echo: hello interop")]
    assert outputs_sent_to_model(model) == ["Status: completed\nEcho: hello interop"]
    assert turn.answer == "done"


def test_a_denied_call_never_reaches_the_server(
    tmp_path: Path, model: MockResponses, target: Target
) -> None:
    # Evidence: the server-side record (tap / proxy) holds no tools/call for the denied
    # turn, and the approved call of a second turn in the same session does arrive, so the
    # record was live the whole time.
    model.script(
        [
            Step.call(server=SERVER_NAME, tool="echo", arguments={"message": "denied-one"}),
            Step.text("not done"),
            Step.call(server=SERVER_NAME, tool="echo", arguments={"message": "approved-one"}),
            Step.text("done"),
        ]
    )
    with running_host(tmp_path, model, target) as session:
        denied = session.ask("first", lambda c: "n", no_ack)
        after_denied = tool_calls(target)
        approved = session.ask("second", approve, no_ack)
        after_approved = tool_calls(target)
    assert [c.status for c in denied.calls] == ["denied"]
    assert after_denied == []
    assert [c["params"]["arguments"]["message"] for c in after_approved] == ["approved-one"]
    assert [c.status for c in approved.calls] == ["completed"]
    outputs = outputs_sent_to_model(model)
    assert (
        outputs[0].startswith("Status: denied\n") and "Nothing was sent to the server" in outputs[0]
    )
    assert "denied-one" not in json.dumps(target.received())


def test_the_tiny_image_is_omitted_and_never_reaches_the_model(
    tmp_path: Path, model: MockResponses, target: Target
) -> None:
    model.script(
        [Step.call(server=SERVER_NAME, tool="get-tiny-image", arguments={}), Step.text("seen")]
    )
    with running_host(tmp_path, model, target) as session:
        turn = session.ask("show me the image", approve, no_ack)
        [call] = tool_calls(target)
        content = result_of(target.sent(), call)["content"]
        stopped = session.stop()
    [image] = [block for block in content if block["type"] == "image"]
    data = image["data"]
    assert len(data) > 1000  # the server really sent the base64 PNG
    [result] = turn.calls
    assert result.status == "completed"
    assert result.output == (
        "Here's the image you requested:\n[image omitted: image/png]\n"
        "The image above is the MCP logo."
    )
    journal = json.dumps([entry.extra.get("body") for entry in model.journal.entries(kind="http")])
    assert "[image omitted: image/png]" in journal
    assert data[:64] not in journal and data[:64] not in turn.text
    assert all(data[:64] not in path.read_text() for path in stopped.session_files)


def test_a_structured_content_result(tmp_path: Path, model: MockResponses, target: Target) -> None:
    model.script(
        [
            Step.call(
                server=SERVER_NAME, tool="get-structured-content", arguments={"location": "Chicago"}
            ),
            Step.text("weather"),
        ]
    )
    with running_host(tmp_path, model, target) as session:
        turn = session.ask("weather in Chicago?", approve, no_ack)
        [call] = tool_calls(target)
        result = result_of(target.sent(), call)
    assert result["structuredContent"]["conditions"] == "Light rain / drizzle"
    [outcome] = turn.calls
    assert outcome.status == "completed"
    assert json.loads(outcome.output) == result["structuredContent"]
    assert outputs_sent_to_model(model) == ["Status: completed\n" + outcome.output]


def test_the_stdio_server_is_reaped_on_stop(
    tmp_path: Path, model: MockResponses, stdio_target: Target
) -> None:
    # (An HTTP server is not the host's process: the fixture stops its group at teardown.)
    assert stdio_target.tap is not None
    with running_host(tmp_path, model, stdio_target) as session:
        pid = read_tap(stdio_target.tap).pid
        assert pid is not None and pid_alive(pid)
        pgid = os.getpgid(pid)
        assert pgid == pid  # its own process group (STDIO-3)
        session.stop()
        assert not pid_alive(pid)  # stopped and waited for (a zombie counts as alive)
        assert pids_in_group(pgid) == []


def test_the_http_server_listens_on_loopback_only(everything_http: EverythingHttp) -> None:
    addresses = listening_addresses(everything_http.pid)
    assert addresses == [("127.0.0.1", everything_http.port)]
    assert everything_http.url.startswith("http://127.0.0.1:")
