"""A meeting point for mocks: hold `initialize` until every party has been contacted.

Strategy: DISC-2 (servers connect in parallel) needs a check that a serial start can never
pass, whatever the machine's speed. A delay cannot give that (a loaded machine stretches a
parallel start past any fixed delay), a barrier can: each mock whose spec names the barrier
(`Misbehaviour.barrier`, "127.0.0.1:PORT") holds its answer to `initialize` until the
barrier has seen an `initialize` at every party. A host that connects in parallel reaches
every party at once and all of them answer; a host that waits for one server's answer
before contacting the next is never answered by the first, whatever the time it allows.

The barrier is a small TCP service on loopback, so the HTTP mocks (threads of the harness)
and the stdio mocks (processes the host starts) meet at the same place: a held mock
connects, sends its party name (the spec's name) and one newline, and waits for one line
back. Parties are told apart by name, so a host that contacts the same server twice counts
once. Once released, later arrivals pass at once. Nothing here polls: the service waits on
an event, the mocks on a socket read. Input is bounded (a name of at most `MAX_NAME`
bytes, read within `READ_TIMEOUT`, at most `MAX_CONNECTIONS` waiting), and a barrier
that cannot be reached, or goes away, releases its mock (it only exists to hold).

This module must stay light: the stdio mock imports it.
"""

from __future__ import annotations

import socket
import threading
from typing import Final

from mcp_host_conformance.mocks.journal import Entry, Journal

__all__ = ["MAX_NAME", "Barrier", "arrive", "arrive_blocking", "parse_address"]

MAX_NAME: Final = 256
READ_TIMEOUT: Final = 30.0
MAX_CONNECTIONS: Final = 256
GO: Final = b"go\n"


def parse_address(address: str) -> tuple[str, int]:
    """("127.0.0.1", PORT) from "127.0.0.1:PORT"; ValueError if it is not one."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"a barrier address is HOST:PORT, not {address[:80]!r}")
    return host, int(port)


class Barrier:
    """The service: released once `parties` distinct names have arrived. `journal` records
    kind="event" entries `barrier-arrived` (party) and `barrier-released` (parties)."""

    def __init__(self, parties: int) -> None:
        if parties < 1:
            raise ValueError("a barrier needs at least one party")
        self.parties = parties
        self.journal = Journal()
        self._arrived: set[str] = set()
        self._released = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._waiting = 0
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Barrier:
        if self._socket is None:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            listener.listen(MAX_CONNECTIONS)
            self._socket = listener
            self._thread = threading.Thread(target=self._accept, name="barrier", daemon=True)
            self._thread.start()
        return self

    @property
    def address(self) -> str:
        if self._socket is None:
            raise RuntimeError("the barrier is not started")
        return f"127.0.0.1:{self._socket.getsockname()[1]}"

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def arrived(self) -> list[str]:
        with self._lock:
            return sorted(self._arrived)

    def close(self) -> None:
        """Stop listening and let every waiting party go."""
        self._closed.set()
        self._released.set()
        listener, self._socket = self._socket, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _accept(self) -> None:
        listener = self._socket
        assert listener is not None
        while not self._closed.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                crowded = self._waiting >= MAX_CONNECTIONS
                if not crowded:
                    self._waiting += 1
            if crowded:
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            name = _read_name(conn)
            if name is not None:
                self._arrive(name)
                self._released.wait()
                if not self._closed.is_set():
                    conn.sendall(GO)
        except OSError:
            pass  # the party went away: nothing to release
        finally:
            conn.close()
            with self._lock:
                self._waiting -= 1

    def _arrive(self, name: str) -> None:
        with self._lock:
            self._arrived.add(name)
            complete = len(self._arrived) >= self.parties and not self._released.is_set()
        self.journal.record(Entry(kind="event", extra={"event": "barrier-arrived", "party": name}))
        if complete:
            self.journal.record(
                Entry(kind="event", extra={"event": "barrier-released", "parties": self.parties})
            )
            self._released.set()


def _read_name(conn: socket.socket) -> str | None:
    conn.settimeout(READ_TIMEOUT)
    data = b""
    while b"\n" not in data and len(data) <= MAX_NAME:
        piece = conn.recv(MAX_NAME + 1)
        if not piece:
            return None
        data += piece
    conn.settimeout(None)  # then wait for the release as long as it takes
    line, newline, _ = data.partition(b"\n")
    if not newline:
        return None
    return line.decode("utf-8", "replace") or None


def arrive_blocking(address: str, party: str) -> None:
    """Arrive at the barrier and wait for its release (a stdio mock's thread)."""
    try:
        host, port = parse_address(address)
        with socket.create_connection((host, port)) as conn:
            conn.sendall(party.encode("utf-8")[:MAX_NAME] + b"\n")
            conn.recv(len(GO))  # the release, or the barrier's end: either way, go on
    except (OSError, ValueError):
        pass  # no barrier to wait at: answer


async def arrive(address: str, party: str) -> None:
    """Arrive at the barrier and wait for its release (an HTTP mock's connection)."""
    import asyncio  # here: the stdio mock imports this module and must start fast

    try:
        host, port = parse_address(address)
        reader, writer = await asyncio.open_connection(host, port)
    except (OSError, ValueError):
        return
    try:
        writer.write(party.encode("utf-8")[:MAX_NAME] + b"\n")
        await writer.drain()
        await reader.readline()
    except OSError:
        pass
    finally:
        writer.close()
