"""Hypothesis fuzzing of every parser of untrusted input in the reference host.

Each test drives a real reader with generated input and accepts exactly two endings: a
usable value or the reader's own error (ModelError, McpError, SessionError, ConfigError).
Anything else (RecursionError, UnicodeError, KeyError, a hang) is a bug. The I/O is faked at
the edge only (httpx's MockTransport for HTTP, an asyncio StreamReader fed with bytes for
stdio, files on disk), so the code under test is the code that runs.

Example counts come from the hypothesis profile (none is hard-coded here); the run over
real sockets and processes, 10,000 messages, is `scripts/fuzz_transports.py`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.reference_client import results
from mcp_host_conformance.reference_client.config import ConfigError, ConfigStore
from mcp_host_conformance.reference_client.model import ModelClient, ModelError, ModelReply
from mcp_host_conformance.reference_client.rpc import RpcSession
from mcp_host_conformance.reference_client.sessions import (
    SessionError,
    SessionLog,
    sessions_dir,
    validate_item,
)
from mcp_host_conformance.reference_client.transports import MAX_MESSAGE_BYTES, McpError
from mcp_host_conformance.reference_client.transports import http as http_transport
from mcp_host_conformance.reference_client.transports.http import HttpTransport
from mcp_host_conformance.reference_client.transports.stdio import StdioTransport

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- strategies ------------------------------------------------------------------------------

hostile_text = st.text(
    alphabet=st.characters(exclude_categories=()), max_size=30
) | st.sampled_from(
    ["", "\x1b[2J", "\ud800", "9" * 5000, "call_1", "function_call", "message", "result"]
)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | hostile_text
)
KEYS = [
    "type", "id", "jsonrpc", "result", "error", "content", "text", "tools", "name",
    "inputSchema", "output", "call_id", "arguments", "role", "nextCursor", "isError",
    "message", "code", "protocolVersion", "structuredContent", "response",
]  # fmt: skip
json_values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(hostile_text | st.sampled_from(KEYS), children, max_size=5)
    ),
    max_leaves=20,
)


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def as_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


raw_documents = (
    json_values.map(as_bytes)
    | st.binary(max_size=200)
    | st.integers(min_value=1, max_value=200_000).map(deep)
    | st.sampled_from([b"NaN", b"[1e999]", b"{", b'"\\udc80"', b"\xff\xfe", b""])
)


def sse_stream(documents: list[bytes], ids: list[str], retry: str) -> bytes:
    parts = []
    for index, document in enumerate(documents):
        line = f"id: {ids[index % len(ids)]}\n" if ids else ""
        parts.append(line.encode() + b"retry: " + retry.encode() + b"\n")
        parts.append(b"data: " + document.replace(b"\n", b"\ndata: ") + b"\n\n")
    return b"".join(parts)


sse_bodies = st.builds(
    sse_stream,
    st.lists(raw_documents, max_size=4),
    st.lists(st.sampled_from(["e1", "", "\x00", "é", "x" * 2000]), max_size=3),
    st.sampled_from(["0", "1", "-5", "abc", "9" * 20]),
) | st.binary(max_size=300)

bodies = st.tuples(
    st.sampled_from([200, 200, 200, 202, 302, 401, 404, 405, 500]),
    st.sampled_from(["application/json", "text/event-stream", "text/plain", ""]),
    raw_documents | sse_bodies,
)


class _Body(httpx.AsyncByteStream):
    """A body that arrives in chunks, as from a socket (a `content=` body is read at once)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self):  # type: ignore[override]
        for start in range(0, len(self.data), 4096):
            yield self.data[start : start + 4096]


def http_response(answer: tuple[int, str, bytes]) -> httpx.Response:
    status, kind, content = answer
    headers = {"content-type": kind} if kind else {}
    return httpx.Response(status, headers=headers, stream=_Body(content))


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 30)

    return asyncio.run(bounded())


# ---- model replies ---------------------------------------------------------------------------


def model_bodies() -> st.SearchStrategy[bytes]:
    item = st.fixed_dictionaries(
        {"type": st.sampled_from(["message", "function_call", "reasoning", "x"])},
        optional={
            "role": st.sampled_from(["assistant", "user", 3]),
            "call_id": hostile_text | st.integers(),
            "name": hostile_text,
            "arguments": hostile_text | json_values,
            "content": st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["output_text", "refusal"])},
                    optional={"text": hostile_text | st.integers()},
                ),
                max_size=3,
            )
            | json_values,
        },
    )
    shaped = st.fixed_dictionaries({"output": st.lists(item | json_values, max_size=4)})
    events = st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["response.completed", "response.created", "error"])},
            optional={"response": shaped | json_values},
        ).map(as_bytes)
        | raw_documents,
        max_size=4,
    ).map(lambda docs: sse_stream(docs, [], "0"))
    return shaped.map(as_bytes) | raw_documents | events


@FUZZ
@given(
    st.sampled_from([200, 200, 400, 500, 302]),
    st.sampled_from(["application/json", "text/event-stream", ""]),
    model_bodies(),
)
def test_model_replies(status: int, kind: str, body: bytes) -> None:
    async def go() -> ModelReply:
        client = ModelClient("http://127.0.0.1:9/v1", "key")
        await client._client.aclose()
        client._client = httpx.AsyncClient(
            transport=httpx.MockTransport(lambda request: http_response((status, kind, body)))
        )
        try:
            return await client.respond(
                [{"type": "message", "role": "user", "content": "q"}], [], "i"
            )
        finally:
            await client.close()

    try:
        reply = run(go())
    except ModelError as exc:
        assert str(exc)
        return
    for call in reply.calls:
        assert all(isinstance(call[key], str) for key in ("call_id", "name", "arguments"))
    assert isinstance(reply.text, str)


# ---- MCP messages over HTTP (JSON and SSE, resumption included) -------------------------------


@FUZZ
@given(st.lists(bodies, min_size=1, max_size=6))
def test_mcp_messages_over_http(answers: list[tuple[int, str, bytes]]) -> None:
    remaining = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        return http_response(remaining.pop(0) if remaining else (405, "", b""))

    async def go() -> None:
        transport = HttpTransport("http://127.0.0.1:9/mcp", {"X-Key": "k"})
        await transport.connect()
        assert transport._client is not None
        await transport._client.aclose()
        transport._client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        session = RpcSession(transport)
        try:
            for step in (session.initialize, session.list_tools):
                try:
                    await step()
                except McpError:
                    pass
            try:
                outcome = results.from_call_result(await session.call_tool("t", {}))
            except McpError:
                return
            assert outcome.status in results.STATUSES
        finally:
            await session.close()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(http_transport, "DEFAULT_RETRY_SECONDS", 0.0)
        patch.setattr(http_transport, "MAX_RETRY_SECONDS", 0.0)
        run(go())


# ---- MCP messages over stdio -----------------------------------------------------------------


class _Pipe:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


class _Process:
    """What StdioTransport uses of a child process, its stdout fed from `output`."""

    def __init__(self, output: bytes) -> None:
        self.pid = 0
        self.returncode = 0
        self.stdin = _Pipe()
        self.stdout = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES + 1)
        self.stdout.feed_data(output)
        self.stdout.feed_eof()


@FUZZ
@given(
    st.lists(
        raw_documents
        | json_values.map(lambda v: as_bytes({"jsonrpc": "2.0", "id": 1, "result": v})),
        max_size=6,
    )
)
def test_mcp_messages_over_stdio(lines: list[bytes]) -> None:
    async def go() -> None:
        transport = StdioTransport("srv", [], {}, host_environ={})
        transport._process = _Process(
            b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n"
        )  # type: ignore[assignment]
        session = RpcSession(transport)
        try:
            await session.initialize()
            await session.list_tools()
            results.from_call_result(await session.call_tool("t", {}))
        except McpError as exc:
            assert str(exc)

    run(go())


# ---- session and configuration files ---------------------------------------------------------


session_items = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "function_call", "function_call_output", "other"])},
    optional={
        "role": st.sampled_from(["user", "assistant", "tool"]),
        "content": hostile_text | json_values,
        "call_id": st.sampled_from(["a", "b"]) | hostile_text,
        "name": hostile_text,
        "arguments": st.sampled_from(["{}", "[]", "{", '{"a":1}']) | hostile_text,
        "output": hostile_text | json_values,
    },
)


@FUZZ
@given(st.lists(session_items.map(as_bytes) | raw_documents, max_size=8), st.booleans())
def test_session_files(tmp_path_factory, records: list[bytes], newline_at_end: bool) -> None:
    environ = {"HOME": str(tmp_path_factory.mktemp("home"))}
    with SessionLog.create(environ) as log:
        pass
    data = b"\n".join(r.replace(b"\n", b" ") for r in records) + (b"\n" if newline_at_end else b"")
    (sessions_dir(environ) / f"{log.id}.jsonl").write_bytes(data)
    try:
        reopened, items, warnings = SessionLog.open(environ, log.id)
    except SessionError as exc:
        assert str(exc)
        return
    reopened.close()
    assert all(validate_item(item) is None for item in items)
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert sorted(calls) == sorted(outputs)  # every call paired, once
    assert all(isinstance(w, str) for w in warnings)


@FUZZ
@given(
    st.fixed_dictionaries(
        {
            "servers": st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["http", "stdio", "x"]), "name": hostile_text},
                    optional={
                        "url": hostile_text,
                        "headers": st.dictionaries(
                            hostile_text, hostile_text | json_values, max_size=2
                        ),
                        "command": hostile_text,
                        "args": st.lists(hostile_text, max_size=2) | json_values,
                        "env": st.dictionaries(hostile_text, hostile_text, max_size=2)
                        | json_values,
                    },
                )
                | json_values,
                max_size=4,
            )
        }
    ).map(as_bytes)
    | raw_documents
)
def test_configuration_files(tmp_path_factory, document: bytes) -> None:
    environ = {"HOME": str(tmp_path_factory.mktemp("home"))}
    store = ConfigStore(environ)
    store.save([])
    Path(store.path).write_bytes(document)
    try:
        servers = store.load()
    except ConfigError as exc:
        assert str(exc)
        return
    for server in servers:
        assert isinstance(server.name, str)
