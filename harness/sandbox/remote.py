"""A stand-in remote host: a TCP listener on one of the sealed network's addresses.

Strategy: NET-1 says a plain-HTTP URL to a non-loopback host is refused and no connection
is attempted. Inside the sealed network (`mcp_host_conformance.harness.sandbox.network`) the
TEST-NET-1 address is local, so a listener there sees every attempt for real: its journal
records each accepted connection (kind "connection", with the request line and Host header
of the first bytes received, so it shows which URL it was). It answers nothing and closes,
so a host that connects gets an error, never a server. Outside the sealed network it
cannot exist (the address is not local), and the case that needs it is not observed
rather than aiming a host at an address off this machine.
"""

from __future__ import annotations

import socket
import threading

from mcp_host_conformance.mocks.journal import Entry, Journal

__all__ = ["RemoteListener", "on_one_port"]

_FIRST_BYTES = 4096
_READ_BOUND = 1.0  # seconds to wait for a request line before closing
_READERS = 32  # connections whose first line is read; later ones are only journaled


class RemoteListener:
    """Listens on `address` (port 0); `journal` gets one "connection" entry per accept.
    `private`: it stands at a private address a configured URL aims at, which a host with
    `private-address-refusal` never connects to (PRIV-1's monitor reads it)."""

    def __init__(self, address: str, port: int = 0, private: bool = False) -> None:
        self.journal = Journal()
        self.private = private
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._socket.bind((address, port))  # OSError when the address is not local
            self._socket.listen(64)
        except OSError:
            self._socket.close()
            raise
        self.address = address
        self.port = self._socket.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="remote-listener", daemon=True)
        self._thread.start()

    def url(self, host: str | None = None, path: str = "/mcp", scheme: str = "http") -> str:
        """`http://HOST:PORT/mcp`, HOST defaulting to the address itself (in brackets for
        IPv6)."""
        shown = host or (f"[{self.address}]" if ":" in self.address else self.address)
        return f"{scheme}://{shown}:{self.port}{path}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, peer = self._socket.accept()
            except OSError:
                return  # closed
            entry = self.journal.record(Entry(kind="connection", extra={"peer": peer[0]}))
            if self.journal.count(kind="connection") > _READERS:
                connection.close()  # journaled; a flood gets no reader threads
                continue
            threading.Thread(
                target=self._read_first_line, args=(connection, entry), daemon=True
            ).start()

    @staticmethod
    def _read_first_line(connection: socket.socket, entry: Entry) -> None:
        with connection:  # closed only once the entry is complete
            connection.settimeout(_READ_BOUND)
            try:
                first = connection.recv(_FIRST_BYTES)
            except OSError:
                first = b""
            lines = first.decode("latin-1").split("\r\n")
            host = next((ln[5:].strip() for ln in lines[1:] if ln[:5].lower() == "host:"), "")
            entry.extra.update(first_line=lines[0][:200], host=host[:200])

    def close(self) -> None:
        self._closed.set()
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._socket.close()
        self._thread.join(timeout=_READ_BOUND + 1)

    def __enter__(self) -> RemoteListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def on_one_port(
    first: str, second: str, private: bool = False
) -> tuple[RemoteListener, RemoteListener] | None:
    """Listeners at `first` and `second` on the same port, so that one URL reaches either
    address (a rebinding name's two answers); None when no port was free on both. `private`
    marks the first."""
    for _attempt in range(20):
        candidate = RemoteListener(first, private=private)
        try:
            return candidate, RemoteListener(second, candidate.port)
        except OSError:
            candidate.close()
    return None
