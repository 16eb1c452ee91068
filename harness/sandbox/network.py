"""The sealed network: a run, its host, driver and children in a private network namespace.

Strategy: a conformance run starts hosts nobody here wrote, and some cases point them at
"remote" URLs. Nothing a host does may reach another machine, so the run seals itself:
this process calls unshare(2) for a new network namespace (and a mount namespace, for
/etc/hosts), brings up `lo`, and adds to it the addresses the cases need (a TEST-NET-1
address that plays "a remote host", private-range ones for the private-address profile),
plus /etc/hosts names that resolve to them. Everything started afterwards (pytest, its
xdist workers, the host, its driver, their children) inherits the namespace: loopback and
those addresses are local, every other address is unreachable (ENETUNREACH at once), and
name lookups beyond those names fail fast, so a host's telemetry or update check cannot
leave either.

As root only the network and mount namespaces are needed. Otherwise a user namespace
maps us to root inside (to configure `lo`), and a second, nested one maps us back to our
own uid, so the host under test sees the uid it would see outside. unshare(2) of a user
namespace needs a single-threaded process, and a half-made namespace (no loopback) would
ruin the run, so `seal` first tries the whole sequence in a forked child and only then
does it for real; where it cannot be done (no user namespaces, a seccomp filter, not
Linux), the process is left as it was and says why.

Whether a process is sealed is never taken on trust: `observe()` reads the interfaces of
this process's own namespace (/proc/self/net/dev) and checks that the remote address is
local. Mapping names through /etc/hosts (instead of a resolver hook) keeps every host's
resolver in play unchanged: glibc, Node and Rust all read it.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import stat
import struct
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CAVEAT_ENV",
    "HOST",
    "ISOLATED",
    "NAMES",
    "PRIVATE_ADDRESSES",
    "REASON_ENV",
    "REMOTE_ADDRESS",
    "Network",
    "SealError",
    "is_local",
    "name_server_stopped",
    "observe",
    "seal",
]

ISOLATED = "isolated"
HOST = "host"

# TEST-NET-1 (RFC 5737): documentation only, never routed; inside it plays "a remote host".
REMOTE_ADDRESS = "192.0.2.1"
# Private and link-local addresses (RFC 1918, RFC 3927: the cloud metadata address; RFC 6598:
# carrier-grade NAT), and an IPv6 unique-local one (RFC 4193), for the private-address
# refusal profile.
PRIVATE_ADDRESSES = ("10.0.0.2", "172.16.0.2", "192.168.0.2", "169.254.169.254", "100.64.0.2")
PRIVATE_ADDRESSES_V6 = ("fd00::2",)
# Names under .invalid (RFC 6761) never resolve outside; inside they are local.
NAMES = {
    "mcp.example.invalid": REMOTE_ADDRESS,
    "localhost.example.invalid": REMOTE_ADDRESS,
    "127.0.0.1.example.invalid": REMOTE_ADDRESS,
    "private.example.invalid": PRIVATE_ADDRESSES[0],
    "metadata.example.invalid": PRIVATE_ADDRESSES[3],
    "cgnat.example.invalid": PRIVATE_ADDRESSES[4],
    "ula.example.invalid": PRIVATE_ADDRESSES_V6[0],
}
HOSTS_FILE = Path("/etc/hosts")
RESOLV_FILE = Path("/etc/resolv.conf")
# The name server of the sealed network (`dns_stub`): every lookup beyond /etc/hosts goes to
# it, and it answers only the rebinding names (a name whose address changes). Its socket is
# bound while sealing (port 53 needs the privilege the sealing has) and served by the run's
# process (`serve_dns`) or by a child beside the command `main` runs.
_DNS_SOCKET: socket.socket | None = None
_DNS_SERVER: tuple[int, threading.Thread] | None = None  # the pid serving, and its thread
_HOSTS_MARK = "# mcp-host-conformance sealed network"

# Why a run is not sealed, handed from the process that tried to the ones that report.
REASON_ENV = "MCP_HOST_CONFORMANCE_NETWORK_REASON"
# Why a sealed run would not hold against a host running as root (no user namespace of its
# own could be made), handed on the same way; a caveat never makes a process look sealed.
CAVEAT_ENV = "MCP_HOST_CONFORMANCE_NETWORK_CAVEAT"
ROOT_CAVEAT = (
    "sealed without a user namespace of its own: a host running as root could enter the "
    "machine's network namespace"
)
_NOT_TRIED = (
    "not sealed: run through `mcp-host-conformance run` or wrap the command in "
    "`mcp-host-conformance sealed -- ...`"
)


@dataclass(frozen=True)
class Network:
    """The network this process sees, as observed (not as claimed)."""

    mode: str  # ISOLATED or HOST
    # why it is not isolated; when it is, "" or why it would not hold against a root host
    reason: str = ""
    remote_address: str | None = None  # local address playing a remote host (isolated only)
    private_addresses: tuple[str, ...] = ()  # IPv4 and IPv6, those that are local here
    names: dict[str, str] = field(default_factory=dict)  # host name -> address, in /etc/hosts
    dns: bool = False  # the name server answers (rebinding names: `dns_stub`)

    @property
    def isolated(self) -> bool:
        return self.mode == ISOLATED

    def to_json(self) -> dict[str, object]:
        return {
            "network": self.mode,
            "network_reason": self.reason,
            "remote_address": self.remote_address,
            "private_addresses": list(self.private_addresses),
            "names": dict(self.names),
            "dns": self.dns,
        }


class SealError(RuntimeError):
    """The network could not be sealed (the message says why)."""


# ---- observing ------------------------------------------------------------------------------


def interfaces(net_dev: Path = Path("/proc/self/net/dev")) -> list[str]:
    """Interface names of this process's network namespace."""
    lines = net_dev.read_text("ascii", "replace").splitlines()[2:]
    return [line.split(":", 1)[0].strip() for line in lines if ":" in line]


def is_local(address: str) -> bool:
    """Whether `address` is one of this network namespace's own (a socket may bind it)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


def _mapped_names() -> dict[str, str]:
    try:
        text = HOSTS_FILE.read_text("utf-8", "replace")
    except OSError:
        return {}
    if _HOSTS_MARK not in text:
        return {}
    mapped = {}
    for line in text.split(_HOSTS_MARK, 1)[1].splitlines():
        parts = line.split("#", 1)[0].split()
        for name in parts[1:]:
            if NAMES.get(name) == parts[0]:
                mapped[name] = parts[0]
    return mapped


def observe(*, probe_dns: bool = True) -> Network:
    """This process's network: isolated only when its namespace has no interface but `lo`
    and the remote address is local to it. `probe_dns=False` while sealing: nothing serves
    the name server yet, and its probe would wait out its whole timeout (0.5 s)."""
    try:
        names = interfaces()
    except OSError as exc:
        return Network(HOST, reason=f"cannot read the network interfaces: {exc.strerror}")
    if names != ["lo"] or not is_local(REMOTE_ADDRESS):
        return Network(HOST, reason=os.environ.get(REASON_ENV) or _NOT_TRIED)
    from mcp_host_conformance.harness.sandbox import dns_stub

    return Network(
        ISOLATED,
        reason=os.environ.get(CAVEAT_ENV, "") if os.geteuid() == 0 else "",
        remote_address=REMOTE_ADDRESS,
        private_addresses=tuple(
            a for a in (*PRIVATE_ADDRESSES, *PRIVATE_ADDRESSES_V6) if is_local(a)
        ),
        names=_mapped_names(),
        dns=probe_dns and dns_stub.probe(),
    )


# ---- sealing --------------------------------------------------------------------------------

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_SIOCSIFADDR = 0x8916
_SIOCSIFNETMASK = 0x891C
_IFF_UP = 0x1
_SO_ACCEPTCON = 0x10000  # /proc/net/unix: a listening socket
_IDENTITY_MAP = "0 0 4294967295\n"  # every id to itself, as in the machine's own namespace


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise SealError(f"{what}: {os.strerror(code)} ({errno.errorcode.get(code, code)})")


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write(text)
    except OSError as exc:
        raise SealError(f"writing {path}: {exc.strerror}") from None


def _unshare(flags: int, what: str) -> None:
    _check(_libc().unshare(flags), what)


def _map_to(uid: int, gid: int, outer_uid: int, outer_gid: int) -> None:
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {outer_uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {outer_gid} 1\n")


def _ifreq(name: str, payload: bytes = b"") -> bytes:
    return struct.pack("16s", name.encode()) + payload.ljust(24, b"\0")


def _sockaddr(address: str) -> bytes:
    return struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton(address))


def _configure_loopback(addresses: Sequence[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            flags = struct.unpack_from("H", fcntl.ioctl(s, _SIOCGIFFLAGS, _ifreq("lo")), 16)[0]
            fcntl.ioctl(s, _SIOCSIFFLAGS, _ifreq("lo", struct.pack("H", flags | _IFF_UP)))
            for k, address in enumerate(addresses, start=1):
                alias = f"lo:{k}"
                fcntl.ioctl(s, _SIOCSIFADDR, _ifreq(alias, _sockaddr(address)))
                # one address, not its class's whole network (lo would own all of 192.0.2/24)
                fcntl.ioctl(s, _SIOCSIFNETMASK, _ifreq(alias, _sockaddr("255.255.255.255")))
        except OSError as exc:
            raise SealError(f"configuring lo: {exc.strerror}") from None


def _bind_copy(path: Path, text: str, what: str) -> None:
    """Bind-mount a file holding `text` over `path` (in this mount namespace only)."""
    fd, copy = tempfile.mkstemp(prefix="mcphc-hosts-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(copy, 0o644)
        target = os.path.realpath(path).encode()
        _check(_libc().mount(copy.encode(), target, None, _MS_BIND, None), what)
    finally:
        os.unlink(copy)  # the bind mount keeps the file; nothing is left behind


def _private_mounts() -> None:
    """Nothing mounted in this mount namespace propagates back to the machine's."""
    _check(_libc().mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "making mounts private")


def _map_names() -> None:
    """Bind a copy of /etc/hosts with NAMES added over the original, and a resolv.conf that
    names the sealed network's own name server, in this process's own mount namespace (made
    private first: `_private_mounts`)."""
    from mcp_host_conformance.harness.sandbox.dns_stub import ADDRESS

    try:
        original = HOSTS_FILE.read_text("utf-8", "replace")
    except OSError:
        original = "127.0.0.1 localhost\n::1 localhost\n"
    by_address: dict[str, list[str]] = {}
    for name, address in NAMES.items():
        by_address.setdefault(address, []).append(name)
    added = "".join(f"{a} {' '.join(names)}\n" for a, names in by_address.items())
    _bind_copy(
        HOSTS_FILE, original.rstrip("\n") + f"\n{_HOSTS_MARK}\n{added}", "mapping /etc/hosts"
    )
    if RESOLV_FILE.exists():
        _bind_copy(
            RESOLV_FILE,
            f"{_HOSTS_MARK}\nnameserver {ADDRESS}\noptions timeout:1 attempts:1\n",
            "mapping /etc/resolv.conf",
        )


def _configure_loopback_v6(addresses: Sequence[str]) -> None:
    """Add IPv6 addresses to lo; best effort (a kernel without IPv6 simply has none)."""
    try:
        index = socket.if_nametoindex("lo")
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            for address in addresses:
                # struct in6_ifreq: the address, its prefix length, the interface index
                request = struct.pack(
                    "16sIi", socket.inet_pton(socket.AF_INET6, address), 128, index
                )
                fcntl.ioctl(s, _SIOCSIFADDR, request)
    except OSError:
        pass


def _bind_dns() -> socket.socket | None:
    """The name server's socket, bound while this process may still bind port 53."""
    from mcp_host_conformance.harness.sandbox.dns_stub import ADDRESS, PORT

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((ADDRESS, PORT))
    except OSError:
        sock.close()
        return None
    return sock


def _identity_mapper(target: int) -> tuple[int, int, int]:
    """Fork a child that, told to, maps every uid and gid of `target`'s new user namespace to
    itself: only a process with CAP_SETUID in the parent namespace may map more than its own
    id, and after unshare(2) `target` has none there, while the child (forked before) does.
    Returns (pid, the pipe to tell it, the pipe it answers on: b"ok" or why not)."""
    go_read, go_write = os.pipe()
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(go_write)
        os.close(done_read)
        message = b"ok"
        try:
            if os.read(go_read, 1) == b"u":
                for name in ("uid_map", "gid_map"):
                    with open(f"/proc/{target}/{name}", "w", encoding="ascii") as f:
                        f.write(_IDENTITY_MAP)
        except OSError as exc:
            message = f"{exc.strerror}".encode()
        os.write(done_write, message)
        os._exit(0)
    os.close(go_read)
    os.close(done_write)
    return pid, go_write, done_read


def _unshare_user(flags: int, uid: int, gid: int, outer_uid: int, outer_gid: int) -> None:
    """unshare(2) a user namespace (with `flags`) in which this process is `uid`/`gid`,
    `outer_uid`/`outer_gid` in the namespace it leaves. Root to root maps every id to itself
    where this process may (root inside then owns every file root owns outside, and a host
    may change to any uid as it would outside); otherwise only the one id."""
    mapper = _identity_mapper(os.getpid()) if uid == outer_uid == 0 else None
    identity = False
    try:
        try:
            _unshare(_CLONE_NEWUSER | flags, _what(flags))
        except SealError:
            if mapper is not None:
                os.write(mapper[1], b"x")
            raise
        if mapper is not None:
            os.write(mapper[1], b"u")
            identity = os.read(mapper[2], 4000) == b"ok"
    finally:
        if mapper is not None:
            os.close(mapper[1])
            os.close(mapper[2])
            os.waitpid(mapper[0], 0)
    if not identity:
        _map_to(uid, gid, outer_uid, outer_gid)


def _what(flags: int) -> str:
    names = [n for f, n in ((_CLONE_NEWNET, "net"), (_CLONE_NEWNS, "mount")) if flags & f]
    return f"unshare({', '.join(['user', *names])})"


def _listening_unix_paths() -> list[str]:
    """The file system paths of the UNIX stream sockets listening in this network namespace
    (read before leaving it): the machine's services (a container engine, the system bus, a
    name service cache) that a path reaches from any network namespace."""
    try:
        lines = Path("/proc/self/net/unix").read_text("utf-8", "replace").splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(None, 7)
        # Flags __SO_ACCEPTCON: listening; a path (not "@abstract": those are per namespace)
        if len(fields) == 8 and int(fields[3], 16) & _SO_ACCEPTCON and fields[7].startswith("/"):
            found.append(fields[7])
    return found


def _cover(paths: Sequence[str]) -> list[str]:
    """Bind /dev/null over each socket path (in this mount namespace only): connecting to
    it is refused. The paths that could not be covered."""
    libc = _libc()
    missed = []
    for path in paths:
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
        except OSError:
            continue
        if libc.mount(os.devnull.encode(), path.encode(), None, _MS_BIND, None) != 0:
            missed.append(path)
    return missed


def _seal_here() -> None:
    """Move this (single-threaded) process into a new sealed network. Raises SealError.

    Two user namespaces: in the first, this process (root there) makes and configures the
    network and mount namespaces; in the second, nested one, where the run lives, it has its
    own uid back and no capability over either namespace, nor any over the machine's. Root
    too: root in the machine's own user namespace may enter any other network namespace
    (setns(2) through /proc/PID/ns/net of any process outside, or a handle to one), remount
    what the seal mounted, or talk to the machine's own interfaces, so a host running as
    root would not be sealed at all."""
    if not sys.platform.startswith("linux"):
        raise SealError("network namespaces need Linux")
    uid, gid = os.geteuid(), os.getegid()
    services = _listening_unix_paths()
    user_namespaces = True
    try:
        _unshare_user(_CLONE_NEWNET | _CLONE_NEWNS, 0, 0, uid, gid)
    except SealError as exc:
        if uid != 0:
            raise
        # no user namespaces here (a kernel setting): sealed, but a root host can leave
        _unshare(_CLONE_NEWNET | _CLONE_NEWNS, "unshare(net, mount)")
        os.environ[CAVEAT_ENV] = f"{ROOT_CAVEAT} ({exc})"
        user_namespaces = False
    _configure_loopback((REMOTE_ADDRESS, *PRIVATE_ADDRESSES))
    _configure_loopback_v6(PRIVATE_ADDRESSES_V6)
    _private_mounts()
    if HOSTS_FILE.exists():
        _map_names()
    missed = _cover(services)
    if missed:
        raise SealError(f"cannot hide the machine's UNIX socket {missed[0]}")
    global _DNS_SOCKET
    _DNS_SOCKET = _bind_dns()
    if user_namespaces:
        _unshare_user(0, uid, gid, 0, 0)


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _trial() -> str | None:
    """Try the whole sealing in a forked child; None if it worked, else the reason."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read_end)
        try:
            _seal_here()
            if observe(probe_dns=False).mode != ISOLATED:
                raise SealError("the new namespace did not come up as expected")
            message = b""
        except SealError as exc:
            message = str(exc).encode()
        except BaseException as exc:  # noqa: BLE001 - anything: report it, never raise
            message = f"{type(exc).__name__}: {exc}".encode()
        os.write(write_end, message[:4000])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read()
    os.waitpid(pid, 0)
    return message.decode("utf-8", "replace") or None


def serve_dns() -> bool:
    """Serve the sealed network's name server from this process, on a daemon thread, if this
    process sealed the network (and so holds its socket); whether it serves. Idempotent."""
    global _DNS_SOCKET
    from mcp_host_conformance.harness.sandbox import dns_stub

    global _DNS_SERVER
    sock, _DNS_SOCKET = _DNS_SOCKET, None
    if sock is None:
        return False
    _DNS_SERVER = (os.getpid(), dns_stub.serve_in_thread(sock))
    return True


def name_server_stopped() -> bool:
    """Whether this process served the sealed network's name server (`serve_dns`) and its
    thread has ended: every lookup after that went unanswered, the harness's fault, not the
    host's. False in a process forked from it (the thread is the parent's)."""
    return (
        _DNS_SERVER is not None and _DNS_SERVER[0] == os.getpid() and not _DNS_SERVER[1].is_alive()
    )


def seal() -> Network:
    """Seal this process's network (and everything it starts from now on), or leave it as it
    was and say why. Idempotent: an already sealed process stays as it is."""
    now = observe()
    if now.isolated:
        return now
    if _threads() != 1:
        reason = "not sealed: the process already runs threads (seal before starting any)"
    else:
        problem = _trial()
        if problem is None:
            try:
                _seal_here()
            except SealError as exc:  # worked in the trial: should not happen; never half-seal
                raise SealError(f"sealing failed after a successful trial: {exc}") from None
            sealed = observe(probe_dns=False)
            if sealed.isolated:
                os.environ.pop(REASON_ENV, None)
                return sealed
            raise SealError("sealing left the network in an unexpected state")
        reason = f"not sealed: this machine cannot make a private network namespace ({problem})"
    os.environ[REASON_ENV] = reason
    return Network(HOST, reason=reason)


# ---- python -m mcp_host_conformance.harness.sandbox.network [--require] -- CMD ... --------

_USAGE = (
    "usage: python -m mcp_host_conformance.harness.sandbox.network [--require] -- COMMAND "
    "[ARG...]\n"
    "Runs COMMAND in a private network namespace: loopback, "
    f"{REMOTE_ADDRESS} (a stand-in for a remote host) and private-range addresses, nothing "
    "else. Without one (the machine does not allow it) COMMAND runs on the host's network, "
    "said in one line on stderr, unless --require is given (then exit status 3).\n"
)


def main(argv: Sequence[str] | None = None) -> int:
    global _DNS_SOCKET
    args = list(sys.argv[1:] if argv is None else argv)
    require = False
    while args and args[0] != "--":
        if args[0] in ("-h", "--help"):
            sys.stdout.write(_USAGE)
            return 0
        if args[0] != "--require":
            sys.stderr.write(_USAGE)
            return 2
        require = True
        args.pop(0)
    if len(args) < 2:
        sys.stderr.write(_USAGE)
        return 2
    command = args[1:]
    try:
        network = seal()
    except SealError as exc:
        sys.stderr.write(f"mcp-host-conformance: {exc}\n")
        return 3
    if not network.isolated:
        if require:
            sys.stderr.write(f"mcp-host-conformance: {network.reason}\n")
            return 3
        # never open in silence: whoever asked for a seal learns, in one line, it did not happen
        why = " ".join(network.reason.split())
        sys.stderr.write(
            f"mcp-host-conformance: {why}; running {command[0]!r} on the machine's own "
            "network (--require refuses instead)\n"
        )
    if _DNS_SOCKET is not None:  # the name server lives beside the command, and ends with it
        from mcp_host_conformance.harness.sandbox import dns_stub

        dns_stub.serve_forked(_DNS_SOCKET)
        _DNS_SOCKET = None
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"mcp-host-conformance: cannot run {command[0]!r}: {exc.strerror}\n")
        return 127
    return 0  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    raise SystemExit(main())
