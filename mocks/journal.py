"""What a mock received, in order, and a way to wait for it.

Strategy: every mock appends one `Entry` per thing it received (an HTTP request, a
JSON-RPC message, a stdio process start). Readers filter and count; a reader that needs
something that has not happened yet waits on a condition variable with a bound, never in
a sleep loop. The stdio mock runs in another process, so its journal is a JSON-lines file
(`FileJournal`) that the same API reads.

This module must stay light: the stdio mock imports it and must start in < 150 ms.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field

TYPE_CHECKING = False  # no `typing` at run time: the stdio mock imports this (stdio_server)
if TYPE_CHECKING:
    from typing import Any


class JournalTimeout(AssertionError):
    """A bounded wait ended before the journal held what was asked for."""


@dataclass
class Entry:
    """One thing a mock received.

    `kind` is "http" (an HTTP request, whatever its body), "rpc" (one JSON-RPC message
    inside a request or a stdio line), "process" (a stdio mock started: argv, env, pid,
    pgid) or "event" (something the mock did or saw that is not a request, e.g.
    "connection-reset", "stderr-flooded", "exit").
    """

    kind: str
    time: float = field(default_factory=time.time)
    # JSON-RPC
    method: str | None = None
    id: Any = None
    params: Any = None
    # HTTP
    http_method: str | None = None
    path: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body_size: int = 0
    connection: str | None = None
    # stdio process
    argv: list[str] | None = None
    env: dict[str, str] | None = None
    pid: int | None = None
    pgid: int | None = None
    # anything else the mock wants to record (e.g. {"event": "connection-reset"},
    # {"raw": "<first bytes of an unparseable body>"})
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def json_text(self, **dumps: Any) -> str:
        """The entry as JSON text: `json.dumps(self.to_json(), **dumps)`, without the deep
        copy `to_json` makes (a journal is written and searched as text entry by entry, and
        `asdict` walks every value of every message in Python)."""
        try:
            return json.dumps(vars(self), **dumps)
        except TypeError:  # a value JSON does not know as it is (a dataclass): asdict's form
            return json.dumps(self.to_json(), **dumps)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


Predicate = Callable[[Entry], bool]

RAW_SHOWN = 200  # characters of an unreadable or invalid message kept in its entry


def rpc_entry(
    message: Any,
    message_kind: str,
    *,
    error: str | None = None,
    body_size: int = 0,
    headers: dict[str, str] | None = None,
    connection: str | None = None,
) -> Entry:
    """The one way a mock journals a JSON-RPC message it received, whatever the transport.

    `message_kind` is "request", "notification", "response" or "invalid" (see
    `_rpc.classify`) for a decoded message, or "unreadable" when the bytes were not JSON a
    mock takes (then `message` is those bytes and `error` says why). An invalid or
    unreadable message keeps its first characters in `extra["raw"]`.
    """
    extra: dict[str, Any] = {"message_kind": message_kind}
    fields: dict[str, Any] = {}
    if message_kind == "unreadable":
        raw = message if isinstance(message, bytes) else str(message).encode()
        extra["raw"] = raw[:RAW_SHOWN].decode("utf-8", "replace")
        extra["error"] = error or "unreadable"
    else:
        fields = message if isinstance(message, dict) else {}
        if message_kind == "invalid":
            extra["raw"] = json.dumps(message, separators=(",", ":"))[:RAW_SHOWN]
    method = fields.get("method")
    return Entry(
        kind="rpc",
        method=method if isinstance(method, str) else None,
        id=fields.get("id"),
        params=fields.get("params"),
        headers=dict(headers or {}),
        body_size=body_size,
        connection=connection,
        extra=extra,
    )


def _matches(entry: Entry, kind: str | None, method: str | None, where: Predicate | None) -> bool:
    if kind is not None and entry.kind != kind:
        return False
    if method is not None and entry.method != method:
        return False
    return where is None or where(entry)


class Journal:
    """An in-memory journal, shared between a mock's threads and its readers."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._changed = threading.Condition()

    # writing -------------------------------------------------------------------------
    def record(self, entry: Entry) -> Entry:
        with self._changed:
            self._entries.append(entry)
            self._changed.notify_all()
        return entry

    def clear(self) -> None:
        with self._changed:
            self._entries.clear()
            self._changed.notify_all()

    # reading -------------------------------------------------------------------------
    def _snapshot(self) -> list[Entry]:
        with self._changed:
            return list(self._entries)

    def entries(
        self, method: str | None = None, *, kind: str | None = None, where: Predicate | None = None
    ) -> list[Entry]:
        """Entries in arrival order, optionally only one JSON-RPC method / kind / predicate."""
        return [e for e in self._snapshot() if _matches(e, kind, method, where)]

    def count(
        self, method: str | None = None, *, kind: str | None = None, where: Predicate | None = None
    ) -> int:
        return len(self.entries(method, kind=kind, where=where))

    def methods(self) -> list[str]:
        """The JSON-RPC methods received, in order (handy in failure messages)."""
        return [e.method for e in self._snapshot() if e.kind == "rpc" and e.method]

    def is_empty(self) -> bool:
        return not self._snapshot()

    def wait_for(
        self,
        method: str | None = None,
        *,
        kind: str | None = None,
        where: Predicate | None = None,
        count: int = 1,
        timeout: float = 5.0,
    ) -> list[Entry]:
        """Block until at least `count` matching entries exist; return them.

        Raises JournalTimeout (an AssertionError, so a case fails with its message) when
        `timeout` seconds pass first.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [e for e in self._entries if _matches(e, kind, method, where)]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise JournalTimeout(
                        f"waited {timeout:.2f}s for {count} x {method or kind or 'entry'}; "
                        f"journal has {len(found)} (methods seen: {self.methods_unlocked()})"
                    )
                self._changed.wait(left)

    def methods_unlocked(self) -> list[str]:
        return [e.method for e in self._entries if e.kind == "rpc" and e.method]

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self._snapshot()]

    def __len__(self) -> int:
        return len(self._snapshot())

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._snapshot())


class FileJournal(Journal):
    """A journal kept in a JSON-lines file by another process (the stdio mock).

    Writers in the other process call `append_line`; readers here see the file's
    complete lines. Waiting polls the file's size at a short interval, because no
    condition variable crosses a process boundary; the bound is still the caller's.
    """

    POLL_INTERVAL = 0.01

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = os.fspath(path)

    @staticmethod
    def append_line(path: str, entry: Entry) -> None:
        line = entry.json_text(separators=(",", ":")) + "\n"
        # One write() of one line with O_APPEND: concurrent writers never interleave.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def _snapshot(self) -> list[Entry]:
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return []
        entries = []
        for line in text.split("\n")[:-1]:  # the last piece is "" or a line being written
            if line.strip():
                entries.append(Entry.from_json(json.loads(line)))
        return entries

    def record(self, entry: Entry) -> Entry:
        self.append_line(self.path, entry)
        return entry

    def clear(self) -> None:
        with open(self.path, "w"):
            pass

    def wait_for(
        self,
        method: str | None = None,
        *,
        kind: str | None = None,
        where: Predicate | None = None,
        count: int = 1,
        timeout: float = 5.0,
    ) -> list[Entry]:
        deadline = time.monotonic() + timeout
        wake = threading.Event()
        while True:
            found = self.entries(method, kind=kind, where=where)
            if len(found) >= count:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                raise JournalTimeout(
                    f"waited {timeout:.2f}s for {count} x {method or kind or 'entry'} in "
                    f"{self.path}; journal has {len(found)} (methods seen: {self.methods()})"
                )
            wake.wait(min(self.POLL_INTERVAL, left))


def merged(journals: Iterable[Journal]) -> list[Entry]:
    """All entries of several journals in time order."""
    out: list[Entry] = []
    for j in journals:
        out.extend(j.entries())
    return sorted(out, key=lambda e: e.time)
