"""RES: result mapping.

Strategy: what counts is what the host told, set against what happened (`Told`): the
model (the mock model journals the call_ids of every call it makes, and the case reads the
paired `function_call_output` of the next request) and the person (the statuses the
adapter's Turn reports). Each rule is judged on its substance, from the model journal and
the servers' journals: the text blocks in order, the binary data absent and marked, the
links listed and never opened, `structuredContent` used, the server's message kept, the
truncation marked and bounded, the outcome told before the server answered. A status is
presentation: an output need not state one (a host may hand the model the server's text as
it came), but a status it states (the catalog's framing `[Tool result: X]`, a structured
`status` field, a status phrase such as `Status: X`, or the host's declared vocabulary;
`harness.observe.stated_status`), and the status the person was shown, must not contradict
what happened. Never the reference client's wording.

Each variant a host or its libraries treat differently is its own server in one start,
called once in one reply, and told apart by a tag in the call's arguments: every transport
(Streamable HTTP answering in JSON, in SSE, stdio), every way a call can end badly at the
HTTP layer (reset, closed, a 5xx status, a garbled body) and over stdio (the server exits,
prints garbage), every result shape the mapping table allows, the limits on both sides
(1 MiB messages, 64 KiB outputs) counted in bytes with multi-byte content. A variant
whose outcome another rule decides first (the call must end `unknown` before RES-12 can
look at the text) is a `precondition` under that rule.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_host_conformance.harness.cases.observe import (
    MAY_HAVE_ACTED,
    NO_RETRY,
    is_model_request,
    model_requests,
    output_text,
    reply_calls,
    stated_status,
    status_contradiction,
    status_not_conveyed,
)
from mcp_host_conformance.harness.verdicts.outcomes import check, precondition
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool

KIB = 1024
MIB = 1024 * KIB
OUTPUT_LIMIT = 64 * KIB
FRAMING_SLACK = 1 * KIB  # room for a status line or marker around the output (RES-10)
MESSAGE_LIMIT = MIB

OMITTED = re.compile(
    r"omit|not included|not shown|removed|withheld|dropped|elided|skipped|not sent|stripped|"
    r"redacted|not forwarded|excluded",
    re.IGNORECASE,
)
TRUNCATED = re.compile(
    r"truncat|\bcut\b|cut off|omitted|shortened|elided|clipped|remaining|more bytes|…|\.\.\.",
    re.IGNORECASE,
)
# How a server answers: over HTTP in JSON or SSE, over stdio; and as real servers also do, a
# JSON body chunked, an SSE stream sent whole with a Content-Length, progress notifications
# before the result (to a host that asks for them).
TRANSPORTS = ("json", "sse", "stdio", "json-chunked", "sse-length", "sse-progress")
FRAMING = {"json-chunked": "chunked", "sse-length": "length"}
CALLS_A_TURN = 8
CALLS_A_SESSION = 15


def shown(text: str | None) -> str:
    return "no output reached the model" if text is None else f"the model received {text[:300]!r}"


# ---- servers, calls and what the model was told -------------------------------------------


def server_of(http_mock, stdio_mock, transport: str, tools: list[Tool], **misbehaviour: Any):
    """A mock serving `tools` over `transport` ("json", "sse": HTTP answering in that mode;
    "stdio"; or one of TRANSPORTS' framings), misbehaving as told."""
    if transport == "sse-progress":
        tools = [
            dataclasses.replace(t, reply=dataclasses.replace(t.reply, progress=2)) for t in tools
        ]
    spec = ServerSpec(
        name="docs",
        tools=tools,
        response_mode="json" if transport.startswith("json") else "sse",
        misbehaviour=Misbehaviour(**misbehaviour),
        framing=FRAMING.get(transport, "default"),
    )
    return stdio_mock(spec) if transport == "stdio" else http_mock(spec)


@dataclass
class Variant:
    """One server of a case: its configured name, its mock, its transport, the tools to call."""

    name: str
    mock: Any
    transport: str
    tools: tuple[str, ...] = ("query",)


@dataclass
class Told:
    """What the host told about each tagged call (tag = "server/tool"), to set against what
    happened: the outputs the model received for it, and the status the person was shown
    (the Turn's; by call where the function names tell the calls apart, and as a count of
    all the Turn's statuses)."""

    outputs: dict[str, list[Any]] = field(default_factory=dict)
    reported: Counter[str] = field(default_factory=Counter)  # statuses the Turn reported
    shown: dict[str, str] = field(default_factory=dict)  # tag -> the status shown for it

    def text(self, tag: str) -> str | None:
        found = self.outputs.get(tag) or []
        return output_text(found[0]) if found else None

    def status_problem(self, tag: str, *happened: str, conveyed: bool = False) -> str | None:
        """Why what the host told about call `tag` does not fit what happened (one of
        `happened`); None if it does. The model must have received one output for it, stating
        another status nowhere; with `conveyed` (the rules that give a status: RES-1, RES-5
        to RES-9), stating it, in the host's words or the catalog's; the person must not have
        been shown another."""
        found = self.outputs.get(tag)
        if found is None:
            return f"{tag}: the model never made this call (or the client never asked it)"
        if not found:
            return f"{tag}: no function_call_output for it in the next model request"
        if len(found) > 1:
            return f"{tag}: {len(found)} outputs for it in the next model request"
        judge = status_not_conveyed if conveyed else status_contradiction
        contradiction = judge(found[0], *happened)
        if contradiction is not None:
            return f"{tag}: {contradiction}"
        shown = self.shown.get(tag)
        if shown is not None and shown not in happened:
            return f"{tag}: the person was shown status {shown} (expected {' or '.join(happened)})"
        return None

    def stated(self, tag: str) -> str | None:
        """The status the model was told for `tag` (stated, or else shown to the person)."""
        found = self.outputs.get(tag) or []
        said = stated_status(found[0]) if len(found) == 1 else None
        return said or self.shown.get(tag)


def add_variants(host, variants: Iterable[Variant]) -> None:
    for v in variants:
        if v.transport == "stdio":
            host.add_stdio(v.name, v.mock)
        else:
            host.add_http(v.name, v.mock)


def call_each(
    host, model, variants: list[Variant], one_per_reply: bool = False, **start: Any
) -> tuple[Any, Told]:
    """Configure every variant, start, and make one approved call of each tool of each, in
    one reply (or each in a reply of its own: then what the host does with the other calls
    of a reply cannot matter), with arguments `{"tag": "server/tool"}`; (the last session,
    what the model was told). A call limit is TURN-1's business, not this case's: at most
    CALLS_A_TURN calls a turn and CALLS_A_SESSION a session (a new session for the rest), so
    that a host counting the limit wrongly (per session, or at 15) meets none here."""
    add_variants(host, variants)
    calls = [
        Step.call(server=v.name, tool=tool, arguments={"tag": f"{v.name}/{tool}"})
        for v in variants
        for tool in v.tools
    ]
    turns = []
    running = None
    for first in range(0, len(calls), CALLS_A_SESSION):
        if running is not None:
            running.stop()
            running = host.start_again(**start)
        else:
            running = host.start(**start)
        session = calls[first : first + CALLS_A_SESSION]
        for at in range(0, len(session), CALLS_A_TURN):
            chunk = session[at : at + CALLS_A_TURN]
            model.script([*(chunk if one_per_reply else [Step.calls(chunk)]), Step.text("ok")])
            turns.append(running.ask("use every tool", approve="y"))
    if running is None:
        running = host.start(**start)
    return running, told(model, turns)


def told(model, turns=None) -> Told:
    """Each call the mock model made (by the tag in its arguments) with the outputs paired to
    it in the next model request, and the statuses the client reported (in `turns`: a Turn
    or a list of them), each call's own where its function name was called once."""
    bodies = model_requests(model)
    turns = [] if turns is None else turns if isinstance(turns, list) else [turns]
    results = [c for turn in turns for c in turn.calls]
    result = Told(reported=Counter(c.status for c in results))
    names: Counter[str] = Counter()
    tag_of: dict[str, str] = {}
    for k, calls in enumerate(reply_calls(model)):
        following = bodies[k + 1] if k + 1 < len(bodies) else None
        items = following.get("input") if isinstance(following, dict) else None
        for call in calls:
            try:
                tag = json.loads(call.get("arguments") or "{}").get("tag")
            except (ValueError, AttributeError):
                tag = None
            if not isinstance(tag, str):
                continue
            names[str(call.get("name"))] += 1
            tag_of[str(call.get("name"))] = tag
            result.outputs[tag] = [
                i.get("output")
                for i in (items if isinstance(items, list) else [])
                if isinstance(i, dict)
                and i.get("type") == "function_call_output"
                and i.get("call_id") == call["call_id"]
            ]
    shown_by_name = Counter(c.tool for c in results)
    for c in results:
        # the Turn names a call by the function the model called: where that name was
        # called once, its status is that call's (a host naming calls otherwise, or a
        # function called twice, is judged by the count of statuses, `reported_problem`)
        if names[c.tool] == 1 and shown_by_name[c.tool] == 1:
            result.shown[tag_of[c.tool]] = c.status
    return result


def request_times(model) -> list[float]:
    """When each model request (`model_requests`) arrived."""
    return [e.time for e in model.journal.entries(kind="http") if is_model_request(e)]


def reported_problem(told_: Told, expected: Iterable[str]) -> str | None:
    """Whether the client reported (in its Turn) the statuses the model was told."""
    wanted = Counter(expected)
    if told_.reported == wanted:
        return None
    return f"the client reported statuses {dict(told_.reported)}, the model was told {dict(wanted)}"


# ---- RES-1 ---------------------------------------------------------------------------------

# Multi-byte in every block: a client that decodes a transport's bytes with another charset
# (latin-1 for a text/event-stream without a charset, say) garbles them.
BLOCKS = ("alpha Zürich ✓", "bravo €5 中文", "charlie 😀 ok")


@pytest.mark.mcphc_requirements("RES-1")
def test_text_blocks_complete_in_order_on_every_transport(host, http_mock, stdio_mock, model):
    """Returned content gives status `completed`: text blocks in order; over HTTP answering
    in JSON and in SSE, and over stdio; multi-byte text intact; also when the result has
    structuredContent beside its text (the text blocks are what the model receives)."""
    variants = []
    for transport in TRANSPORTS:
        beside = Reply(
            content=[{"type": "text", "text": f"delta {transport} Ünïcödé"}],
            structured={"note": "structured beside text"},
        )
        tools = [Tool("blocks", reply=Reply.text(*BLOCKS)), Tool("beside", reply=beside)]
        variants.append(
            Variant(
                transport,
                server_of(http_mock, stdio_mock, transport, tools),
                transport,
                ("blocks", "beside"),
            )
        )
    _, told_ = call_each(host, model, variants)

    problems = []
    for transport in TRANSPORTS:
        for tool, texts in (("blocks", BLOCKS), ("beside", (f"delta {transport} Ünïcödé",))):
            tag = f"{transport}/{tool}"
            problem = told_.status_problem(tag, "completed", conveyed=True)
            if problem:
                problems.append(problem)
                continue
            text = told_.text(tag) or ""
            positions = [text.find(t) for t in texts]
            if -1 in positions or positions != sorted(positions):
                problems.append(f"{tag}: the text blocks {texts} not all there, in order: {text!r}")
    problems.append(reported_problem(told_, ["completed"] * 2 * len(TRANSPORTS)) or "")
    problems = [p for p in problems if p]
    check(
        not problems,
        ids="RES-1",
        expected=(
            "every text block, intact and in order, over JSON, SSE and stdio (also with "
            "structuredContent beside the text), and no status but completed told"
        ),
        actual="; ".join(problems),
    )


# ---- RES-2 ---------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("RES-2")
def test_binary_content_is_omitted(host, http_mock, stdio_mock, model, secrets):
    """Image, audio and binary (blob) content is marked as omitted; its data never reaches
    the model: an image, audio, a blob of an opaque type, and a blob whose type says text
    (never decoded and shown)."""
    data = {
        kind: base64.b64encode(secrets.new(kind).encode()).decode()
        for kind in ("image", "audio", "blob", "text-blob")
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
            {
                "type": "resource",
                "resource": {
                    "uri": "mem://blob/2.txt",
                    "blob": data["text-blob"],
                    "mimeType": "text/plain",
                },
            },
            {"type": "text", "text": "text-after"},
        ]
    )
    docs = server_of(http_mock, stdio_mock, "sse", [Tool("query", reply=reply)])
    _, told_ = call_each(host, model, [Variant("docs", docs, "sse")])

    text = told_.text("docs/query")
    leaked = secrets.found_in_journal(model.journal, "model requests")
    check(
        not leaked,
        ids="RES-2",
        expected="no image, audio or blob data in any model request (nor a blob decoded)",
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
    problem = told_.status_problem("docs/query", "completed") or reported_problem(
        told_, ["completed"]
    )
    check(
        problem is None,
        ids="RES-2",
        expected="no status but completed told (the call returned content)",
        actual=problem or "",
    )


# ---- RES-3 ---------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("RES-3")
def test_resource_links_are_listed_not_opened(host, http_mock, stdio_mock, model, secrets):
    """Resource links are listed (URI) but not opened: not with `resources/read` (over HTTP
    or stdio), not by fetching an http URI, not by reading a file URI; several links
    beside text."""
    elsewhere = http_mock(ServerSpec(name="elsewhere"))  # any request to it is journalled
    page = elsewhere.url.rsplit("/", 1)[0] + "/notes-7f3a.txt"
    note = host.project / "plan-7f3a.txt"
    note.write_text(secrets.new("linked-file"))
    links = [
        {"type": "text", "text": "see:"},
        {"type": "resource_link", "uri": page, "name": "notes"},
        {"type": "resource_link", "uri": note.as_uri(), "name": "plan"},
        {"type": "text", "text": "end of links"},
    ]
    remote = server_of(http_mock, stdio_mock, "sse", [Tool("query", reply=Reply(content=links))])
    local_uri = "mem://notes/local-7f3a"
    local = server_of(
        http_mock, stdio_mock, "stdio", [Tool("query", reply=Reply.resource_link(local_uri))]
    )
    _, told_ = call_each(
        host, model, [Variant("remote", remote, "sse"), Variant("local", local, "stdio")]
    )

    reads = remote.journal.count("resources/read") + local.journal.count("resources/read")
    check(
        reads == 0,
        ids="RES-3",
        expected="no resources/read",
        actual=f"{reads} resources/read: {remote.journal.methods()} {local.journal.methods()}",
    )
    fetched = len(elsewhere.journal.entries(kind="http"))
    leaked = secrets.found_in_journal(model.journal, "model requests")
    check(
        fetched == 0 and not leaked,
        ids="RES-3",
        expected="no link opened: nothing fetched from the http URI, the file not read",
        actual=f"{fetched} request(s) to the linked http URI; file content sent: {leaked}",
    )
    missing = [
        uri
        for tag, uri in (
            ("remote/query", page),
            ("remote/query", note.as_uri()),
            ("local/query", local_uri),
        )
        if uri not in (told_.text(tag) or "")
    ]
    check(
        not missing,
        ids="RES-3",
        expected="every link's URI listed in the output",
        actual=f"not listed: {missing}; {shown(told_.text('remote/query'))}",
    )
    problems = [told_.status_problem(tag, "completed") for tag in ("remote/query", "local/query")]
    problems.append(reported_problem(told_, ["completed"] * 2))
    check(
        not any(problems),
        ids="RES-3",
        expected="no status but completed told (the calls returned content)",
        actual="; ".join(p for p in problems if p),
    )


# ---- RES-4 ---------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("RES-4")
def test_structured_content_used_without_text(host, http_mock, stdio_mock, model):
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
    docs = server_of(
        http_mock,
        stdio_mock,
        "sse",
        [
            Tool("query", reply=Reply.structured_only(data)),
            Tool("mixed", reply=Reply(content=non_text, structured=beside)),
        ],
    )
    _, told_ = call_each(host, model, [Variant("docs", docs, "sse", ("query", "mixed"))])

    problems = []
    for tag, kind, values in (
        ("docs/query", "no content", data),
        ("docs/mixed", "only non-text blocks", beside),
    ):
        problem = told_.status_problem(tag, "completed")
        text = told_.text(tag) or ""
        missing = [str(v) for v in values.values() if str(v) not in text]
        if problem:
            problems.append(f"{kind}: {problem}")
        elif missing:
            problems.append(f"{kind}: the structured content {missing} missing; {shown(text)}")
    problems.append(reported_problem(told_, ["completed"] * 2) or "")
    problems = [p for p in problems if p]
    check(
        not problems,
        ids="RES-4",
        expected=(
            "the structured content (no content; only non-text blocks), and no status but "
            "completed told"
        ),
        actual="; ".join(problems),
    )


# ---- RES-5 ---------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("RES-5")
def test_errors_are_failed_with_the_servers_message(host, http_mock, stdio_mock, model):
    """A JSON-RPC error, or a result with `isError: true` (with or without text), gives status
    `failed` with the server's message; over HTTP in JSON and SSE, and over stdio. (A
    JSON-RPC error delivered on a resumed SSE stream: `failed` with the message if the
    client resumes, `unknown` if it does not.)"""
    variants = []
    for transport in TRANSPORTS:
        tools = [
            Tool("flagged", reply=Reply.tool_error(f"disk quota exceeded on {transport} Q7")),
            Tool("bare", reply=Reply(content=[], is_error=True)),
            Tool("broken", reply=Reply.rpc_error(f"index shard-42 of {transport} is offline")),
        ]
        variants.append(
            Variant(
                transport,
                server_of(http_mock, stdio_mock, transport, tools),
                transport,
                ("flagged", "bare", "broken"),
            )
        )
    polled = server_of(http_mock, stdio_mock, "sse", [Tool("query")], poll_call="error")
    variants.append(Variant("polled", polled, "sse"))
    _, told_ = call_each(host, model, variants)

    problems = []
    for transport in TRANSPORTS:
        for tool, message in (
            ("flagged", f"disk quota exceeded on {transport} Q7"),
            ("bare", None),
            ("broken", f"index shard-42 of {transport} is offline"),
        ):
            tag = f"{transport}/{tool}"
            problem = told_.status_problem(tag, "failed", conveyed=True)
            if problem:
                problems.append(problem)
            elif message is not None and message not in (told_.text(tag) or ""):
                problems.append(f"{tag}: the server's message {message!r} missing")
    problem = told_.status_problem("polled/query", "failed", "unknown", conveyed=True)
    if problem:
        problems.append(problem)
    elif told_.stated("polled/query") == "failed" and "Internal error" not in (
        told_.text("polled/query") or ""
    ):
        problems.append("polled/query: failed without the server's message")
    # the polled call is failed (resumed) or unknown (not): what the host said, or either
    polled = told_.stated("polled/query")
    options = [polled] if polled else ["failed", "unknown"]
    base = ["failed"] * 3 * len(TRANSPORTS)
    if all(reported_problem(told_, [*base, o]) for o in options):
        problems.append(reported_problem(told_, [*base, options[0]]) or "")
    problems = [p for p in problems if p]
    check(
        not problems,
        ids="RES-5",
        expected=(
            "the server's message for isError (with and without text) and JSON-RPC errors, "
            "and no status but failed told, over JSON, SSE and stdio (and JSON chunked, SSE "
            "with a length, SSE with progress)"
        ),
        actual="; ".join(problems),
    )


# ---- RES-6 ---------------------------------------------------------------------------------

# The servers answer at ANSWER_AT times the call timeout: a client that waits for them
# (no timeout, its own default, the connect timeout, which these cases set above that)
# gets the answer and says `completed`; one that keeps the call timeout says `unknown`
# long before.
ANSWER_AT = 10
CONNECT_AT = 12


@pytest.mark.mcphc_requirements("RES-6")
def test_no_answer_within_call_timeout_is_unknown(host, http_mock, stdio_mock, model, timeouts):
    """No answer within the call timeout gives `unknown` (scaled): over HTTP and stdio, and
    on a resumed SSE stream that never delivers. The servers answer at 10x the call timeout
    and the connect timeout is 12x: a client that waits for the server, or times calls with
    its connect timeout or a default of its own, is told the answer instead, or tells the
    model after the servers answered."""
    # Half the usual call timeout: every call here ends unknown, and the servers answer
    # at 10x it, far from anything a machine's speed moves (a correct host is done at 3x).
    call = timeouts.call / 2
    late = {"delays": {"tools/call": ANSWER_AT * call}}
    variants = [
        Variant("http", server_of(http_mock, stdio_mock, "sse", [Tool("query")], **late), "sse"),
        Variant(
            "local", server_of(http_mock, stdio_mock, "stdio", [Tool("query")], **late), "stdio"
        ),
        Variant(
            "polled",
            server_of(http_mock, stdio_mock, "sse", [Tool("query")], poll_call="stall"),
            "sse",
        ),
    ]
    _, told_ = call_each(
        host, model, variants, call_timeout=call, connect_timeout=CONNECT_AT * call
    )

    problems = [told_.status_problem(f"{v.name}/query", "unknown", conveyed=True) for v in variants]
    problems.append(reported_problem(told_, ["unknown"] * 3))
    problems = [p for p in problems if p]
    check(
        not problems,
        ids="RES-6",
        expected=(
            f"unknown after the {call:g} s call timeout (HTTP, stdio, resumed SSE): no other "
            "status told the model or shown the person"
        ),
        actual="; ".join(problems),
    )
    first = variants[0].mock.journal.entries("tools/call")
    outputs = model_requests(model)
    check(
        bool(first) and len(outputs) >= 2,
        ids="RES-6",
        expected="the first call reached its server and the model was asked again",
        actual=f"{len(first)} call(s) received, {len(outputs)} model request(s)",
    )
    answered = first[0].time + ANSWER_AT * call
    told_at = request_times(model)[1]
    check(
        told_at < answered,
        ids="RES-6",
        expected=(
            f"the outcomes told before the first server answered ({ANSWER_AT}x the call timeout "
            f"of {call:g} s after receiving the call)"
        ),
        actual=f"the model was told {told_at - first[0].time:.1f} s after the first call",
    )


@pytest.mark.mcphc_slow
@pytest.mark.mcphc_requirements("RES-6")
def test_default_call_timeout_is_30_seconds(host, http_mock, stdio_mock, model):
    """No answer within the call timeout (30 s by default) gives `unknown`: observed on a host
    started with no timeout at all (its own default), never read from its description."""
    docs = server_of(http_mock, stdio_mock, "sse", [Tool("query")], stall=["tools/call"])
    _, told_ = call_each(
        host, model, [Variant("docs", docs, "sse")], call_timeout=None, connect_timeout=None
    )

    problem = told_.status_problem("docs/query", "unknown", conveyed=True) or reported_problem(
        told_, ["unknown"]
    )
    check(problem is None, ids="RES-6", expected="unknown after 30 s", actual=problem or "")
    sent = docs.journal.entries("tools/call")[0].time
    told_at = request_times(model)[-1]
    waited = told_at - sent
    check(
        27.0 <= waited <= 40.0,
        ids="RES-6",
        expected="the client waits about 30 s (its own default) for the answer",
        actual=f"it told the model {waited:.1f} s after sending the call",
    )


# ---- RES-7 ---------------------------------------------------------------------------------

# Every way a call can end after it was sent without a readable answer (see the catalog's
# decision on RES-7): (name, transport, misbehaviour).
LOST = [
    ("reset", "sse", {"drop_call": "reset"}),
    ("closed", "json", {"drop_call": "close"}),
    ("status-500", "json", {"call_http_status": 500}),
    ("status-502", "sse", {"call_http_status": 502}),
    ("garbled-json", "json", {"garbage_at": "tools/call"}),
    ("garbled-sse", "sse", {"garbage_at": "tools/call"}),
    ("exits", "stdio", {"drop_call": "close"}),
    ("garbled-stdio", "stdio", {"garbage_at": "tools/call"}),
]


@pytest.mark.mcphc_requirements("RES-7")
def test_connection_lost_after_sending_is_unknown(host, http_mock, stdio_mock, model):
    """A connection lost after the call was sent gives `unknown`: reset, closed, answered
    with a 5xx status or with a body that is not the call's JSON-RPC response, over HTTP;
    the server exiting or printing garbage, over stdio."""
    variants = [
        Variant(
            name, server_of(http_mock, stdio_mock, transport, [Tool("query")], **bad), transport
        )
        for name, transport, bad in LOST
    ]
    _, told_ = call_each(host, model, variants)

    problems = [told_.status_problem(f"{v.name}/query", "unknown", conveyed=True) for v in variants]
    unsent = [v.name for v in variants if v.mock.journal.count("tools/call") == 0]
    problems.append(f"never sent to {unsent}" if unsent else None)
    problems.append(reported_problem(told_, ["unknown"] * len(variants)))
    problems = [p for p in problems if p]
    check(
        not problems,
        ids="RES-7",
        expected=(
            f"unknown for each call lost after it was sent ({[n for n, _, _ in LOST]}): no "
            "other status told the model or shown the person"
        ),
        actual="; ".join(problems),
    )


@pytest.mark.mcphc_requirements("RES-1", "RES-7")
def test_polled_call_is_resumed_or_unknown(host, http_mock, stdio_mock, model):
    """A call whose SSE stream the server closes before the result (SSE polling, MCP
    2025-11-25): a client that resumes it (GET with Last-Event-ID, once or twice) gets the
    result, `completed` with its text (RES-1); a client that does not resume has lost the
    connection after sending the call: `unknown` (RES-7). Resuming is allowed, not
    required (the catalog's decision); reporting a result it did not get is neither."""
    variants = [
        Variant(
            variant,
            server_of(
                http_mock,
                stdio_mock,
                "sse",
                [Tool("query", reply=Reply.text(f"polled result {variant} ✓"))],
                poll_call=variant,
            ),
            "sse",
        )
        # "refuse-resume": a server that supports no resumption refuses the GET (405)
        for variant in ("deliver", "close-again", "refuse-resume")
    ]
    _, told_ = call_each(host, model, variants)

    problems = []
    for v in variants[:2]:
        tag = f"{v.name}/query"
        problem = told_.status_problem(tag, "completed", "unknown", conveyed=True)
        if problem:
            problems.append(problem)
        elif told_.stated(tag) == "completed" and f"polled result {v.name} ✓" not in (
            told_.text(tag) or ""
        ):
            problems.append(f"{tag}: completed without the result's text: {told_.text(tag)!r}")
    check(
        not problems,
        ids=["RES-1", "RES-7"],
        expected="the resumed result, completed with its text, or unknown (not resumed)",
        actual="; ".join(problems),
    )
    # Refused, the resumption leaves the connection lost after the call was sent: RES-7's.
    problem = told_.status_problem("refuse-resume/query", "unknown", conveyed=True)
    check(
        problem is None,
        ids="RES-7",
        expected="unknown for a call whose stream closed and whose resumption was refused",
        actual=str(problem),
    )


# ---- RES-8 ---------------------------------------------------------------------------------

# Over the limit with multi-byte text: over 1 MiB of UTF-8, a third of that in characters.
MULTI_BYTE_OVER = "€" * ((MESSAGE_LIMIT + 64 * KIB) // 3)
# Under it, as padding the client never shows (`_meta`): 1 MiB minus a little, completed.
UNDER_PADDING = "€" * ((MESSAGE_LIMIT - 16 * KIB) // 3)


@pytest.mark.mcphc_requirements("RES-8")
def test_response_over_1_mib_is_unknown_and_under_it_completed(host, http_mock, stdio_mock, model):
    """A response over the 1 MiB message limit after the call was sent gives `unknown`,
    counted in bytes of UTF-8: a multi-byte answer over 1 MiB of UTF-8 but under 1 Mi
    characters (so also whoever counts characters must refuse it), in JSON, SSE and over
    stdio; a response of 1 MiB minus a little is accepted (`completed`)."""
    variants = []
    for transport in TRANSPORTS:
        variants.append(
            Variant(
                f"multibyte-{transport}",
                server_of(
                    http_mock,
                    stdio_mock,
                    transport,
                    [Tool("query", reply=Reply.text(MULTI_BYTE_OVER))],
                ),
                transport,
            )
        )
        under = Reply(
            content=[{"type": "text", "text": f"small answer {transport}"}],
            meta={"padding": UNDER_PADDING},
        )
        variants.append(
            Variant(
                f"under-{transport}",
                server_of(http_mock, stdio_mock, transport, [Tool("query", reply=under)]),
                transport,
            )
        )
    _, told_ = call_each(host, model, variants, one_per_reply=True)

    problems = []
    for v in variants:
        tag = f"{v.name}/query"
        if v.name.startswith("under-"):
            problem = told_.status_problem(tag, "completed", conveyed=True)
            if problem is None and f"small answer {v.transport}" not in (told_.text(tag) or ""):
                problem = f"{tag}: the answer's text missing: {told_.text(tag)!r}"
        else:
            problem = told_.status_problem(tag, "unknown", conveyed=True)
        if problem:
            problems.append(problem)
    n = len(TRANSPORTS)
    problems.append(reported_problem(told_, ["unknown"] * n + ["completed"] * n) or "")
    problems = [p for p in problems if p]
    check(
        not problems,
        ids="RES-8",
        expected=(
            "unknown for answers over 1 MiB of UTF-8 (multi-byte, under 1 Mi characters), "
            "completed for 1 MiB minus 16 KiB; over JSON, SSE and stdio (and JSON chunked, SSE "
            "with a length, SSE with progress)"
        ),
        actual="; ".join(problems),
    )


# ---- RES-9 ---------------------------------------------------------------------------------


@pytest.mark.mcphc_needs_cancel
@pytest.mark.mcphc_requirements("RES-9")
def test_cancelled_call_is_unknown(host, http_mock, stdio_mock, model, timeouts):
    """A call cancelled by the user gives `unknown`."""
    docs = server_of(http_mock, stdio_mock, "sse", [Tool("query")], stall=["tools/call"])
    host.add_http("docs", docs)
    long_timeout = 4 * timeouts.wait  # long enough that only the cancel can end the call in time
    running = host.start(call_timeout=long_timeout)
    model.script(
        [Step.call(server="docs", tool="query", arguments={"tag": "docs/query"}), Step.text("ok")]
    )
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

    told_ = told(model, turn)
    problem = told_.status_problem("docs/query", "unknown", conveyed=True) or reported_problem(
        told_, ["unknown"]
    )
    check(problem is None, ids="RES-9", expected="unknown after a cancel", actual=problem or "")
    sent = docs.journal.entries("tools/call")[0].time
    told_at = request_times(model)[-1]
    check(
        told_at - sent < long_timeout / 2,
        ids="RES-9",
        expected="the cancel ends the call (not its timeout)",
        actual=(
            f"the model was told {told_at - sent:.1f} s after the call "
            f"(call timeout {long_timeout:g} s)"
        ),
    )


# ---- RES-10 --------------------------------------------------------------------------------


def multibyte_lines(size: int, first: str, last: str) -> str:
    """`first`, lines of multi-byte text, `last`: about `size` bytes of UTF-8, under a third
    of that in characters more than the ASCII part."""
    line = "€" * 16 + "\n"
    body = []
    total = len(first.encode()) + len(last.encode())
    i = 0
    while True:
        piece = f"line {i:05d} {line}"
        if total + len(piece.encode()) > size:
            break
        body.append(piece)
        total += len(piece.encode())
        i += 1
    return first + "".join(body) + last


@pytest.mark.mcphc_requirements("RES-10")
def test_result_over_64_kib_is_output_limit(host, http_mock, stdio_mock, model):
    """A result over 64 KiB gives `output_limit`: its first part, marked as truncated; the
    model receives at most 64 KiB of it. Counted in bytes of UTF-8 (1 KiB allowed for the
    client's framing): a multi-byte result of 120 KiB (under 64 Ki characters) is cut, one
    of 63 KiB is not (completed, whole, unmarked)."""
    over = multibyte_lines(120 * KIB, "RESULT-BEGIN\n", "RESULT-END")
    under = multibyte_lines(OUTPUT_LIMIT - FRAMING_SLACK, "UNDER-BEGIN\n", "UNDER-END")
    assert len(over) < OUTPUT_LIMIT < len(over.encode()), "the fixture must straddle the limit"
    docs = server_of(
        http_mock,
        stdio_mock,
        "sse",
        [Tool("over", reply=Reply.text(over)), Tool("under", reply=Reply.text(under))],
    )
    _, told_ = call_each(host, model, [Variant("docs", docs, "sse", ("over", "under"))])

    problem = told_.status_problem("docs/over", "output_limit") or reported_problem(
        told_, ["output_limit", "completed"]
    )
    check(
        problem is None,
        ids="RES-10",
        expected="no status but output_limit told for a result over 64 KiB",
        actual=problem or "",
    )
    text = told_.text("docs/over") or ""
    size = len(text.encode("utf-8"))
    check(
        size <= OUTPUT_LIMIT + FRAMING_SLACK,
        ids="RES-10",
        expected=(
            "at most 64 KiB of the result, in bytes of UTF-8 "
            f"(output ≤ {OUTPUT_LIMIT + FRAMING_SLACK} bytes with framing)"
        ),
        actual=f"the model received {size} bytes ({len(text)} characters)",
    )
    head = over.encode()[: 16 * KIB].decode("utf-8", "ignore")
    check(
        head in text and "RESULT-END" not in text,
        ids="RES-10",
        expected="the first part of the result (its first 16 KiB whole, its end absent)",
        actual=shown(text),
    )
    rest = text.replace(head, "")
    check(
        TRUNCATED.search(rest) is not None,
        ids="RES-10",
        expected="a mark that the output was truncated",
        actual=f"the output ends with {text[-120:]!r}",
    )
    problem = told_.status_problem("docs/under", "completed")
    under_text = told_.text("docs/under") or ""
    check(
        problem is None and under in under_text and TRUNCATED.search(under_text) is None,
        ids="RES-10",
        expected=(
            f"a result of {len(under.encode())} bytes (just under 64 KiB) completed, whole "
            "and not marked truncated"
        ),
        actual=problem or f"{len(under_text.encode())} bytes received: {under_text[-120:]!r}",
    )


# ---- RES-11 --------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("RES-11")
def test_every_call_gets_exactly_one_output(host, http_mock, stdio_mock, model):
    """Every function call the model made gets exactly one paired output (same `call_id`) in
    the next model request, whatever its status (unknown first, then completed, failed,
    output_limit in one reply; denied in a later reply), and keeps exactly one in every later
    request that replays the conversation, of this turn and the next (one that continues a
    stored response, `previous_response_id`, replays nothing and may carry none). The denied
    call comes last in its turn: a host may end its turn on a refusal, and then pairs its
    output in the next question's request."""
    docs = server_of(
        http_mock,
        stdio_mock,
        "sse",
        [
            Tool("ok", reply=Reply.text("fine")),
            Tool("bad", reply=Reply.tool_error("nope")),
            Tool("big", reply=Reply.text("x" * (OUTPUT_LIMIT + 8 * KIB))),
        ],
    )
    flaky = server_of(http_mock, stdio_mock, "sse", [Tool("flaky")], drop_call="close")
    add_variants(host, [Variant("docs", docs, "sse"), Variant("flaky", flaky, "sse")])
    running = host.start()
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="flaky", tool="flaky", arguments={"tag": "unknown"}),
                    Step.call(server="docs", tool="ok", arguments={"tag": "completed"}),
                    Step.call(server="docs", tool="bad", arguments={"tag": "failed"}),
                    Step.call(server="docs", tool="big", arguments={"tag": "output_limit"}),
                ]
            ),
            Step.call(server="docs", tool="ok", arguments={"tag": "denied"}),
            Step.text("ok"),
        ]
    )
    # the four calls of the first reply approved, the later reply's one denied: answers in
    # order, never read from what a prompt shows (a host may show no arguments)
    running.ask("use them all", approve=["y", "y", "y", "y", "n"])
    model.script([Step.text("ok")])
    running.ask("and now?", approve="y", acknowledge=True)

    replies = reply_calls(model)
    made = [call for calls in replies for call in calls]
    tags = [json.loads(c["arguments"]).get("tag") for c in made]
    # Only the first reply is the tools' (DISC-1's): the mock model makes its later call only
    # once every output of the first reply came back, which is this case's own rule.
    precondition(
        [len(calls) for calls in replies[:1]] == [4],
        ids="DISC-1",
        expected="the tools offered: the model made its 4 calls of the first reply",
        actual=f"{[len(calls) for calls in replies]} calls per reply: {tags}",
    )
    problems: list[str] = []
    bodies = model_requests(model)
    for index, body in enumerate(bodies):
        items = body.get("input") if isinstance(body.get("input"), list) else []
        continues = body.get("previous_response_id") is not None
        for k, calls in enumerate(replies[:index]):
            for call in calls:
                tag = json.loads(call["arguments"]).get("tag")
                outputs = sum(
                    1
                    for i in items
                    if isinstance(i, dict)
                    and i.get("type") == "function_call_output"
                    and i.get("call_id") == call["call_id"]
                )
                # the next request must pair it; a later one replaying the conversation too
                required = k + 1 == index or not continues
                if outputs > 1 or (required and outputs != 1):
                    problems.append(
                        f"model request {index + 1}: {outputs} outputs for the {tag} call"
                    )
    check(
        len(bodies) >= 3 and not problems,
        ids="RES-11",
        expected=(
            "exactly one output per call_id in the next request and every later one "
            "(unknown, completed, failed, output_limit in one reply; denied in the next)"
        ),
        actual=f"{len(bodies)} model request(s) ({len(made)} calls); " + "; ".join(problems),
    )


# ---- RES-12 --------------------------------------------------------------------------------

# Every cause of an unknown outcome, and the rule that makes it unknown:
# (name, transport, misbehaviour, requirement).
UNKNOWN_CAUSES = [
    ("closed", "sse", {"drop_call": "close"}, "RES-7"),
    ("reset", "json", {"drop_call": "reset"}, "RES-7"),
    ("status-503", "json", {"call_http_status": 503}, "RES-7"),
    ("garbled", "sse", {"garbage_at": "tools/call"}, "RES-7"),
    ("exits", "stdio", {"drop_call": "close"}, "RES-7"),
    ("oversized", "json", {"oversize_at": "tools/call"}, "RES-8"),
    ("timeout", "sse", {"stall": ["tools/call"]}, "RES-6"),
]


@pytest.mark.mcphc_requirements("RES-12")
def test_unknown_output_says_may_have_acted_and_no_retry(
    host, http_mock, stdio_mock, model, timeouts
):
    """The `unknown` output tells the model that the server may have acted and that the call
    must not be retried automatically, whatever made it unknown (a lost connection, a 5xx,
    a garbled answer, a stdio server that exited, an oversized answer, a timeout); matched on
    meaning, several phrasings accepted."""
    variants = [
        Variant(
            name, server_of(http_mock, stdio_mock, transport, [Tool("query")], **bad), transport
        )
        for name, transport, bad, _rid in UNKNOWN_CAUSES
    ]
    # Every call here ends unknown whatever the machine's speed (one slower than the call
    # timeout too), so half the usual timeout changes no verdict and costs less (and leaves
    # the oversized answer time to be read, so its own unknown output is the one checked).
    _, told_ = call_each(host, model, variants, call_timeout=timeouts.call / 2)

    for name, _transport, _bad, rid in UNKNOWN_CAUSES:
        problem = told_.status_problem(f"{name}/query", "unknown", conveyed=True)
        precondition(
            problem is None,
            ids=rid,
            expected=f"the {name} call ends unknown (RES-12 is about what its output says)",
            actual=problem or "",
        )
    problem = reported_problem(told_, ["unknown"] * len(UNKNOWN_CAUSES))
    precondition(
        problem is None,
        ids=sorted({rid for *_, rid in UNKNOWN_CAUSES}),
        expected="every call here ends unknown (RES-12 is about what its output says)",
        actual=problem or "",
    )
    problems = []
    for name, *_ in UNKNOWN_CAUSES:
        text = told_.text(f"{name}/query") or ""
        if MAY_HAVE_ACTED.search(text) is None:
            problems.append(f"{name}: does not say the server may have acted: {text[:200]!r}")
        if NO_RETRY.search(text) is None:
            problems.append(f"{name}: does not say not to retry: {text[:200]!r}")
    check(
        not problems,
        ids="RES-12",
        expected=(
            "every unknown output says the server may have acted (e.g. 'may have run') and "
            "that the call must not be retried automatically (e.g. 'do not retry')"
        ),
        actual="; ".join(problems),
    )
