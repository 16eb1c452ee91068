"""Every JSON reader of the host is strict and total: `untrusted_json.decode`, and the readers
built on it (MCP messages, model replies, session and configuration files)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.reference_client.config import ConfigError, ConfigStore
from mcp_host_conformance.reference_client.sessions import SessionError, SessionLog, sessions_dir
from mcp_host_conformance.reference_client.untrusted_json import (
    MAX_DEPTH,
    UntrustedJsonError,
    decode,
    problem_in,
)

DEEP = b"[" * 100_000 + b"]" * 100_000


def nested(depth: int) -> str:
    return "[" * (depth - 1) + "{}" + "]" * (depth - 1)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (DEEP, "nested too deeply"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
        (nested(MAX_DEPTH + 1).encode(), "nested too deeply"),
        (b"\xff\xfe", "UTF-8"),
        (b'"\\udc80"', "not valid Unicode"),
        (b"[NaN]", "not valid JSON"),
        (b"1e999", "not valid JSON"),
        (b"9" * 5000, "not valid JSON"),
        (b"{", "not valid JSON"),
        (b"", "not valid JSON"),
    ],
)
def test_hostile_documents_are_refused_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(UntrustedJsonError, match=reason):
        decode(data)


def test_depth_up_to_the_limit_is_accepted() -> None:
    assert decode(nested(MAX_DEPTH)) is not None
    assert decode(nested(MAX_DEPTH).encode()) is not None


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "a\udfff", "\udbff\udc00"]),  # lone, lone, a pair
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(1, 8), st.booleans())
def test_a_document_is_refused_exactly_when_its_value_has_a_problem(
    value: object, max_depth: int, ascii_only: bool
) -> None:
    """`decode` skips walking a value whose text shows it has no problem: its verdict is
    still the walk's (nesting around the bound, surrogates written as escapes or not)."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    problem = problem_in(json.loads(text), max_depth)
    # written raw (not as an escape), a surrogate makes the bytes invalid UTF-8
    raw_surrogate = not ascii_only and any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    try:
        decode(text.encode("utf-8", "surrogatepass"), max_depth=max_depth)
    except UntrustedJsonError as exc:
        expected = "UTF-8" if raw_surrogate else problem
        assert expected is not None and expected in str(exc)
    else:
        assert problem is None and not raw_surrogate


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_decode_raises_nothing_but_its_own_error(data: bytes) -> None:
    try:
        decode(data)
    except UntrustedJsonError as exc:
        assert str(exc)


# ---- the files -------------------------------------------------------------------------------


@pytest.fixture
def environ(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home)}


def test_a_deep_configuration_file_is_a_config_error(environ) -> None:
    store = ConfigStore(environ)
    store.save([])
    store.path.write_bytes(b'{"servers": ' + DEEP + b"}")
    with pytest.raises(ConfigError, match="nested too deeply"):
        store.load()


def test_an_oversized_configuration_file_is_a_config_error(environ) -> None:
    store = ConfigStore(environ)
    store.save([])
    with open(store.path, "wb") as f:
        f.truncate(5 * 1024 * 1024)
    with pytest.raises(ConfigError, match="larger than 4 MiB"):
        store.load()


def test_deep_session_records_are_skipped_with_a_warning(environ) -> None:
    with SessionLog.create(environ) as log:
        log.append({"type": "message", "role": "user", "content": "kept"})
    with open(log.path, "ab") as f:
        f.write(DEEP + b"\n")
        f.write(json.dumps({"type": "message", "role": "user", "content": nested(150)}).encode())
        f.write(b"\n")
        f.write(b'{"type":"message","role":"user","content":' + nested(150).encode() + b"}\n")
    reopened, items, warnings = SessionLog.open(environ, log.id)
    reopened.close()
    assert [i["content"] for i in items] == ["kept", nested(150)]  # a deep *string* is text
    assert len(warnings) == 2 and all("nested too deeply" in w for w in warnings)


def test_an_oversized_session_file_cannot_be_reopened(environ, monkeypatch) -> None:
    from mcp_host_conformance.reference_client import sessions

    monkeypatch.setattr(sessions, "MAX_SESSION_BYTES", 1024)
    with SessionLog.create(environ) as log:
        log.append({"type": "message", "role": "user", "content": "x" * 2000})
    with pytest.raises(SessionError, match="cannot be reopened"):
        SessionLog.open(environ, log.id)


def test_a_session_file_that_is_a_symlink_is_not_written_through(environ, tmp_path) -> None:
    with SessionLog.create(environ) as log:
        log.append({"type": "message", "role": "user", "content": "q"})
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(log.path.read_bytes())
    os.replace(log.path, tmp_path / "moved")
    os.symlink(target, log.path)
    assert sessions_dir(environ) == log.path.parent
    with pytest.raises(SessionError, match="cannot write"):
        SessionLog.open(environ, log.id)
