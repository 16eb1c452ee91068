"""The sealed network against a host that tries to leave it, as root where the tests run as root.

Every way out the tests know of is tried from inside `mcp-host-conformance sealed --require`
by one probe (`ESCAPES`), which reports what each attempt got: entering the network (or user,
or mount) namespace of every process it can see, of its parent outside, and through a handle
to the machine's namespace passed to it open or bind-mounted where it can find it, and through
a pidfd; raw and packet sockets; the machine's own interfaces by name; a veth pair into the
machine's namespace; the sealed names and name server unmounted; the machine's name servers
and a public resolver; a UNIX socket listening outside. Nothing may get out: docs/network.md
says what the seal promises and how this file checks it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

BOUND = 60  # seconds; generous, a loaded machine

ESCAPES = textwrap.dedent(
    r"""
    import ctypes, errno, json, os, socket, subprocess, sys

    libc = ctypes.CDLL(None, use_errno=True)
    NEWNET, NEWUSER, NEWNS = 0x40000000, 0x10000000, 0x00020000
    KINDS = {"net": NEWNET, "user": NEWUSER, "mnt": NEWNS}
    OWN = {kind: os.stat(f"/proc/self/ns/{kind}").st_ino for kind in KINDS}
    args = json.loads(sys.argv[1])

    def code(number):
        return errno.errorcode.get(number, str(number))

    def setns(fd, kind):
        if libc.setns(fd, KINDS[kind]) == 0:
            try:
                now = os.stat(f"/proc/self/ns/{kind}").st_ino
            except OSError:  # another mount namespace's /proc, or none
                return "entered"
            return "entered" if now != OWN[kind] else "same"
        return code(ctypes.get_errno())

    def enter(path, kind):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            return code(exc.errno)
        try:
            return setns(fd, kind)
        finally:
            os.close(fd)

    seen = {}
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    seen["processes"] = {
        str(pid): {kind: enter(f"/proc/{pid}/ns/{kind}", kind) for kind in KINDS}
        for pid in pids
    }
    seen["parent"] = os.getppid()
    seen["handles"] = {
        kind: setns(fd, kind) for kind, fd in args["fds"].items()
    }
    if args.get("bound"):
        seen["bound"] = enter(args["bound"], "net")
    try:
        pidfd = libc.syscall(434, 1, 0)  # pidfd_open(1, 0)
        seen["pidfd"] = code(ctypes.get_errno()) if pidfd < 0 else setns(pidfd, "net")
    except OSError as exc:
        seen["pidfd"] = code(exc.errno)

    def attempt(make, use):
        try:
            s = make()
        except OSError as exc:
            return "socket " + code(exc.errno)
        try:
            use(s)
            return "sent"
        except OSError as exc:
            return code(exc.errno)
        finally:
            s.close()

    packet = b"\x45" + b"\x00" * 19
    seen["raw_icmp"] = attempt(
        lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
        lambda s: s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", ("1.1.1.1", 0)),
    )
    seen["raw_ip"] = attempt(
        lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
        lambda s: s.sendto(packet, ("1.1.1.1", 0)),
    )
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        seen["packet"] = "opened"
        sock.close()
    except OSError as exc:
        seen["packet"] = code(exc.errno)
    seen["interfaces"] = [name for _, name in socket.if_nameindex()]
    bound = {}
    for name in args["outside_interfaces"]:
        bound[name] = attempt(
            lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
            lambda s, name=name: (
                s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, name.encode()),
                s.sendto(b"x", ("1.1.1.1", 53)),
            ),
        )
    seen["by_interface"] = bound
    if args.get("ip"):
        done = subprocess.run(
            [args["ip"], "link", "add", "mcphc-v0", "type", "veth", "peer", "name", "mcphc-v1",
             "netns", "1"],
            capture_output=True, text=True,
        )
        seen["veth"] = done.returncode
    unmounted = {}
    for path in ("/etc/resolv.conf", "/etc/hosts"):
        unmounted[path] = "unmounted" if libc.umount2(path.encode(), 2) == 0 else code(
            ctypes.get_errno()
        )  # MNT_DETACH
    seen["unmounted"] = unmounted
    try:
        seen["lookup"] = sorted({a[4][0] for a in socket.getaddrinfo("example.com", 443)})
    except OSError:
        seen["lookup"] = "error"
    query = b"\x12\x34\x01\x00\x00\x01" + b"\x00" * 6 + b"\x07example\x03com\x00\x00\x01\x00\x01"
    resolvers = {}
    for address in [*args["resolvers"], "8.8.8.8", "1.1.1.1"]:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.settimeout(3)  # an answer could only come from the seal's own name server
        try:
            s.sendto(query, (address, 53))
            reply = s.recv(512)
            resolvers[address] = "rcode %d" % (reply[3] & 0xF)
        except socket.timeout:
            resolvers[address] = "timeout"
        except OSError as exc:
            resolvers[address] = code(exc.errno)
        finally:
            s.close()
    seen["resolvers"] = resolvers
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        unix.connect(args["service"])
        seen["service"] = "connected"
    except OSError as exc:
        seen["service"] = code(exc.errno)
    unix.close()
    print(json.dumps(seen))
    """
)


def _sealable() -> str | None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance.harness.cli", "sealed", "--require"]
        + ["--", "true"],
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    return None if done.returncode == 0 else done.stderr.strip()


@pytest.fixture(scope="module")
def sealable() -> None:
    reason = _sealable()
    if reason:
        pytest.skip(f"this machine cannot seal a network: {reason}")


def _resolvers() -> list[str]:
    try:
        text = Path("/etc/resolv.conf").read_text("utf-8", "replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            found.append(parts[1].split("%")[0])
    return found


def _escape(tmp_path: Path, wrap: list[str] | None = None, bound: str = "") -> dict[str, Any]:
    """Run the probe sealed, as this process's user (root here), with an open handle to each
    of this process's namespaces, the machine's ones, and a UNIX service listening outside."""
    service = tmp_path / "service.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(service))
    listener.listen()
    fds = {kind: os.open(f"/proc/self/ns/{kind}", os.O_RDONLY) for kind in ("net", "user", "mnt")}
    probe = tmp_path / "escape.py"
    probe.write_text(ESCAPES)
    args = {
        "fds": fds,
        "bound": bound,
        "outside_interfaces": [name for _, name in socket.if_nameindex() if name != "lo"],
        "resolvers": _resolvers(),
        "service": str(service),
        "ip": shutil.which("ip") or "",
    }
    try:
        done = subprocess.run(
            [*(wrap or []), sys.executable, "-m", "mcp_host_conformance.harness.cli", "sealed"]
            + ["--require", "--", sys.executable, str(probe), json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=BOUND,
            pass_fds=tuple(fds.values()),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # the service still answers outside: the seal hid it, never touched it
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as outside:
            outside.connect(str(service))
    finally:
        listener.close()
        for fd in fds.values():
            os.close(fd)
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def _entered(seen: dict[str, Any]) -> list[str]:
    """Every attempt that reached a namespace other than the probe's own."""
    found = [
        f"pid {pid} {kind}"
        for pid, kinds in seen["processes"].items()
        for kind, result in kinds.items()
        if result == "entered"
    ]
    found += [f"handle {kind}" for kind, result in seen["handles"].items() if result == "entered"]
    found += [key for key in ("bound", "pidfd") if seen.get(key) == "entered"]
    return found


def test_no_way_out_of_the_sealed_network(sealable, tmp_path):
    seen = _escape(tmp_path)
    assert _entered(seen) == [], seen
    # it did try the processes outside: the machine's init, kthreadd where visible, and the
    # sealed command's own parent (this test process)
    tried = set(seen["processes"])
    assert {"1", str(os.getpid())} <= tried, sorted(tried)[:20]
    assert seen["parent"] == os.getpid()
    # no packet leaves by any socket, no interface but lo, no veth into the machine
    assert seen["interfaces"] == ["lo"]
    for kind in ("raw_icmp", "raw_ip"):
        assert seen[kind] in ("ENETUNREACH", "socket EPERM", "EPERM"), (kind, seen[kind])
    assert seen["packet"] != "opened" or seen["interfaces"] == ["lo"]
    assert all(result != "sent" for result in seen["by_interface"].values()), seen["by_interface"]
    if "veth" in seen:
        assert seen["veth"] != 0, "a veth pair reached the machine's network namespace"
    # what the seal mounted stays: names resolve as it says, nothing else
    assert set(seen["unmounted"].values()) <= {"EPERM", "EINVAL"}, seen["unmounted"]
    assert seen["lookup"] == "error"
    for address, result in seen["resolvers"].items():
        # unreachable, or on loopback only the seal's own name server (example.com: NXDOMAIN)
        assert result in ("ENETUNREACH", "ECONNREFUSED", "EADDRNOTAVAIL", "rcode 3"), (
            address,
            result,
        )
    assert seen["service"] == "ECONNREFUSED"


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare(1)")
def test_a_handle_to_the_machines_network_mounted_inside_does_not_open_it(sealable, tmp_path):
    """The machine's network namespace bind-mounted on a path the host can find (as
    `ip netns add` does under /run/netns): in a mount namespace of this test's own, so the
    machine's mounts stay as they are."""
    handle = tmp_path / "machine-net"
    handle.touch()
    if os.geteuid() != 0:
        pytest.skip("bind-mounting a namespace needs root")
    script = 'mount --bind /proc/$$/ns/net "$0" && exec "$@"'
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(handle)]
    seen = _escape(tmp_path, wrap=wrap, bound=str(handle))
    assert seen["bound"] in ("EPERM", "EACCES"), seen["bound"]
    assert _entered(seen) == [], seen


WITHOUT_USER_NAMESPACES = textwrap.dedent(
    """
    import sys
    from mcp_host_conformance.harness.sandbox import network

    def refused(*args):
        raise network.SealError("unshare(user, net, mount): Operation not permitted (EPERM)")

    network._unshare_user = refused
    sys.exit(network.main(["--require", "--", sys.executable, "-c", sys.argv[1]]))
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="the fallback is root's")
def test_root_sealed_without_a_user_namespace_says_it_would_not_hold(sealable):
    """A machine with no user namespaces (a kernel setting): root still seals the network for
    hosts that do not try to leave, and the run says a root host could."""
    show = (
        "from mcp_host_conformance.harness.sandbox.network import observe; "
        "network = observe(); print(network.mode); print(network.reason)"
    )
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_USER_NAMESPACES, show],
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 0, done.stderr
    mode, reason = done.stdout.splitlines()
    assert mode == "isolated"
    assert reason.startswith("sealed without a user namespace of its own: a host running as root")
    assert "Operation not permitted" in reason
