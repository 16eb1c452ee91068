"""RES: result mapping.

Strategy: what counts is what the model is told, so the primary evidence is the model
journal: the mock model journals the call_ids of every call it makes, and the case reads
the paired `function_call_output` of the next request
(`mcp_host_conformance.harness.observe.status_problem`). The status must be stated in
that output: the catalog's framing `[Tool result: X]`, a structured `status` field, or a
status phrase such as `Status: X` (a bare word anywhere states nothing; the first
statement decides), and the adapter's Turn must report it too. Cases check the rule's
status names and the facts it requires (the server's message, the omitted data absent, the
size), never the reference client's wording.
"""

from __future__ import annotations

import base64
import re
import threading

import pytest

from mcp_host_conformance.harness.observe import (
    call_outputs,
    model_requests,
    output_text,
    paired_outputs,
    reply_calls,
    status_problem,
)
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

KIB = 1024
OUTPUT_LIMIT = 64 * KIB
FRAMING_SLACK = 1 * KIB  # room for a status line or marker around the cut output (RES-10)

OMITTED = re.compile(
    r"omit|not included|not shown|removed|withheld|dropped|elided|skipped|not sent|stripped|"
    r"redacted|not forwarded|excluded",
    re.IGNORECASE,
)
TRUNCATED = re.compile(
    r"truncat|\bcut\b|cut off|omitted|shortened|elided|clipped|remaining|more bytes|…|\.\.\.",
    re.IGNORECASE,
)
# RES-12, matched loosely on meaning: the server may have acted...
MAY_HAVE_ACTED = re.compile(
    r"\b(may|might|could|possibly|perhaps|can't tell|cannot tell|unclear)\b[^.]{0,80}?"
    r"\b(acted|act|run|ran|executed|execute|processed|process|completed|applied|performed|"
    r"received|taken effect|happened|succeeded|gone through|carried out)\b",
    re.IGNORECASE,
)
# ...and the call must not be retried automatically.
NO_RETRY = re.compile(
    r"(\b(not|never|no|don't|do not|must not|mustn't|should not|shouldn't)\b"
    r"[^.]{0,60}?\bretr(y|ied|ies|ying)\b)"
    r"|(\bretr(y|ied|ies|ying)\b[^.]{0,40}?\b(not|never|forbidden|prohibited|unsafe|disabled)\b)",
    re.IGNORECASE,
)


def one_tool(
    reply: Reply, name: str = "query", misbehaviour: Misbehaviour | None = None, **spec
) -> ServerSpec:
    return ServerSpec(
        name="docs",
        tools=[Tool(name, "A tool of the mock docs server.", reply=reply)],
        misbehaviour=misbehaviour or Misbehaviour(),
        **spec,
    )


def ask_one_call(host, model, server_mock, *, stdio=False, tool="query", **start):
    """Configure `server_mock` as "docs", start, make one approved call of `tool`;
    (running, turn, the output text the model received or None)."""
    if stdio:
        host.add_stdio("docs", server_mock)
    else:
        host.add_http("docs", server_mock)
    running = host.start(**start)
    model.script([Step.call(server="docs", tool=tool, arguments={"q": "x"}), Step.text("ok")])
    turn = running.ask("use the tool", approve="y")
    return running, turn, last_output(model)


def last_output(model) -> str | None:
    pairs = call_outputs(model)
    if not pairs or not pairs[-1][1]:
        return None
    return output_text(pairs[-1][1][0])


def shown(text: str | None) -> str:
    return "no output reached the model" if text is None else f"the model received {text[:300]!r}"


@pytest.mark.requirements("RES-1")
def test_text_content_is_completed_in_order(host, http_mock, model):
    """Returned content gives status `completed`: text blocks in order."""
    docs = http_mock(one_tool(Reply.text("alpha-block-1", "bravo-block-2", "charlie-block-3")))
    _, turn, text = ask_one_call(host, model, docs)

    problem = status_problem(model, turn, "completed")
    check(problem is None, ids="RES-1", expected="status completed", actual=problem or "")
    positions = [text.find(t) for t in ("alpha-block-1", "bravo-block-2", "charlie-block-3")]
    check(
        -1 not in positions and positions == sorted(positions),
        ids="RES-1",
        expected="the three text blocks, in order",
        actual=f"positions {positions} in {text[:300]!r}",
    )


@pytest.mark.requirements("RES-2")
def test_binary_content_is_omitted(host, http_mock, model, secrets):
    """Image, audio and binary (blob) content is marked as omitted;
    its data never reaches the model."""
    data = {
        kind: base64.b64encode(secrets.new(kind).encode()).decode()
        for kind in ("image", "audio", "blob")
    }
    reply = Reply(
        content=[
            {"type": "text", "text": "text-before"},
            {"type": "image", "data": data["image"], "mimeType": "image/png"},
            {"type": "audio", "data": data["audio"], "mimeType": "audio/wav"},
            {
                "type": "resource",
                "resource": {
                    "uri": "mem://blob/1",
                    "blob": data["blob"],
                    "mimeType": "application/zip",
                },
            },
            {"type": "text", "text": "text-after"},
        ]
    )
    docs = http_mock(one_tool(reply))
    _, turn, text = ask_one_call(host, model, docs)

    leaked = secrets.found_in_journal(model.journal, "model requests")
    check(
        not leaked,
        ids="RES-2",
        expected="no image, audio or blob data in any model request",
        actual="; ".join(leaked),
    )
    check(
        text is not None and OMITTED.search(text) is not None,
        ids="RES-2",
        expected="the output marks the binary content as omitted",
        actual=shown(text),
    )
    check(
        text is not None and "text-before" in text and "text-after" in text,
        ids="RES-2",
        expected="the text blocks beside the binary content still reach the model",
        actual=shown(text),
    )


@pytest.mark.requirements("RES-3")
def test_resource_links_are_listed_not_opened(host, http_mock, model):
    """Resource links are listed (URI) but not opened."""
    uri = "file:///srv/notes/plan-7f3a.txt"
    docs = http_mock(
        one_tool(Reply(content=[{"type": "resource_link", "uri": uri, "name": "plan"}]))
    )
    _, turn, text = ask_one_call(host, model, docs)

    reads = docs.journal.count("resources/read")
    check(
        reads == 0,
        ids="RES-3",
        expected="no resources/read",
        actual=f"{reads} resources/read: {docs.journal.methods()}",
    )
    check(
        text is not None and uri in text,
        ids="RES-3",
        expected=f"the link's URI {uri} listed",
        actual=shown(text),
    )


@pytest.mark.requirements("RES-4")
def test_structured_content_used_without_text(host, http_mock, model):
    """`structuredContent` is used when there is no text content: none at all, or only
    non-text blocks (an image, a resource link, a blob resource)."""
    data = {"city": "Oslo", "temperature": 21.5, "unit": "celsius-7c1"}
    beside = {"city": "Bergen", "temperature": 9.25, "unit": "celsius-4e8"}
    non_text = [
        {
            "type": "image",
            "data": base64.b64encode(b"\x89PNG-res4").decode(),
            "mimeType": "image/png",
        },
        {"type": "resource_link", "uri": "file:///res4/map.png", "name": "map"},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///res4/raw.bin",
                "blob": "AAEC",
                "mimeType": "application/octet-stream",
            },
        },
    ]
    docs = http_mock(
        ServerSpec(
            name="docs",
            tools=[
                Tool("query", "Structured content only.", reply=Reply.structured_only(data)),
                Tool(
                    "mixed",
                    "Non-text blocks and structured content.",
                    reply=Reply(content=non_text, structured=beside),
                ),
            ],
        )
    )
    host.add_http("docs", docs)
    running = host.start()
    model.script(
        [
            Step.call(server="docs", tool="query", arguments={"q": "x"}),
            Step.call(server="docs", tool="mixed", arguments={"q": "y"}),
            Step.text("ok"),
        ]
    )
    turn = running.ask("use both", approve="y")

    for index, (kind, values) in enumerate(
        (("no content", data), ("only non-text blocks", beside))
    ):
        problem = status_problem(model, turn, "completed", call=index)
        check(
            problem is None,
            ids="RES-4",
            expected=f"status completed ({kind})",
            actual=problem or "",
        )
        pairs = call_outputs(model)
        text = output_text(pairs[index][1][0]) if len(pairs) > index and pairs[index][1] else ""
        missing = [str(v) for v in values.values() if str(v) not in text]
        check(
            not missing,
            ids="RES-4",
            expected=f"the structured content {values} in the output ({kind})",
            actual=f"missing {missing}; {shown(text)}",
        )


@pytest.mark.requirements("RES-5")
def test_errors_are_failed_with_the_servers_message(host, http_mock, model):
    """A JSON-RPC error, or a result with `isError: true`,
    gives status `failed` with the server's message."""
    flagged = "disk quota exceeded on volume Q7"
    rpc = "index shard-42 is offline"
    docs = http_mock(
        ServerSpec(
            name="docs",
            tools=[
                Tool("flagged", "Fails with isError.", reply=Reply.tool_error(flagged)),
                Tool("broken", "Fails with a JSON-RPC error.", reply=Reply.rpc_error(rpc)),
            ],
        )
    )
    host.add_http("docs", docs)
    running = host.start()
    model.script(
        [
            Step.call(server="docs", tool="flagged", arguments={"q": "x"}),
            Step.call(server="docs", tool="broken", arguments={"q": "y"}),
            Step.text("ok"),
        ]
    )
    turn = running.ask("use both", approve="y")

    for index, (kind, message) in enumerate((("isError result", flagged), ("JSON-RPC error", rpc))):
        problem = status_problem(model, None, "failed", call=index)
        check(
            problem is None,
            ids="RES-5",
            expected=f"a {kind} gives status failed",
            actual=problem or "",
        )
        text = output_text(call_outputs(model)[index][1][0])
        check(
            message in text,
            ids="RES-5",
            expected=f"the server's message {message!r}",
            actual=shown(text),
        )
    statuses = [c.status for c in turn.calls]
    check(
        statuses == ["failed", "failed"],
        ids="RES-5",
        expected="the client reports failed twice",
        actual=str(statuses),
    )


@pytest.mark.requirements("RES-6")
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_no_answer_within_call_timeout_is_unknown(
    host, http_mock, stdio_mock, model, timeouts, transport
):
    """No answer within the call timeout (30 s by default) gives `unknown` (scaled timeout)."""
    spec = one_tool(Reply.text("never sent"), misbehaviour=Misbehaviour(stall=["tools/call"]))
    mock = http_mock(spec) if transport == "http" else stdio_mock(spec)
    _, turn, text = ask_one_call(host, model, mock, stdio=transport == "stdio")

    problem = status_problem(model, turn, "unknown")
    check(
        problem is None,
        ids="RES-6",
        expected=f"status unknown after the {timeouts.call:g} s call timeout",
        actual=problem or "",
    )


@pytest.mark.slow
@pytest.mark.requirements("RES-6")
def test_default_call_timeout_is_30_seconds(host, http_mock, model, description):
    """No answer within the call timeout (30 s by default) gives `unknown`: the real default."""
    check(
        abs(description.call_timeout - 30.0) < 0.5,
        ids="RES-6",
        expected="a default call timeout of 30 s",
        actual=f"the client declares {description.call_timeout:g} s",
    )
    docs = http_mock(
        one_tool(Reply.text("never sent"), misbehaviour=Misbehaviour(stall=["tools/call"]))
    )
    _, turn, _text = ask_one_call(host, model, docs, call_timeout=description.call_timeout)

    problem = status_problem(model, turn, "unknown")
    check(problem is None, ids="RES-6", expected="status unknown after 30 s", actual=problem or "")
    sent = docs.journal.entries("tools/call")[0].time
    told = model.journal.entries(kind="http")[-1].time
    waited = told - sent
    check(
        27.0 <= waited <= 40.0,
        ids="RES-6",
        expected="the client waits about 30 s for the answer",
        actual=f"it told the model {waited:.1f} s after sending the call",
    )


@pytest.mark.requirements("RES-7")
@pytest.mark.parametrize("drop", ["reset", "close"])
def test_connection_lost_after_sending_is_unknown(host, http_mock, model, drop):
    """A connection lost after the call was sent gives `unknown`."""
    docs = http_mock(one_tool(Reply.text("never sent"), misbehaviour=Misbehaviour(drop_call=drop)))
    _, turn, _text = ask_one_call(host, model, docs)

    problem = status_problem(model, turn, "unknown")
    check(
        problem is None,
        ids="RES-7",
        expected=f"status unknown after a connection {drop}",
        actual=problem or "",
    )


@pytest.mark.requirements("RES-8")
@pytest.mark.parametrize("mode", ["json", "sse", "stdio"])
def test_oversized_response_is_unknown(host, http_mock, stdio_mock, model, mode):
    """A response over the 1 MiB message limit after the call was sent gives `unknown`."""
    spec = one_tool(
        Reply.text("small"),
        misbehaviour=Misbehaviour(oversize_at="tools/call"),
        response_mode="sse" if mode == "stdio" else mode,
    )
    mock = stdio_mock(spec) if mode == "stdio" else http_mock(spec)
    _, turn, _text = ask_one_call(host, model, mock, stdio=mode == "stdio")

    problem = status_problem(model, turn, "unknown")
    check(
        problem is None,
        ids="RES-8",
        expected=f"status unknown for a {mode} answer over 1 MiB",
        actual=problem or "",
    )


@pytest.mark.needs_cancel
@pytest.mark.requirements("RES-9")
def test_cancelled_call_is_unknown(host, http_mock, model, timeouts):
    """A call cancelled by the user gives `unknown`."""
    docs = http_mock(
        one_tool(Reply.text("never sent"), misbehaviour=Misbehaviour(stall=["tools/call"]))
    )
    host.add_http("docs", docs)
    long_timeout = 4 * timeouts.wait  # long enough that only the cancel can end the call in time
    running = host.start(call_timeout=long_timeout)
    model.script([Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")])
    cancelled = threading.Event()
    problems: list[BaseException] = []

    def cancel_when_sent() -> None:
        try:
            docs.journal.wait_for("tools/call", timeout=timeouts.wait)
            running.cancel()
            cancelled.set()
        except BaseException as exc:  # noqa: BLE001 - handed to the case below
            problems.append(exc)

    helper = threading.Thread(target=cancel_when_sent, name="RES-9 cancel", daemon=True)
    helper.start()
    turn = running.ask("use the tool", approve="y", bound=long_timeout + timeouts.wait * 2)
    helper.join(timeouts.wait)
    check(
        cancelled.is_set(),
        ids="RES-9",
        expected="the call reached the server and was cancelled",
        actual=str(problems or "no cancel"),
    )

    problem = status_problem(model, turn, "unknown")
    check(
        problem is None, ids="RES-9", expected="status unknown after a cancel", actual=problem or ""
    )
    sent = docs.journal.entries("tools/call")[0].time
    told = model.journal.entries(kind="http")[-1].time
    check(
        told - sent < long_timeout / 2,
        ids="RES-9",
        expected="the cancel ends the call (not its timeout)",
        actual=(
            f"the model was told {told - sent:.1f} s after the call "
            f"(call timeout {long_timeout:g} s)"
        ),
    )


@pytest.mark.requirements("RES-10")
def test_result_over_64_kib_is_output_limit(host, http_mock, model):
    """A result over 64 KiB gives `output_limit`: its first part, marked as truncated; the
    model receives at most 64 KiB of it.

    Measured as the UTF-8 size of the whole output text the model receives, allowing 1 KiB
    more for the client's framing (a status line, the truncation marker). The result is
    ~120 KiB of UTF-8 but under 64 Ki characters, so counting characters is not enough."""
    lines = "".join(f"line {i:05d} " + "€" * 16 + "\n" for i in range(2000))
    result = "RESULT-BEGIN\n" + lines + "RESULT-END"
    assert len(result) < OUTPUT_LIMIT < len(result.encode()), "the fixture must straddle the limit"
    docs = http_mock(one_tool(Reply.text(result)))
    _, turn, text = ask_one_call(host, model, docs)

    problem = status_problem(model, turn, "output_limit")
    check(problem is None, ids="RES-10", expected="status output_limit", actual=problem or "")
    size = len((text or "").encode("utf-8"))
    check(
        size <= OUTPUT_LIMIT + FRAMING_SLACK,
        ids="RES-10",
        expected=(
            "at most 64 KiB of the result "
            f"(output ≤ {OUTPUT_LIMIT + FRAMING_SLACK} bytes with framing)"
        ),
        actual=f"the model received {size} bytes",
    )
    head = result[:8000]
    check(
        text is not None and head in text and "RESULT-END" not in text,
        ids="RES-10",
        expected="the first part of the result (its start whole, its end absent)",
        actual=shown(text),
    )
    rest = (text or "").replace(head, "")
    check(
        TRUNCATED.search(rest) is not None,
        ids="RES-10",
        expected="a mark that the output was truncated",
        actual=f"the output ends with {(text or '')[-120:]!r}",
    )


@pytest.mark.requirements("RES-11")
def test_every_call_gets_exactly_one_output(host, http_mock, model):
    """Every function call the model made gets exactly one paired output (same `call_id`) in
    the next model request, whatever its status."""
    docs = http_mock(
        ServerSpec(
            name="docs",
            tools=[
                Tool("ok", "Works.", reply=Reply.text("fine")),
                Tool("bad", "Fails.", reply=Reply.tool_error("nope")),
            ],
        )
    )
    flaky = http_mock(
        one_tool(
            Reply.text("never sent"), name="flaky", misbehaviour=Misbehaviour(drop_call="close")
        )
    )
    host.add_http("docs", docs)
    host.add_http("flaky", flaky)
    running = host.start()
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="docs", tool="ok", arguments={"k": "approve-1"}),
                    Step.call(server="docs", tool="bad", arguments={"k": "approve-2"}),
                    Step.call(server="docs", tool="ok", arguments={"k": "deny-me"}),
                    Step.call(server="flaky", tool="flaky", arguments={"k": "approve-3"}),
                ]
            ),
            Step.text("ok"),
        ]
    )
    running.ask("use them all", approve=lambda c: "n" if "deny-me" in c.arguments else "y")

    bodies = model_requests(model)
    made = reply_calls(model)[0] if reply_calls(model) else []
    check(
        len(made) == 4,
        ids="RES-11",
        expected="the model made 4 calls (precondition)",
        actual=f"{len(made)} calls",
    )
    check(
        len(bodies) >= 2,
        ids="RES-11",
        expected="a next model request",
        actual=f"{len(bodies)} request(s)",
    )
    counts = {c["call_id"]: len(paired_outputs(bodies[1], c["call_id"])) for c in made}
    check(
        all(n == 1 for n in counts.values()),
        ids="RES-11",
        expected=(
            "exactly one output per call_id in the next request "
            "(completed, failed, denied, unknown)"
        ),
        actual=", ".join(f"{c['name']}({c['arguments']}): {counts[c['call_id']]}" for c in made),
    )


@pytest.mark.requirements("RES-12")
@pytest.mark.parametrize("cause", ["close", "timeout"])
def test_unknown_output_says_may_have_acted_and_no_retry(host, http_mock, model, cause):
    """The `unknown` output tells the model that the server may have acted and that the call
    must not be retried automatically (matched on meaning, several phrasings accepted)."""
    bad = (
        Misbehaviour(drop_call="close") if cause == "close" else Misbehaviour(stall=["tools/call"])
    )
    docs = http_mock(one_tool(Reply.text("never sent"), misbehaviour=bad))
    _, turn, text = ask_one_call(host, model, docs)

    problem = status_problem(model, turn, "unknown")
    check(problem is None, ids="RES-12", expected="status unknown", actual=problem or "")
    check(
        MAY_HAVE_ACTED.search(text or "") is not None,
        ids="RES-12",
        expected="the output says the server may have acted (e.g. 'may have run')",
        actual=shown(text),
    )
    check(
        NO_RETRY.search(text or "") is not None,
        ids="RES-12",
        expected="the output says the call must not be retried automatically (e.g. 'do not retry')",
        actual=shown(text),
    )
