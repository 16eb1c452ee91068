"""The append-only session log (SESS-1..SESS-4).

Strategy: one JSON object per line, one line per Responses input item (a user or assistant
message, a function_call, a function_call_output). Each record goes to the file in a
single `write` on an O_APPEND descriptor followed by fsync, so a crash mid-write can
damage only the record being written. Loading is forgiving by design: a damaged record
(bad JSON, a truncated last line, a wrong shape) produces a warning naming the file and
line and is skipped; whatever else is intact still loads, and loading never calls
anything. Calls are checked only by shape (their arguments must be a JSON object), never
by whether the tool still exists (SESS-4). A function_call left without its output (the
program died during the call) gets a synthesized `unknown` output so the history stays
valid for the Responses API, which needs every call paired.

Files are private (0600 in a 0700 directory, whatever the umask): they hold what the user
asked and what servers answered. Secrets are kept out by redacting before `append`
(optionally here too). A session file is read as untrusted input: at most
MAX_SESSION_BYTES, each record decoded by `untrusted_json`.

`open_session` is the one way a front end (the command line, the adapter) gets its session:
a new one, or a saved one reopened, with the notices to show the person.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_host_conformance.reference_client import results, untrusted_json
from mcp_host_conformance.reference_client.config import private_dir
from mcp_host_conformance.reference_client.redaction import Redactor

__all__ = [
    "OpenedSession",
    "SessionError",
    "SessionLog",
    "list_sessions",
    "open_session",
    "sessions_dir",
    "validate_item",
]

APP_DIR = "mcp-reference-host"
MAX_SESSION_BYTES = 256 * 1024 * 1024
_ID_PATTERN = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")
INTERRUPTED = results.unknown("the session ended before this call's result was saved")


class SessionError(Exception):
    """A session problem the user can fix."""


def sessions_dir(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    else:
        home = environ.get("HOME", "")
        if not home or not os.path.isabs(home):
            raise SessionError("HOME is not set to an absolute path; cannot find the sessions")
        base = Path(home) / ".local" / "share"
    return base / APP_DIR / "sessions"


def _new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def _is_text_content(content: Any) -> bool:
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("type"), str) for part in content
    )


def validate_item(item: Any) -> str | None:
    """What is wrong with a recorded item's shape, or None."""
    if not isinstance(item, dict):
        return "not a JSON object"
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        if item.get("role") not in ("user", "assistant", "system", "developer"):
            return "a message without a known role"
        if not _is_text_content(item.get("content")):
            return "a message without text content"
        return None
    if kind == "function_call":
        if not isinstance(item.get("call_id"), str) or not isinstance(item.get("name"), str):
            return "a function call without call_id or name"
        arguments = item.get("arguments")
        try:
            parsed = untrusted_json.decode(arguments) if isinstance(arguments, str) else None
        except untrusted_json.UntrustedJsonError:
            parsed = None
        if not isinstance(parsed, dict):
            return "a function call whose arguments are not a JSON object"
        return None
    if kind == "function_call_output":
        if not isinstance(item.get("call_id"), str):
            return "a function call output without call_id"
        if not isinstance(item.get("output"), str | list):
            return "a function call output without output"
        return None
    if isinstance(kind, str) and kind:
        return None  # another Responses item type the model returned: kept as it came
    return "an item of unknown type"


class SessionLog:
    def __init__(self, session_id: str, path: Path, redactor: Redactor | None = None) -> None:
        self.id = session_id
        self.path = path
        self._redactor = redactor
        self._fd: int | None = None

    @classmethod
    def create(cls, environ: Mapping[str, str], *, redactor: Redactor | None = None) -> SessionLog:
        directory = private_dir(sessions_dir(environ))
        for _ in range(100):
            session_id = _new_id()
            path = directory / f"{session_id}.jsonl"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            os.fchmod(fd, 0o600)  # the umask may have taken bits away, even the owner's
            log = cls(session_id, path, redactor)
            log._fd = fd
            return log
        raise SessionError("could not create a new session file")

    @classmethod
    def open(
        cls, environ: Mapping[str, str], session_id: str, *, redactor: Redactor | None = None
    ) -> tuple[SessionLog, list[dict], list[str]]:
        if not _ID_PATTERN.match(session_id):
            raise SessionError(
                f"{session_id!r} is not a session id (like 20261130-091500-ab12cd); "
                "run `sessions` to list them"
            )
        path = sessions_dir(environ) / f"{session_id}.jsonl"
        raw = _read_bounded(path, session_id)
        items, warnings = _parse(path, raw)
        private_dir(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        except OSError as exc:
            raise SessionError(f"cannot write {path}: {exc.strerror}") from None
        os.fchmod(fd, 0o600)
        if raw and not raw.endswith(b"\n"):
            # Close the damaged last line so the next record starts on its own line.
            os.write(fd, b"\n")
            os.fsync(fd)
        log = cls(session_id, path, redactor)
        log._fd = fd
        return log, items, warnings

    def append(self, item: dict) -> None:
        if self._fd is None:
            raise SessionError("the session log is closed")
        if self._redactor is not None:
            item = self._redactor.redact_obj(item)
        line = json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n"
        # One write of the whole line on an O_APPEND descriptor, then fsync.
        os.write(self._fd, line.encode("utf-8", "surrogatepass"))
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_bounded(path: Path, session_id: str) -> bytes:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SESSION_BYTES + 1)
    except FileNotFoundError:
        raise SessionError(f"no session {session_id}; run `sessions` to list them") from None
    except OSError as exc:
        raise SessionError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_SESSION_BYTES:
        raise SessionError(
            f"{path} is larger than {MAX_SESSION_BYTES // (1024 * 1024)} MiB; it cannot be reopened"
        )
    return raw


def _parse(path: Path, raw: bytes) -> tuple[list[dict], list[str]]:
    warnings: list[str] = []
    records: list[dict] = []
    lines = raw.split(b"\n")
    last_complete = len(lines) - 1  # the element after the final "\n" is b"" when intact
    for index, line in enumerate(lines):
        number = index + 1
        if not line.strip():
            continue
        if index == last_complete:
            warnings.append(f"{path}:{number}: incomplete last record skipped (truncated write)")
            continue
        try:
            item = untrusted_json.decode(line)
        except untrusted_json.UntrustedJsonError as exc:
            warnings.append(f"{path}:{number}: damaged record skipped ({exc})")
            continue
        problem = validate_item(item)
        if problem:
            warnings.append(f"{path}:{number}: damaged record skipped ({problem})")
            continue
        records.append((number, item))  # type: ignore[arg-type]
    return _pair(path, records, warnings), warnings


def _pair(path: Path, records: list, warnings: list[str]) -> list[dict]:
    """Keep the history valid: every call gets exactly one output, in order."""
    items: list[dict] = []
    open_calls: list[str] = []  # call_ids still waiting for an output
    answered: set[str] = set()
    seen_calls: set[str] = set()

    def close_open_calls() -> None:
        for call_id in open_calls:
            # rendered here, not at import: the self-test counts a limit read at import as
            # read by every case (tests/zoo_impact.py)
            output = results.model_output(INTERRUPTED)
            items.append({"type": "function_call_output", "call_id": call_id, "output": output})
            answered.add(call_id)
        open_calls.clear()

    for number, item in records:
        kind = item.get("type", "message")
        if kind == "function_call":
            if item["call_id"] in seen_calls:
                warnings.append(f"{path}:{number}: repeated function call skipped")
                continue
            seen_calls.add(item["call_id"])
            open_calls.append(item["call_id"])
            items.append(item)
        elif kind == "function_call_output":
            call_id = item["call_id"]
            if call_id not in open_calls:
                warnings.append(f"{path}:{number}: output without its call skipped")
                continue
            open_calls.remove(call_id)
            answered.add(call_id)
            items.append(item)
        else:
            close_open_calls()
            items.append(item)
    close_open_calls()
    return items


def list_sessions(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """Saved sessions, oldest first (ids sort by creation time)."""
    directory = sessions_dir(environ)
    if not directory.is_dir():
        return []
    found = [
        (path.stem, path)
        for path in directory.glob("*.jsonl")
        if _ID_PATTERN.match(path.stem) and path.is_file()
    ]
    return sorted(found)


@dataclass
class OpenedSession:
    """A session ready for the engine: its log, the history to continue from, and what to
    tell the person about it (reopened, damaged records skipped)."""

    log: SessionLog
    history: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def open_session(
    environ: Mapping[str, str], resume: str | None, *, redactor: Redactor | None = None
) -> OpenedSession:
    """A new session, or the saved session `resume` reopened. Raises SessionError."""
    if not resume:
        return OpenedSession(SessionLog.create(environ, redactor=redactor))
    log, history, warnings = SessionLog.open(environ, resume, redactor=redactor)
    notices = [f"Resuming session {log.id} ({len(history)} items)."]
    notices += [f"Warning: {warning}" for warning in warnings]
    return OpenedSession(log, history, notices)
