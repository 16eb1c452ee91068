"""An unsealed run (`--network host`) sends nothing off the machine.

A whole run against the reference host with every profile (the official OAuth scenarios
among them) runs unsealed inside a network namespace of this test's own that plays the
machine: only `lo`, and a `/etc/resolv.conf` naming a recording name server on it. The run
must ask that resolver nothing (the scenarios that would give a host a name off the machine
are not observable unsealed; no other is given one). And the OAuth browser stand-in goes only
to addresses the kernel says are this machine's, looking no name up unsealed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

from mcp_host_conformance.harness.oauth import browser
from mcp_host_conformance.harness.oauth.official_client import OFF_MACHINE, framework
from mcp_host_conformance.harness.sandbox import network as sandbox

BOUND = 600.0  # seconds for a whole run of the suite, on a loaded machine

# This namespace plays the machine: lo up, its resolver a recorder on 127.0.0.1:53 that
# answers NXDOMAIN to every question and writes each name down; then the run, unsealed.
MACHINE = textwrap.dedent(
    """
    import json, socket, subprocess, sys, threading
    from mcp_host_conformance.harness.sandbox import dns_stub, network

    network._configure_loopback(())
    resolv, queries, argv = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    subprocess.run(["mount", "--bind", resolv, "/etc/resolv.conf"], check=True)
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 53))
    asked = []

    def serve():
        rebinder = dns_stub.Rebinder()
        while True:
            query, peer = server.recvfrom(512)
            parsed = dns_stub._name(query, 12)
            asked.append(parsed[0] if parsed else repr(query[:40]))
            answer = dns_stub.answer(query, rebinder)
            if answer is not None:
                server.sendto(answer, peer)

    threading.Thread(target=serve, daemon=True).start()
    done = subprocess.run(argv)
    with open(queries, "w") as f:
        json.dump(asked, f)
    sys.exit(done.returncode)
    """
)


def test_an_unsealed_run_asks_the_machines_resolver_nothing(tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        pytest.skip("playing the machine in a namespace of its own needs root and unshare(1)")
    if framework() is None:
        pytest.skip("the official framework is not installed (npm ci in tests/official/client)")
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    queries, report = tmp_path / "queries.json", tmp_path / "report.json"
    script = tmp_path / "machine.py"
    script.write_text(MACHINE)
    run = [
        sys.executable, "-m", "mcp_host_conformance.harness.cli", "run", "--network", "host",
        "--client", "reference-profiles", "-n", "2", "--report-json", str(report),
        "--", "-p", "no:randomly", "-p", "no:cacheprovider",
    ]  # fmt: skip
    done = subprocess.run(
        ["unshare", "--net", "--mount", sys.executable, str(script)]
        + [str(resolv), str(queries), json.dumps(run)],
        capture_output=True,
        text=True,
        timeout=BOUND,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert json.loads(queries.read_text()) == []
    data = json.loads(report.read_text())
    assert data["environment"]["network"] == "host"
    oauth = data["requirements"]["OAUTH-1"]
    assert oauth["outcome"] == "partial"
    cases = {case["id"]: case for case in data["cases"]}
    for scenario, name in OFF_MACHINE.items():
        case = cases[f"test_profiles_oauth::test_official_auth_scenario[{scenario}]"]
        assert case["outcome"] == "not_observed" and name in case["reason"], case


def test_the_browser_asks_whether_an_address_is_local(monkeypatch):
    """Unsealed: an address this machine does not have is refused before any connection,
    whatever list of sealed addresses it is on; a name is never looked up."""
    if sandbox.observe().isolated:
        pytest.skip("this test process itself runs sealed")
    opened: list[str] = []
    looked_up: list[str] = []
    real_open = urllib.request.OpenerDirector.open

    def record_open(self, request, *args, **kwargs):
        opened.append(getattr(request, "full_url", str(request)))
        return real_open(self, request, *args, **kwargs)

    def record_lookup(host, *args, **kwargs):
        looked_up.append(str(host))
        raise socket.gaierror(socket.EAI_NONAME, "not looked up in this test")

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", record_open)
    monkeypatch.setattr(socket, "getaddrinfo", record_lookup)
    for address in (sandbox.REMOTE_ADDRESS, *sandbox.PRIVATE_ADDRESSES, "203.0.113.7"):
        if sandbox.is_local(address):
            continue  # this machine has it: local indeed
        assert not browser._local(address), address
        assert browser.visit(f"http://{address}:9/authorize?code=x") == 0
    for name in ("mcp.example.invalid", "conformance-test.local", "example.com"):
        assert browser.visit(f"https://{name}/authorize") == 0
    assert opened == [] and looked_up == []
    assert browser._local("127.0.0.1") and browser._local("[::1]") and browser._local("localhost")


def test_a_local_page_is_still_followed(tmp_path):
    """The stand-in still does its job on this machine: a loopback redirect to the callback."""
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from threading import Thread

    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if self.path.startswith("/authorize"):
                self.send_response(302)
                self.send_header("Location", "/callback?code=c")
            else:
                self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        assert browser.visit(f"http://localhost:{port}/authorize") == 200
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["/authorize", "/callback?code=c"]


SEALED_PROBE = (
    "from mcp_host_conformance.harness.oauth import browser; "
    "print([browser._local(h) for h in ('192.0.2.1', 'mcp.example.invalid', '10.0.0.2', "
    "'203.0.113.7', 'example.com')])"
)


def test_sealed_the_suites_addresses_and_names_are_local(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance.harness.cli", "sealed", "--require", "--"]
        + [sys.executable, "-c", SEALED_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    if done.returncode == 3:
        pytest.skip(f"this machine cannot seal a network: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[True,", "True,", "True,", "False,", "False]"]


def test_the_off_machine_table_names_what_the_framework_gives():
    """OFF_MACHINE holds each name of the installed framework's scenarios: a newer framework
    naming another host off this machine shows up here."""
    cli = framework()
    if cli is None:
        pytest.skip("the official framework is not installed")
    text = Path(cli[-1]).read_text("utf-8", "replace")
    for scenario, name in OFF_MACHINE.items():
        assert f"`{scenario}`" in text and name in text, scenario
