"""NET: connections.

Strategy: each rule is checked by what reaches the mocks. A plain-HTTP URL to a remote host
is only ever given to a host inside the sealed network (docs/network.md), where TEST-NET-1
`192.0.2.1` and a few `.invalid` names are local: a listener there journals any connection,
so "refused, and no connection attempted" is seen for real; outside it, the case is not
observed rather than aiming a host at an address off this machine. The remote URLs are the
forms a host's check gets wrong: the address, names that only look like loopback, and an
upper-case scheme (`HTTP://`); the loopback forms it must accept are `localhost`,
127.0.0.1, another 127.x address and `[::1]`, each with a call through it. Certificates
are checked one fault at a time, beside a trusted one that works: a CA nobody trusts, a
trusted CA's certificate for another host name, and one that has expired. Redirects are
checked for every status a library treats differently (301, 302, 303, 307, 308), at
initialize, tools/list and tools/call, to another origin (a live target mock whose journal
must stay empty, so no header can have reached it) and to the same origin (what the MCP
SDK follows: the redirecting mock must never see a request for the new location). The
1 MiB message limit is checked on both sides of the bound, per transport (an HTTP JSON
body, one SSE event, one stdio line) during discovery: a message 64 bytes under 1 MiB is
accepted; one byte over is refused, at initialize in ASCII and at tools/list in three-byte
characters (so a host counting characters, a third of the bytes, is caught).
"""

from __future__ import annotations

import pytest

from mcp_host_conformance.harness.cases.observe import status_text
from mcp_host_conformance.harness.cases.specs import one_approved_query, tool_spec
from mcp_host_conformance.harness.contract.adapter import HttpServer
from mcp_host_conformance.harness.sandbox.remote import RemoteListener
from mcp_host_conformance.harness.verdicts.outcomes import check, not_observable, precondition
from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool

REDIRECTS = (301, 302, 303, 307, 308)
MIB = 1024 * 1024


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


def remote_urls(remote: RemoteListener) -> dict[str, str]:
    """The plain-HTTP URLs to the remote listener: by address and names, and once with the
    scheme in upper case (`HTTP://` is plain HTTP too; a check for "http://" misses it)."""
    urls = {name: remote.url(hostname) for name, hostname in REMOTE_HOSTS.items()}
    urls["upper-case-scheme"] = "HTTP" + remote.url()[len("http") :]
    return urls


@pytest.mark.mcphc_requirements("NET-1")
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
    urls = remote_urls(remote)
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


LOOPBACK_FORMS = {
    "by-address": ("127.0.0.1", None),
    "by-name": ("127.0.0.1", "localhost"),
    "other-127": ("127.0.0.2", None),  # 127.0.0.0/8 is loopback, not only 127.0.0.1
    "ipv6": ("::1", None),
}


@pytest.mark.mcphc_requirements("NET-1")
def test_plain_http_to_loopback_forms_is_accepted(host, model, case):
    """Plain HTTP is accepted for `localhost` and loopback addresses (127.0.0.0/8, `::1`):
    each form connects and a call through it completes."""
    mocks = {}
    for name, (address, hostname) in LOOPBACK_FORMS.items():
        mock = HttpMock(tool_spec(name), address=address)
        case.mocks.append(mock)
        mock.start()
        mocks[name] = mock
        url = mock.url.replace("127.0.0.1", hostname) if hostname else mock.url
        host.add_http(name, mock, url=url)
    model.script(
        [
            Step.calls([Step.call(server=name, tool="query", arguments={}) for name in mocks]),
            Step.text("done"),
        ]
    )
    running = host.start()
    turn = running.ask("use them all", approve="y", offer_rule="NET-1")  # accepted: offered
    running.stop()

    for name, mock in mocks.items():
        status = running.status(name)
        check(
            status is not None and status.connected,
            ids="NET-1",
            expected=f"server {name} (plain HTTP to {mock.url}) connected",
            actual=status_text(status),
        )
    calls = {name: mock.journal.count("tools/call") for name, mock in mocks.items()}
    statuses = [c.status for c in turn.calls]
    check(
        all(n == 1 for n in calls.values()) and statuses == ["completed"] * len(mocks),
        ids="NET-1",
        expected="a call over plain HTTP to each loopback form completes",
        actual=f"tools/call per server {calls}, statuses {statuses}",
    )


# ---- NET-2 ------------------------------------------------------------------------------------


# One fault each; the CA the client is given is the trusted one for all of them.
BAD_CERTIFICATES = {
    "untrusted": "from a CA nobody trusts",
    "wrong-host": "from the trusted CA, for another host name",
    "expired": "from the trusted CA, expired",
}


@pytest.mark.mcphc_requirements("NET-2")
def test_certificates_are_verified(host, http_mock, model):
    """HTTPS certificates are verified: a certificate from an untrusted CA, one for another
    host name and an expired one are each refused; the CA the client is told to trust works."""
    trusted = http_mock(tool_spec("trusted"), tls="trusted")
    bad = {name: http_mock(tool_spec(name), tls=name) for name in BAD_CERTIFICATES}
    host.add_http("trusted", trusted)
    for name, mock in bad.items():
        host.add_http(name, mock)  # its ca_file is the trusted CA's
    running, turn = one_approved_query(host, model, "trusted")

    for name, mock in bad.items():
        status = running.status(name)
        reached = mock.journal.entries(kind="http")
        check(
            status is not None and not status.connected and not reached,
            ids="NET-2",
            expected=(
                f"the server with a certificate {BAD_CERTIFICATES[name]} reported unavailable, "
                "no HTTP request completed to it (the TLS handshake refused)"
            ),
            actual=f"{status_text(status)}; {len(reached)} request(s): {mock.journal.methods()}",
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


@pytest.mark.mcphc_requirements("NET-2")
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

CONNECT_STEPS = ("initialize", "tools/list")


def followed(mock, location: str) -> list[str]:
    """Requests a redirecting mock received for the location it redirected to (same origin)."""
    return [
        f"{e.http_method} {e.path}"
        for e in mock.journal.entries(kind="http")
        if (e.path or "").startswith(location)
    ]


@pytest.mark.mcphc_requirements("NET-3", "CRED-1")
def test_redirect_at_connect_is_not_followed(host, http_mock, secrets):
    """Redirects are never followed, at connect or at call time; headers never reach the
    redirect target (every redirect status, at initialize and at tools/list)."""
    target = http_mock(tool_spec("target"))
    names = []
    for at in CONNECT_STEPS:
        for code in REDIRECTS:
            name = f"r{code}-{at.replace('/', '-')}"
            token = secrets.new(f"redirected-{name}", special=True)
            mock = http_mock(
                tool_spec(name, redirect_status=code, redirect_to=target.url, redirect_at=at)
            )
            host.add_http(name, mock, headers={"X-Api-Key": token})
            names.append((name, code, at, mock))
    running = host.start()
    running.stop()

    reached = target.journal.entries(kind="http")
    leaked = secrets.found_in_journal(target.journal, "redirect target")
    check(
        not reached,
        ids="NET-3",
        expected=(
            "the redirect target's journal empty: no redirect "
            f"({', '.join(map(str, REDIRECTS))}) followed at initialize or tools/list"
        ),
        actual=(
            f"{len(reached)} request(s) reached the target; "
            f"headers of: {', '.join(leaked) or 'none'}"
        ),
    )
    for name, code, at, mock in names:
        status = running.status(name)
        check(
            mock.journal.count(at) >= 1 and status is not None and not status.connected,
            ids="NET-3",
            expected=f"the server answering {at} with HTTP {code} reported unavailable",
            actual=f"{status_text(status)} (methods received: {mock.journal.methods()})",
        )


@pytest.mark.mcphc_requirements("NET-3", "CRED-1")
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
        expected=f"the {len(REDIRECTS)} servers (redirecting only tools/call) connect",
        actual=f"connected: {connected}",
    )
    turn = running.ask("call them all", approve="y")
    running.stop()

    sent = {code: mocks[code].journal.count("tools/call") for code in REDIRECTS}
    check(
        all(n == 1 for n in sent.values()),
        ids="NET-3",
        expected="each redirecting server received its one tools/call",
        actual=f"tools/call per redirect status: {sent}",
    )
    reached = target.journal.entries(kind="http")
    leaked = secrets.found_in_journal(target.journal, "redirect target")
    check(
        not reached,
        ids="NET-3",
        expected="the redirect target's journal empty: no redirect followed at call time",
        actual=(
            f"{len(reached)} request(s) reached the target; "
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


SAME_ORIGIN = "/moved"  # a relative Location: the same host and port, another path


@pytest.mark.mcphc_requirements("NET-3")
def test_same_origin_redirect_is_not_followed(host, http_mock, model):
    """Redirects are never followed, at connect or at call time: also a redirect to another
    path of the same server (the origin an HTTP library, or the MCP SDK, follows freely),
    for every redirect status, at initialize, tools/list and tools/call."""
    mocks = {}
    # The servers called first: the unavailable ones after them must not decide the offer.
    for at in ("tools/call", *CONNECT_STEPS):
        for code in REDIRECTS:
            name = f"s{code}-{at.replace('/', '-')}"
            mocks[name] = (
                at,
                http_mock(
                    tool_spec(
                        name, redirect_status=code, redirect_to=f"{SAME_ORIGIN}/mcp", redirect_at=at
                    )
                ),
            )
            host.add_http(name, mocks[name][1])
    at_call = [name for name, (at, _) in mocks.items() if at == "tools/call"]
    model.script(
        [
            Step.calls([Step.call(server=name, tool="query", arguments={}) for name in at_call]),
            Step.text("done"),
        ]
    )
    running = host.start()
    turn = running.ask("call them", approve="y")
    running.stop()

    follows = [
        f"{req} at {name}" for name, (_, m) in mocks.items() for req in followed(m, SAME_ORIGIN)
    ]
    check(
        not follows,
        ids="NET-3",
        expected=f"no request for the redirect's location ({SAME_ORIGIN}/mcp, same origin)",
        actual="; ".join(follows[:6]),
    )
    for name, (at, _) in mocks.items():
        if at == "tools/call":
            continue
        status = running.status(name)
        check(
            status is not None and not status.connected,
            ids="NET-3",
            expected=f"the server redirecting {at} to its own {SAME_ORIGIN}/mcp unavailable",
            actual=status_text(status),
        )
    sent = {name: mocks[name][1].journal.count("tools/call") for name in at_call}
    completed = [c.tool for c in turn.calls if c.status == "completed"]
    check(
        all(n == 1 for n in sent.values()) and not completed,
        ids="NET-3",
        expected="each server redirecting tools/call got its call, and none reported completed",
        actual=f"tools/call per server {sent}; completed: {completed}",
    )


# ---- NET-4 ------------------------------------------------------------------------------------

NEAR = MIB - 64  # accepted whatever framing a transport adds (SSE `data: `, a newline)
OVER = MIB + 1  # refused whatever a host counts, if it counts bytes
WIDE = "\u20ac"  # three bytes in UTF-8: a message of OVER bytes is about 350 000 characters


def sized_spec(name: str, mode: str, at: str | None, size: int, fill: str = "x") -> ServerSpec:
    """A server whose answer to `at` is one message of exactly `size` bytes (UTF-8)."""
    return ServerSpec(
        name=name,
        tools=[Tool("query", "Looks something up.")],
        response_mode=mode if mode != "stdio" else "sse",
        misbehaviour=Misbehaviour(oversize_at=at, oversize_bytes=size, oversize_fill=fill),
    )


@pytest.mark.mcphc_requirements("NET-4")
@pytest.mark.parametrize("transport", ["json", "sse", "stdio"])
def test_message_limit_during_discovery(transport, host, http_mock, stdio_mock):
    """Each protocol message or HTTP response is limited to 1 MiB; over that during
    discovery the server is unavailable. In UTF-8 bytes, on both sides of the bound: a
    message 64 bytes under 1 MiB is accepted, one byte over is refused (in ASCII at
    initialize, in three-byte characters at tools/list), as an HTTP JSON body, one SSE
    event or one stdio line."""
    servers = {
        "near": sized_spec("near", transport, "tools/list", NEAR),
        "over-initialize": sized_spec("over-initialize", transport, "initialize", OVER),
        "over-wide": sized_spec("over-wide", transport, "tools/list", OVER, WIDE),
    }
    mocks = {}
    for name, spec in servers.items():
        if transport == "stdio":
            mocks[name] = stdio_mock(spec)
            host.add_stdio(name, mocks[name])
        else:
            mocks[name] = http_mock(spec)
            host.add_http(name, mocks[name])
    # Reading a megabyte is not what the connect timeout is about: the start's unhurried
    # default (`timeouts.wait`) gives a loaded machine room for it.
    running = host.start()
    running.stop()

    for name, mock in mocks.items():
        sent = mock.journal.entries(
            kind="event", where=lambda e: e.extra.get("event") == "oversized"
        )
        precondition(
            bool(sent),
            ids="DISC-1",
            expected=f"server {name} was asked (so its sized message was sent)",
            actual=f"methods received: {mock.journal.methods()}",
        )
    near = running.status("near")
    check(
        near is not None and near.connected,
        ids="NET-4",
        expected=f"the server whose tools/list answer is {NEAR} bytes (just under 1 MiB) connects",
        actual=status_text(near),
    )
    for name, what in (
        ("over-initialize", f"initialize answer is {OVER} bytes"),
        ("over-wide", f"tools/list answer is {OVER} bytes of mostly three-byte characters"),
    ):
        status = running.status(name)
        check(
            status is not None and not status.connected,
            ids="NET-4",
            expected=f"the server whose {what} ({transport}) reported unavailable",
            actual=status_text(status),
        )
