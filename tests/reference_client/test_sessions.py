import json
import os
import re
import stat

import pytest

from mcp_host_conformance.reference_client import results
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.sessions import (
    INTERRUPTED,
    SessionError,
    SessionLog,
    list_sessions,
    sessions_dir,
)


@pytest.fixture
def environ(tmp_path):
    return {"HOME": str(tmp_path)}


USER = {"type": "message", "role": "user", "content": "hi"}
CALL = {"type": "function_call", "call_id": "c1", "name": "mcp_docs_q", "arguments": '{"q": 1}'}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "completed: ok"}
ANSWER = {"type": "message", "role": "assistant", "content": "done"}


def write_session(environ, items):
    with SessionLog.create(environ) as log:
        for item in items:
            log.append(item)
    return log


def test_create_append_reopen(environ, tmp_path):
    log = write_session(environ, [USER, CALL, OUTPUT, ANSWER])
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", log.id)
    assert log.path.parent == tmp_path / ".local/share/mcp-reference-host/sessions"
    assert stat.S_IMODE(os.stat(log.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(log.path.parent).st_mode) == 0o700
    reopened, items, warnings = SessionLog.open(environ, log.id)
    assert items == [USER, CALL, OUTPUT, ANSWER]
    assert warnings == []
    reopened.append({"type": "message", "role": "user", "content": "again"})
    reopened.close()
    assert len(log.path.read_text().splitlines()) == 5


def test_xdg_data_home(tmp_path, environ):
    env = {**environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    assert sessions_dir(env) == tmp_path / "data/mcp-reference-host/sessions"


def test_damaged_records_warn_and_skip(environ):
    log = write_session(environ, [USER, CALL, OUTPUT, ANSWER])
    with open(log.path, "ab") as f:
        f.write(b"{not json\n")
        f.write(b'{"type": "function_call", "call_id": "c2", "name": "x", "arguments": "[1]"}\n')
        f.write(b"[1,2]\n")
        f.write(json.dumps(USER).encode() + b"\n")
        f.write(b'{"type": "message", "role": "assistant", "con')  # crash mid-write
    _, items, warnings = SessionLog.open(environ, log.id)
    assert items == [USER, CALL, OUTPUT, ANSWER, USER]
    assert len(warnings) == 4
    assert warnings[0].startswith(f"{log.path}:5:")
    assert f"{log.path}:9:" in warnings[-1] and "incomplete" in warnings[-1]


def test_append_after_truncated_line_starts_a_new_line(environ):
    log = write_session(environ, [USER])
    with open(log.path, "ab") as f:
        f.write(b'{"type": "mess')
    reopened, _, warnings = SessionLog.open(environ, log.id)
    assert len(warnings) == 1
    reopened.append(ANSWER)
    reopened.close()
    _, items, warnings = SessionLog.open(environ, log.id)
    assert items == [USER, ANSWER]
    assert len(warnings) == 1 and "not valid JSON" in warnings[0]


def test_call_without_output_gets_unknown_output(environ):
    log = write_session(environ, [USER, CALL])
    _, items, _ = SessionLog.open(environ, log.id)
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": results.model_output(INTERRUPTED),
    }
    assert "may have acted" in results.model_output(INTERRUPTED)


def test_orphan_output_dropped(environ):
    log = write_session(environ, [USER, OUTPUT, ANSWER])
    _, items, warnings = SessionLog.open(environ, log.id)
    assert items == [USER, ANSWER]
    assert "without its call" in warnings[0]


def test_calls_checked_by_shape_only(environ):
    renamed = {**CALL, "name": "mcp_gone_tool_that_no_longer_exists"}
    log = write_session(environ, [USER, renamed, OUTPUT, ANSWER])
    _, items, warnings = SessionLog.open(environ, log.id)
    assert items[1] == renamed and warnings == []


def test_open_errors(environ):
    with pytest.raises(SessionError, match="sessions"):
        SessionLog.open(environ, "../../etc/passwd")
    with pytest.raises(SessionError, match="no session"):
        SessionLog.open(environ, "20260101-000000-abcdef")


def test_list_sessions_sorted(environ):
    assert list_sessions(environ) == []
    first = write_session(environ, [USER])
    second = write_session(environ, [USER])
    ids = [session_id for session_id, _ in list_sessions(environ)]
    assert sorted([first.id, second.id]) == ids


def test_redactor_applied(environ):
    with SessionLog.create(environ, redactor=Redactor(["tok-SECRET"])) as log:
        log.append({"type": "message", "role": "user", "content": "my tok-SECRET"})
    assert "tok-SECRET" not in log.path.read_text()
