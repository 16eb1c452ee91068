"""The sealed network: what a process inside can and cannot reach, and how a run records it.

Every check of the inside runs in a child process started through the sandbox's own
command, so this test process is never sealed. Where the machine cannot make a network
namespace at all, those tests are skipped with the sandbox's reason (CI's machine can).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from mcp_host_conformance.harness import cli
from mcp_host_conformance.harness.sandbox import network as sandbox
from mcp_host_conformance.harness.sandbox.remote import RemoteListener
from mcp_host_conformance.mocks.stdio_server import process_state

SANDBOX = [sys.executable, "-m", "mcp_host_conformance.harness.sandbox.network"]
BOUND = 60  # seconds; generous, a loaded machine

PROBE = textwrap.dedent(
    """
    import errno, json, os, socket, sys
    from mcp_host_conformance.harness.sandbox.network import observe

    def connect(address, port):
        s = socket.socket()
        s.settimeout(10)  # a timeout would mean packets went somewhere: the test fails then
        try:
            s.connect((address, port))
            return "connected"
        except socket.timeout:
            return "timeout"
        except OSError as exc:
            return errno.errorcode.get(exc.errno, str(exc.errno))
        finally:
            s.close()

    def resolve(name):
        try:
            return sorted({a[4][0] for a in socket.getaddrinfo(name, 80, socket.AF_INET)})
        except OSError as exc:
            return "error"

    free = socket.socket(); free.bind(("127.0.0.1", 0)); port = free.getsockname()[1]
    free.close()
    network = observe()
    print(json.dumps({
        "network": network.to_json(),
        "uid": os.getuid(),
        "public": connect("1.1.1.1", 443),
        "testnet3": connect("203.0.113.7", 80),
        "private_unlisted": connect("10.9.9.9", 80),
        "loopback_closed": connect("127.0.0.1", port),
        "dns": resolve("example.com"),
        "names": {n: resolve(n) for n in ("mcp.example.invalid", "metadata.example.invalid")},
        "rebinding": [resolve("rebind-probe-%d.example.invalid" % os.getpid()) for _ in range(3)],
        "interfaces": open("/proc/self/net/dev").read().count(":"),
    }))
    """
)


def _sealable() -> str | None:
    """None when this machine can seal; else why not (tried in a child, as the run would)."""
    done = subprocess.run(
        [*SANDBOX, "--require", "--", "true"], capture_output=True, text=True, timeout=BOUND
    )
    return None if done.returncode == 0 else done.stderr.strip()


@pytest.fixture(scope="module")
def sealable() -> None:
    reason = _sealable()
    if reason:
        pytest.skip(f"this machine cannot seal a network: {reason}")


def run_inside(
    *command: str, extra: list[str] | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(extra or []), *SANDBOX, "--require", "--", *command],
        capture_output=True,
        text=True,
        timeout=BOUND,
        env=env,
    )


def test_inside_only_loopback_and_the_suites_addresses_answer(sealable):
    done = run_inside(sys.executable, "-c", PROBE)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["network"]["network"] == sandbox.ISOLATED
    assert seen["network"]["remote_address"] == sandbox.REMOTE_ADDRESS
    private = set(seen["network"]["private_addresses"])
    assert set(sandbox.PRIVATE_ADDRESSES) <= private  # and the IPv6 one, where IPv6 exists
    assert private <= {*sandbox.PRIVATE_ADDRESSES, *sandbox.PRIVATE_ADDRESSES_V6}
    assert seen["network"]["dns"] is True  # the sealed network's name server answers
    assert seen["rebinding"] == [[sandbox.REMOTE_ADDRESS], ["10.0.0.2"], ["10.0.0.2"]]
    assert seen["interfaces"] == 1  # lo only
    # anything else fails at once: no route, or a refusal on loopback; never a timeout
    assert seen["public"] == "ENETUNREACH"
    assert seen["testnet3"] == "ENETUNREACH"
    assert seen["private_unlisted"] == "ENETUNREACH"
    assert seen["loopback_closed"] == "ECONNREFUSED"
    assert seen["dns"] == "error"
    assert seen["names"] == {
        "mcp.example.invalid": [sandbox.REMOTE_ADDRESS],
        "metadata.example.invalid": ["169.254.169.254"],
    }
    assert seen["uid"] == os.getuid()


STUB_SEEN = textwrap.dedent(
    """
    import json, os
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
        children = f.read().split()
    print(json.dumps({
        pid: [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)] for pid in children
    }))
    """
)


def test_the_name_server_holds_none_of_the_commands_output_and_ends_with_it(sealable):
    """The stub serving the sealed network's names is a child of the command (the sandbox
    execs into it): reading the command's output to its end must not wait for the stub."""
    proc = subprocess.Popen(
        [*SANDBOX, "--require", "--", sys.executable, "-c", STUB_SEEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=BOUND)  # EOF: every holder of the pipes closed them
    assert proc.returncode == 0, err
    children = json.loads(out)
    assert len(children) == 1, children  # the stub
    [(stub, fds)] = children.items()
    assert fds == [os.devnull] * 3
    # its parent gone, it ends: waited for (it has no event to wait on here), bounded
    deadline = time.monotonic() + BOUND
    while process_state(int(stub)) == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_state(int(stub)) != "running", "the name server outlived its command"


SLOW_TO_REDIRECT = textwrap.dedent(
    """
    import json, os, socket, time
    from mcp_host_conformance.harness.sandbox import dns_stub
    os.setsid = lambda: time.sleep(0.5)  # the child gets to its redirection late
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    pid = dns_stub.serve_forked(sock)
    print(json.dumps([os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)]))
    """
)


def test_the_name_server_has_let_go_of_the_streams_when_the_command_starts():
    """However late the forked name server redirects its streams, the sandbox goes on (execs
    the command) only after it did: a slow child shows its redirection not done otherwise."""
    done = subprocess.run(
        [sys.executable, "-c", SLOW_TO_REDIRECT],
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [os.devnull] * 3


def test_the_machine_is_left_as_it_was(sealable, tmp_path):
    hosts_before = Path("/etc/hosts").read_bytes()
    # a temp dir of its own: other runs on the machine (`tox p`) seal and unseal meanwhile
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = run_inside("cat", "/etc/hosts", env={**os.environ, "TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    assert "mcp.example.invalid" in done.stdout
    assert Path("/etc/hosts").read_bytes() == hosts_before
    assert list(tmp.iterdir()) == []


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become nobody"
)
def test_an_unprivileged_user_is_sealed_through_a_user_namespace(sealable):
    """Not root: a user namespace configures lo, a nested one gives the uid back."""
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no system python3 for the unprivileged user")
    probe = (
        "import os, socket; s = socket.socket(); s.bind(('192.0.2.1', 0)); "
        "print(os.getuid(), open('/proc/self/net/dev').read().count(':'))"
    )
    # the sandbox is stdlib-only, so the system interpreter runs a copy of it laid out as a
    # checkout (the package finds its parts beside itself), from a directory the unprivileged
    # user can read (pytest's own tmp_path is private)
    root = Path(sandbox.__file__).parents[2]
    parts = ["mcp_host_conformance/__init__.py", "harness/__init__.py"]
    parts += [f"harness/sandbox/{name}" for name in ("__init__.py", "network.py", "dns_stub.py")]
    with tempfile.TemporaryDirectory(prefix="mcphc-sandbox-test-") as where:
        for part in parts:
            (Path(where) / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / part, Path(where) / part)
        for path in [Path(where), *Path(where).rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-m"]
            + ["mcp_host_conformance.harness.sandbox.network", "--require", "--"]
            + [python, "-c", probe],
            capture_output=True,
            text=True,
            timeout=BOUND,
            cwd=where,
        )
    # a Python exception in the reason ("ModuleNotFoundError: ...") is this test's fault
    if done.returncode == 3 and "cannot make" in done.stderr and "Error: " not in done.stderr:
        pytest.skip(f"no unprivileged user namespaces here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["65534", "1"]


def test_require_fails_with_one_line_where_no_namespace_can_be_made(monkeypatch, capsys):
    def refuse() -> None:
        raise sandbox.SealError("unshare(user, net, mount): Operation not permitted (EPERM)")

    monkeypatch.setattr(sandbox, "observe", lambda: sandbox.Network(sandbox.HOST, reason="x"))
    monkeypatch.setattr(sandbox, "_threads", lambda: 1)
    monkeypatch.setattr(sandbox, "_trial", lambda: "unshare: Operation not permitted")
    monkeypatch.setattr(sandbox, "_seal_here", refuse)
    monkeypatch.delenv(sandbox.REASON_ENV, raising=False)
    assert sandbox.main(["--require", "--", "true"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot make a private network namespace" in err
    assert "not permitted" in os.environ[sandbox.REASON_ENV]
    # the run command: --network isolated refuses to go on; auto would run unsealed
    assert cli.main(["run", "--network", "isolated"], sealing=True) == 3
    assert "--network isolated" in capsys.readouterr().err


def test_without_require_running_unsealed_is_said_in_one_line(monkeypatch, capsys):
    """No namespace can be made and no --require: the command runs, never silently open."""
    ran: list[list[str]] = []

    def exec_instead(path: str, argv: list[str]) -> None:
        ran.append(list(argv))

    monkeypatch.setattr(sandbox, "observe", lambda: sandbox.Network(sandbox.HOST, reason="x"))
    monkeypatch.setattr(sandbox, "_threads", lambda: 1)
    monkeypatch.setattr(sandbox, "_trial", lambda: "unshare: Operation\nnot permitted")
    monkeypatch.setattr(sandbox.os, "execvp", exec_instead)
    monkeypatch.delenv(sandbox.REASON_ENV, raising=False)
    sandbox.main(["--", "pytest", "-q"])
    assert ran == [["pytest", "-q"]]
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "cannot make a private network namespace" in err and "Operation not permitted" in err
    assert "'pytest'" in err and "own network" in err
    # the command too
    ran.clear()
    cli.main(["sealed", "--", "pytest", "-q"])
    assert ran == [["pytest", "-q"]]
    assert capsys.readouterr().err.count("\n") == 1


def test_usage_errors():
    assert sandbox.main([]) == 2
    assert sandbox.main(["--bogus", "--", "true"]) == 2
    assert sandbox.main(["--"]) == 2


def test_observe_is_not_fooled_by_the_environment(monkeypatch):
    """A claim in the environment proves nothing: only the namespace's interfaces count."""
    if sandbox.observe().isolated:
        pytest.skip("this test process itself runs sealed")
    monkeypatch.setenv(sandbox.REASON_ENV, "")
    assert sandbox.observe().mode == sandbox.HOST


def test_remote_listener_journals_each_connection_with_its_request_line():
    import socket

    with RemoteListener("127.0.0.1") as remote:
        with socket.create_connection((remote.address, remote.port)) as client:
            client.sendall(b"POST /mcp HTTP/1.1\r\nHost: mcp.example.invalid:1\r\n\r\n")
            client.recv(1)  # the listener closes without answering
        entry = remote.journal.wait_for(kind="connection", timeout=BOUND)[0]
        assert entry.extra["peer"] == "127.0.0.1"
    assert entry.extra["first_line"] == "POST /mcp HTTP/1.1"
    assert entry.extra["host"] == "mcp.example.invalid:1"


def test_remote_listener_cannot_exist_off_the_sealed_network():
    if sandbox.observe().isolated:
        pytest.skip("this test process itself runs sealed")
    with pytest.raises(OSError):
        RemoteListener(sandbox.REMOTE_ADDRESS)


@pytest.mark.parametrize("mode", ["auto", "host"])
def test_a_run_records_its_network_in_the_report(mode, tmp_path, request):
    if mode == "auto":
        request.getfixturevalue("sealable")
    report = tmp_path / "report.json"
    done = subprocess.run(
        ["mcp-host-conformance", "run", "--network", mode, "--report-json", str(report)]
        + ["--", "-q", "-p", "no:randomly", "-k", "test_plain_http"],
        capture_output=True,
        text=True,
        timeout=BOUND * 3,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    environment = json.loads(report.read_text())["environment"]
    if mode == "auto":
        assert environment["network"] == "isolated"
        assert environment["remote_address"] == sandbox.REMOTE_ADDRESS
        assert "network: isolated" in done.stdout
    else:
        assert environment["network"] == "host"
        assert environment["network_reason"] == "not sealed: --network host"
        net1 = json.loads(report.read_text())["requirements"]["NET-1"]
        assert net1["outcome"] == "partial"  # not observed, so never passed
        assert "not observable" in net1["reason"] and "--network host" in net1["reason"]
