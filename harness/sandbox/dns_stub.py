"""The sealed network's name server: a stub whose answers can change (PRIV-1, DNS rebinding).

Strategy: inside the sealed network, names the suite needs are mapped in /etc/hosts, which
never changes. One attack needs an answer that does: a name that resolves to a public
address when a host checks it and to a private one when it connects (DNS rebinding). So the
sealed network's /etc/resolv.conf points at this stub on 127.0.0.53:53, and the stub
answers `rebind-<label>.example.invalid`: the first A query with the public stand-in
address, every later one with a private address, counted per name, so each case uses a
fresh label and cases never share a count. AAAA queries for it get no address (a name with
only an A record); every other name is NXDOMAIN at once, so lookups off the suite's names
still fail fast.

The wire handling is pure (`answer`: a query datagram in, a response datagram out, or None
for garbage), bounded (one question, names of at most 255 bytes) and never raises; the
socket is bound by the sandbox while it may still bind port 53, and served by `serve` on a
daemon thread (in the run's own process) or in a child process (`serve_forked`) that ends
when the command it was started for ends.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
from typing import Any, Final

__all__ = [
    "ADDRESS",
    "REBIND_FIRST",
    "REBIND_SUFFIX",
    "REBIND_THEN",
    "Rebinder",
    "answer",
    "probe",
    "serve",
    "serve_forked",
]

ADDRESS: Final = "127.0.0.53"
PORT: Final = 53
REBIND_SUFFIX: Final = ".example.invalid"
REBIND_PREFIX: Final = "rebind-"
REBIND_FIRST: Final = "192.0.2.1"  # the sealed network's public stand-in
REBIND_THEN: Final = "10.0.0.2"  # a private address on its loopback
_A, _AAAA, _IN = 1, 28, 1
_MAX_NAMES = 4096


def _name(packet: bytes, offset: int) -> tuple[str, int] | None:
    """A query's name (no compression in a question) and the offset after it."""
    labels: list[str] = []
    total = 0
    while offset < len(packet):
        length = packet[offset]
        offset += 1
        if length == 0:
            return ".".join(labels).lower(), offset
        if length > 63 or offset + length > len(packet):
            return None
        total += length + 1
        if total > 255:
            return None
        labels.append(packet[offset : offset + length].decode("ascii", "replace"))
        offset += length
    return None


class Rebinder:
    """How many A queries each rebinding name has had (bounded in names)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def next_address(self, name: str) -> str:
        with self._lock:
            if name not in self._counts and len(self._counts) >= _MAX_NAMES:
                self._counts.clear()
            count = self._counts.get(name, 0)
            self._counts[name] = count + 1
        return REBIND_FIRST if count == 0 else REBIND_THEN


def answer(query: bytes, rebinder: Rebinder) -> bytes | None:
    """The response to one query datagram, or None when it is not a query to answer."""
    if len(query) < 12:
        return None
    ident, flags, questions = struct.unpack("!HHH", query[:6])
    if flags & 0x8000 or questions != 1:  # a response, or not one question
        return None
    parsed = _name(query, 12)
    if parsed is None or parsed[1] + 4 > len(query):
        return None
    name, end = parsed
    qtype, qclass = struct.unpack("!HH", query[end : end + 4])
    question = query[12 : end + 4]
    rebinding = name.startswith(REBIND_PREFIX) and name.endswith(REBIND_SUFFIX)
    records = b""
    count = 0
    if rebinding and qclass == _IN and qtype == _A:
        address = socket.inet_aton(rebinder.next_address(name))
        # the name by a pointer to the question (offset 12), TTL 0: never cache it
        records = struct.pack("!HHHIH", 0xC00C, _A, _IN, 0, 4) + address
        count = 1
    rcode = 0 if rebinding else 3  # NOERROR (maybe with no record) / NXDOMAIN
    response_flags = 0x8000 | (flags & 0x0100) | 0x0400 | 0x0080 | rcode  # QR, RD, AA, RA
    header = struct.pack("!HHHHHH", ident, response_flags, 1, count, 0, 0)
    return header + question + records


def serve(sock: socket.socket, stop_when_readable: int | None = None) -> None:
    """Answer queries on `sock` until the file descriptor `stop_when_readable` turns readable
    (at once: whoever waits for this process to end does not wait a polling interval)."""
    rebinder = Rebinder()
    watched: list[Any] = [sock] if stop_when_readable is None else [sock, stop_when_readable]
    while True:
        try:
            ready, _, _ = select.select(watched, [], [])
            if stop_when_readable is not None and stop_when_readable in ready:
                return
            query, peer = sock.recvfrom(512)
        except OSError:
            return
        response = answer(query, rebinder)
        if response is not None:
            try:
                sock.sendto(response, peer)
            except OSError:
                continue


def serve_in_thread(sock: socket.socket) -> threading.Thread:
    thread = threading.Thread(target=serve, args=(sock,), name="dns-stub", daemon=True)
    thread.start()
    return thread


def serve_forked(sock: socket.socket) -> int | None:
    """Serve `sock` in a child process that ends when this process (and whatever it execs
    into) ends; the pid, or None where fork is not possible. Call it single-threaded.
    Returns once the child holds none of this process's standard streams."""
    read_end, write_end = os.pipe()
    # Closed by the child once its streams are /dev/null: until then it holds the caller's
    # output pipes, and the command this process execs into could end (or be read to its
    # end) first. Seen beside CPU burners: the command saw the child still holding its stdout.
    redirected, redirecting = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (read_end, write_end, redirected, redirecting):
            os.close(fd)
        return None
    if pid == 0:  # pragma: no cover - the child serves until its parent is gone
        os.close(write_end)
        os.close(redirected)
        try:
            os.setsid()
        except OSError:
            pass
        # not the caller's output pipes: whoever reads them to their end must not wait for
        # this child too (without /dev/null, closed: the stub writes nothing)
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
        except OSError:
            devnull = -1
        for fd in (0, 1, 2):
            try:
                if devnull >= 0:
                    os.dup2(devnull, fd)
                else:
                    os.close(fd)
            except OSError:
                pass
        os.close(redirecting)
        serve(sock, stop_when_readable=read_end)  # readable: EOF, the parent is gone
        os._exit(0)
    os.close(redirecting)
    os.read(redirected, 1)  # EOF: the child closed it (or ended)
    os.close(redirected)
    os.close(read_end)
    os.set_inheritable(write_end, True)  # held by the command this process execs into
    sock.close()
    return pid


def probe(timeout: float = 0.5) -> bool:
    """Whether a stub answers on ADDRESS:53 (a query for a name it does not know)."""
    query = struct.pack("!HHHHHH", 0x5EA1, 0x0100, 1, 0, 0, 0)
    for label in ("mcphc-probe", "invalid"):
        query += bytes([len(label)]) + label.encode()
    query += b"\x00" + struct.pack("!HH", _A, _IN)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            s.sendto(query, (ADDRESS, PORT))
            data = s.recv(512)
    except OSError:
        return False
    return len(data) >= 12 and data[:2] == query[:2]
