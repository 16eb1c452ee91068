import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.reference_client.results import (
    ACK_PROMPT,
    OUTPUT_LIMIT,
    STATUSES,
    TRUNCATION_MARKER,
    Outcome,
    denied,
    from_call_result,
    from_rpc_error,
    unknown,
)

CANARY = base64.b64encode(b"binary-canary-0451").decode()


def text(t):
    return {"type": "text", "text": t}


def test_text_blocks_in_order():
    assert from_call_result({"content": [text("one"), text("two")]}) == Outcome(
        "completed", "one\ntwo"
    )


def test_binary_content_is_omitted():
    result = from_call_result(
        {
            "content": [
                text("before"),
                {"type": "image", "data": CANARY, "mimeType": "image/png"},
                {"type": "audio", "data": CANARY, "mimeType": "audio/wav"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///b", "blob": CANARY, "mimeType": "application/zip"},
                },
            ]
        }
    )
    assert result.status == "completed"
    assert CANARY not in result.output
    assert "[image omitted: image/png]" in result.output
    assert "[audio omitted: audio/wav]" in result.output
    assert "[resource omitted: file:///b (application/zip)]" in result.output


def test_resource_link_listed_and_embedded_text_used():
    result = from_call_result(
        {
            "content": [
                {"type": "resource_link", "uri": "https://x/doc", "name": "doc"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "hello"}},
            ]
        }
    )
    assert "https://x/doc" in result.output and "not opened" in result.output
    assert "[resource file:///a]\nhello" in result.output


def test_structured_content_when_no_text():
    result = from_call_result({"content": [], "structuredContent": {"a": 1, "b": [2]}})
    assert result == Outcome("completed", '{"a":1,"b":[2]}')
    with_text = from_call_result({"content": [text("t")], "structuredContent": {"a": 1}})
    assert with_text.output == "t"


def test_is_error_is_failed_with_server_text():
    assert from_call_result({"content": [text("bad input")], "isError": True}) == Outcome(
        "failed", "bad input"
    )
    assert from_call_result({"content": [], "isError": True}).status == "failed"


def test_rpc_error():
    outcome = from_rpc_error({"code": -32602, "message": "Unknown tool"})
    assert outcome.status == "failed" and "Unknown tool" in outcome.output
    assert from_rpc_error("garbage").status == "failed"
    assert from_rpc_error({"code": 10**100, "message": 5}).status == "failed"


def test_output_limit():
    big = "a" * (OUTPUT_LIMIT + 10)
    outcome = from_call_result({"content": [text(big)]})
    assert outcome.status == "output_limit"
    assert outcome.output.endswith(TRUNCATION_MARKER)
    assert len(outcome.output.encode()) <= OUTPUT_LIMIT
    exact = "a" * OUTPUT_LIMIT
    assert from_call_result({"content": [text(exact)]}) == Outcome("completed", exact)


def test_output_limit_multibyte():
    outcome = from_call_result({"content": [text("é" * OUTPUT_LIMIT)]})
    assert outcome.status == "output_limit"
    assert len(outcome.output.encode()) <= OUTPUT_LIMIT
    assert "\ufffd" not in outcome.output


def test_unknown_denied_and_ack():
    outcome = unknown("no answer within 30 s")
    assert outcome.status == "unknown"
    assert "may have acted" in outcome.output and "not retry" in outcome.output
    assert "no answer within 30 s" in outcome.output
    assert denied().status == "denied"
    assert "may already have run" in ACK_PROMPT


def test_hostile_shapes():
    deep: list = []
    cur = deep
    for _ in range(10000):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    for bad in (
        None,
        [],
        "x",
        {"content": "x"},
        {"content": [1]},
        {"content": [{"type": "text", "text": 5}]},
        {"content": [{"type": "resource", "resource": "x"}]},
        {"content": [], "structuredContent": deep},
        {"content": [], "structuredContent": {"n": float("inf")}},
    ):
        outcome = from_call_result(bad)
        assert outcome.status == "failed", bad
        assert outcome.output


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(deadline=None)
@given(
    json_like
    | st.dictionaries(st.sampled_from(["content", "isError", "structuredContent"]), json_like)
)
def test_never_raises(value):
    outcome = from_call_result(value)
    assert outcome.status in STATUSES
    assert len(outcome.output.encode("utf-8", "surrogatepass")) <= OUTPUT_LIMIT
