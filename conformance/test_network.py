"""NET: connections.

Strategy: each rule is checked by what reaches the mocks. A plain-HTTP URL to a remote host
is only ever given to a host inside the sealed network (docs/network.md), where TEST-NET-1
`192.0.2.1` and a few `.invalid` names are local: a listener there journals any connection,
so "refused, and no connection attempted" is seen for real; outside it, the case is not
observed rather than aiming a host at an address off this machine. Certificates are checked
with a mock whose certificate comes from a CA nobody trusts, beside one from the CA the
client is told to trust. Redirects point at a
live target mock, whose journal must stay empty (so no header can have reached it), at
connect and at call time, for every redirect status. The 1 MiB message limit is checked
with one oversized `tools/list` answer over HTTP (JSON and SSE) and over stdio (one line),
each beside a healthy server.
"""

from __future__ import annotations

import pytest

from mcp_host_conformance.harness.adapter import HttpServer
from mcp_host_conformance.harness.observe import status_text
from mcp_host_conformance.harness.outcomes import check, not_observable
from mcp_host_conformance.harness.remote import RemoteListener
from mcp_host_conformance.harness.specs import one_approved_query, tool_spec
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool

REDIRECTS = (301, 302, 307, 308)


def add_or_refusal(host, server) -> str:
    """Configure `server`; what the user saw (the add's text, or the error it raised).

    A client may refuse a URL when it is added, or when it starts; either is a refusal."""
    try:
        return host.add(server).text or ""
    except AssertionError:  # the harness's own bound: the client hangs
        raise
    except Exception as exc:  # noqa: BLE001 - the adapter's way of saying "refused"
        return str(exc) or type(exc).__name__


# ---- NET-1 ------------------------------------------------------------------------------------

# Only the remote listener's address and names that the sealed network maps to it: none of
# them leaves this machine there (docs/network.md).
REMOTE_HOSTS = {
    "testnet": None,  # the TEST-NET-1 address itself
    "invalid-name": "mcp.example.invalid",
    "lookalike-localhost": "localhost.example.invalid",  # not localhost
    "lookalike-loopback": "127.0.0.1.example.invalid",  # not a loopback address
}


@pytest.mark.requirements("NET-1")
def test_plain_http_to_a_remote_host_is_refused_at_once(host, http_mock, case, network):
    """Remote URLs must use HTTPS; plain HTTP is accepted only for `localhost` and loopback
    addresses. A plain-HTTP URL to any other host is refused with a reason naming HTTPS, and
    no connection is attempted."""
    if not network.isolated:
        not_observable(
            "a plain-HTTP URL to a remote host is only given to a host inside the sealed "
            f"network, so nothing off this machine is contacted ({network.reason})"
        )
    remote = RemoteListener(network.remote_address)
    case.mocks.append(remote)
    urls = {name: remote.url(hostname) for name, hostname in REMOTE_HOSTS.items()}
    refused_at_add = {
        name: add_or_refusal(host, HttpServer(name=name, url=url)) for name, url in urls.items()
    }
    healthy = http_mock(tool_spec("local"))
    host.add_http("local", healthy)
    running = host.start()
    running.stop()

    connections = remote.journal.entries(kind="connection")
    check(
        not connections,
        ids="NET-1",
        expected="no connection attempted to the remote host of a plain-HTTP URL",
        actual=f"{len(connections)} connection(s) to {network.remote_address}: "
        + "; ".join(
            f"{e.extra.get('first_line', '')!r} Host {e.extra.get('host', '')!r}"
            for e in connections[:4]
        ),
    )
    for name, url in urls.items():
        status = running.status(name)
        if status is None:
            check(
                "https" in refused_at_add[name].lower(),
                ids="NET-1",
                expected=f"{url} refused with a reason naming HTTPS (at add or as its status)",
                actual="no status line, and the add did not refuse it naming HTTPS",
            )
            continue
        reason = status.reason or status.line
        check(
            not status.connected and "https" in reason.lower(),
            ids="NET-1",
            expected=f"{url} reported unavailable with a reason naming HTTPS",
            actual=status_text(status),
        )
    local = running.status("local")
    check(
        local is not None and local.connected,
        ids="NET-1",
        expected="plain HTTP to 127.0.0.1 accepted (control)",
        actual=status_text(local),
    )


@pytest.mark.requirements("NET-1")
def test_plain_http_to_loopback_names_is_accepted(host, http_mock, model):
    """Plain HTTP is accepted for `localhost` and loopback addresses (127.0.0.0/8, `::1`)."""
    by_address = http_mock(tool_spec("by-address"))
    by_name = http_mock(tool_spec("by-name"))
    host.add_http("by-address", by_address)
    host.add_http("by-name", by_name, url=by_name.url.replace("127.0.0.1", "localhost"))
    running, turn = one_approved_query(host, model, "by-name")

    for name in ("by-address", "by-name"):
        status = running.status(name)
        check(
            status is not None and status.connected,
            ids="NET-1",
            expected=f"server {name} (plain HTTP to loopback) connected",
            actual=status_text(status),
        )
    check(
        [c.status for c in turn.calls] == ["completed"]
        and by_name.journal.count("tools/call") == 1,
        ids="NET-1",
        expected="a call over plain HTTP to localhost completes",
        actual=(
            f"statuses {[c.status for c in turn.calls]}, "
            f"{by_name.journal.count('tools/call')} tools/call"
        ),
    )


# ---- NET-2 ------------------------------------------------------------------------------------


@pytest.mark.requirements("NET-2")
def test_certificates_are_verified(host, http_mock, model):
    """HTTPS certificates are verified: an untrusted CA's certificate is refused; the CA the
    client is told to trust works."""
    trusted = http_mock(tool_spec("trusted"), tls="trusted")
    untrusted = http_mock(tool_spec("untrusted"), tls="untrusted")
    host.add_http("trusted", trusted)
    host.add_http("untrusted", untrusted)  # its ca_file is the trusted CA: still not its issuer
    running, turn = one_approved_query(host, model, "trusted")

    bad = running.status("untrusted")
    check(
        bad is not None and not bad.connected,
        ids="NET-2",
        expected="the server with a certificate from an untrusted CA reported unavailable",
        actual=status_text(bad),
    )
    reached = untrusted.journal.entries(kind="http")
    check(
        not reached,
        ids="NET-2",
        expected="no HTTP request completed to the untrusted server (the TLS handshake refused)",
        actual=f"{len(reached)} request(s): {untrusted.journal.methods()}",
    )
    good = running.status("trusted")
    check(
        good is not None and good.connected,
        ids="NET-2",
        expected="the server with a certificate from the CA the client was given connects",
        actual=status_text(good),
    )
    check(
        [c.status for c in turn.calls] == ["completed"],
        ids="NET-2",
        expected="a call over verified HTTPS completes",
        actual=f"statuses {[c.status for c in turn.calls]}",
    )


@pytest.mark.requirements("NET-2")
def test_certificate_not_trusted_without_its_ca(host, http_mock):
    """HTTPS certificates are verified: without the CA,
    the throwaway CA's certificate is refused."""
    server = http_mock(tool_spec("private-ca"), tls="trusted")
    host.add_http("private-ca", server)
    running = host.start(ca_file=None)
    running.stop()
    status = running.status("private-ca")
    check(
        status is not None and not status.connected and not server.journal.entries(kind="http"),
        ids="NET-2",
        expected=(
            "a certificate from a CA the client was not given: unavailable, no request completed"
        ),
        actual=(
            f"{status_text(status)}; "
            f"{len(server.journal.entries(kind='http'))} request(s) reached it"
        ),
    )


# ---- NET-3 ------------------------------------------------------------------------------------


@pytest.mark.requirements("NET-3", "CRED-1")
def test_redirect_at_connect_is_not_followed(host, http_mock, secrets):
    """Redirects are never followed, at connect or at call time; headers never reach the
    redirect target."""
    target = http_mock(tool_spec("target"))
    for code in REDIRECTS:
        token = secrets.new(f"redirected-{code}", special=True)
        mock = http_mock(
            tool_spec(
                f"r{code}", redirect_status=code, redirect_to=target.url, redirect_at="initialize"
            )
        )
        host.add_http(f"r{code}", mock, headers={"X-Api-Key": token})
    running = host.start()
    running.stop()

    followed = target.journal.entries(kind="http")
    leaked = secrets.found_in_journal(target.journal, "redirect target")
    check(
        not followed,
        ids="NET-3",
        expected=(
            "the redirect target's journal empty: "
            "no redirect (301, 302, 307, 308) followed at connect"
        ),
        actual=(
            f"{len(followed)} request(s) reached the target; "
            f"headers of: {', '.join(leaked) or 'none'}"
        ),
    )
    for code in REDIRECTS:
        status = running.status(f"r{code}")
        check(
            status is not None and not status.connected,
            ids="NET-3",
            expected=f"the server answering initialize with HTTP {code} reported unavailable",
            actual=status_text(status),
        )


@pytest.mark.requirements("NET-3", "CRED-1")
def test_redirect_at_call_is_not_followed(host, http_mock, model, secrets):
    """Redirects are never followed, at connect or at call time; headers never reach the
    redirect target."""
    target = http_mock(tool_spec("target"))
    mocks = {}
    for code in REDIRECTS:
        token = secrets.new(f"redirected-{code}", special=True)
        mocks[code] = http_mock(
            tool_spec(
                f"r{code}", redirect_status=code, redirect_to=target.url, redirect_at="tools/call"
            )
        )
        host.add_http(f"r{code}", mocks[code], headers={"X-Api-Key": token})
    model.script(
        [
            Step.calls(
                [
                    Step.call(server=f"r{code}", tool="query", arguments={"n": code})
                    for code in REDIRECTS
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    connected = [
        code for code in REDIRECTS if getattr(running.status(f"r{code}"), "connected", False)
    ]
    check(
        connected == list(REDIRECTS),
        ids="NET-3",
        expected="the four servers (redirecting only tools/call) connect",
        actual=f"connected: {connected}",
    )
    turn = running.ask("call all four", approve="y")
    running.stop()

    sent = {code: mocks[code].journal.count("tools/call") for code in REDIRECTS}
    check(
        all(n == 1 for n in sent.values()),
        ids="NET-3",
        expected="each redirecting server received its one tools/call",
        actual=f"tools/call per redirect status: {sent}",
    )
    followed = target.journal.entries(kind="http")
    leaked = secrets.found_in_journal(target.journal, "redirect target")
    check(
        not followed,
        ids="NET-3",
        expected="the redirect target's journal empty: no redirect followed at call time",
        actual=(
            f"{len(followed)} request(s) reached the target; "
            f"headers of: {', '.join(leaked) or 'none'}"
        ),
    )
    completed = [c.tool for c in turn.calls if c.status == "completed"]
    check(
        not completed,
        ids="NET-3",
        expected="no redirected call reported completed",
        actual=f"completed: {completed}",
    )


# ---- NET-4 ------------------------------------------------------------------------------------


@pytest.mark.requirements("NET-4")
def test_oversized_discovery_over_http_makes_the_server_unavailable(host, http_mock):
    """Each protocol message or HTTP response is limited to 1 MiB; over that during
    discovery the server is unavailable (JSON and SSE responses)."""
    json_big = http_mock(
        ServerSpec(
            name="big-json",
            tools=[Tool("query")],
            response_mode="json",
            misbehaviour=Misbehaviour(oversize_at="tools/list"),
        )
    )
    sse_big = http_mock(
        ServerSpec(
            name="big-sse",
            tools=[Tool("query")],
            response_mode="sse",
            misbehaviour=Misbehaviour(oversize_at="tools/list"),
        )
    )
    healthy = http_mock(tool_spec("healthy"))
    host.add_http("big-json", json_big)
    host.add_http("big-sse", sse_big)
    host.add_http("healthy", healthy)
    running = host.start()
    running.stop()

    for name, mock in (("big-json", json_big), ("big-sse", sse_big)):
        status = running.status(name)
        check(
            mock.journal.count("tools/list") >= 1,
            ids="NET-4",
            expected=f"server {name} was asked for its tools (so its oversized answer was sent)",
            actual=f"methods received: {mock.journal.methods()}",
        )
        check(
            status is not None and not status.connected,
            ids="NET-4",
            expected=f"server {name}, whose tools/list answer is over 1 MiB, reported unavailable",
            actual=status_text(status),
        )
    good = running.status("healthy")
    check(
        good is not None and good.connected,
        ids="NET-4",
        expected="the healthy server beside them connects",
        actual=status_text(good),
    )


@pytest.mark.requirements("NET-4")
def test_oversized_line_over_stdio_makes_the_server_unavailable(host, stdio_mock):
    """Each protocol message is limited to 1 MiB: one stdio line over 1 MiB during discovery
    makes the server unavailable."""
    big = stdio_mock(
        ServerSpec(
            name="big-line",
            tools=[Tool("query")],
            misbehaviour=Misbehaviour(oversize_at="tools/list"),
        )
    )
    healthy = stdio_mock(tool_spec("healthy"))
    host.add_stdio("big-line", big)
    host.add_stdio("healthy", healthy)
    running = host.start()
    running.stop()

    oversized = big.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "oversized"
    )
    check(
        bool(oversized),
        ids="NET-4",
        expected="the stdio server was asked for its tools (so it wrote its line over 1 MiB)",
        actual=f"methods received: {big.journal.methods()}",
    )
    status = running.status("big-line")
    check(
        status is not None and not status.connected,
        ids="NET-4",
        expected="the stdio server whose tools/list line is over 1 MiB reported unavailable",
        actual=status_text(status),
    )
    good = running.status("healthy")
    check(
        good is not None and good.connected,
        ids="NET-4",
        expected="the healthy stdio server beside it connects",
        actual=status_text(good),
    )
