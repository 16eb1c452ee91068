"""Monitors of where a host's requests go: no OAuth flow without the OAuth profile (CRED-6),
no request completed over a certificate nobody trusts (NET-2), no redirect followed
(NET-3); and what a host says of a server that rejects its credentials (CRED-4).

Strategy: every HTTP mock journals each request it parses, so a request that reached a mock
it should not have is plain to see: an OAuth discovery path, any request at all at a mock
whose certificate the host must refuse, a request at a server that only a redirect named.
Whether the host opened a browser is what the run's stand-in browsers logged during the case
(the plugin hands it over: this room does not reach into the OAuth room).
"""

from __future__ import annotations

from collections.abc import Iterator

from mcp_host_conformance.harness.cases.hostrun import LOOPBACK_ALLOWANCE, PRIVATE_REFUSAL
from mcp_host_conformance.harness.cases.observe import oauth_reason_problems
from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.harness.verdicts.safe_text import visible
from mcp_host_conformance.mocks.authorization_server import is_oauth_path

UNTRUSTED_TLS = ("untrusted", "wrong-host", "expired")


def _mocks(observed: Observed) -> Iterator[tuple[str, object, list[object]]]:
    for served in observed.served:
        yield served.label, served.mock, list(served.entries)
    for mock in observed.other_mocks:
        try:
            entries = list(mock.journal.entries())
        except Exception:  # noqa: BLE001 - an unreadable journal holds nothing to judge
            continue
        yield type(mock).__name__, mock, entries


@monitor(
    "rejection-says-no-oauth",
    "CRED-4",
    "every status a host gave a server that rejects the credentials at connect (401 or 403 "
    "to every request) says it is unavailable, with a reason that says OAuth is not "
    "supported and suggests a static header such as an API key",
)
def rejection_says_no_oauth(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # CRED-4 asks for this wording, so the wording is what is watched, in whatever case or
    # generated session a server rejects every request (a server that rejects one wrong key
    # among right ones, or only at a call, is its case's to judge)
    rejecting = [
        s
        for s in observed.served
        if s.names
        and not s.stdio
        and s.mock.spec.misbehaviour.reject_status in (401, 403)
        and s.mock.spec.misbehaviour.reject_at in ("*", "initialize")
    ]
    if not rejecting:
        return
    for running in observed.runs:
        for served in rejecting:
            for name in served.names:
                status = running.status(name)
                if status is None:
                    continue  # not configured in that session (removed), or not told: its case
                if status.connected:
                    problem = "reported connected"
                else:
                    problem = ", and ".join(oauth_reason_problems(status.reason or status.line))
                if problem:
                    yield self.finding(
                        "CRED-4",
                        f"{served.label} (HTTP {served.mock.spec.misbehaviour.reject_status} "
                        "at connect) reported unavailable: OAuth is not supported, use a "
                        "static header such as an API key",
                        f"its status {visible(status.line[:160])!r}: {problem}",
                    )
                    return


@monitor(
    "no-oauth-flow",
    "CRED-6",
    "no mock received an OAuth request (metadata discovery, registration, authorization, "
    "token) and no browser was opened",
    unless=("oauth",),
)
def no_oauth_flow(self: Monitor, observed: Observed) -> Iterator[Finding]:
    steps = []
    for label, _mock, entries in _mocks(observed):
        for entry in entries:
            path = getattr(entry, "path", None)
            if getattr(entry, "kind", None) == "http" and path and is_oauth_path(path):
                steps.append(f"{label}: {getattr(entry, 'http_method', '')} {path[:80]}")
    steps += [f"a browser opened: {line[:120]}" for line in observed.browsers_opened]
    if steps:
        yield self.finding(
            "CRED-6",
            "a host without OAuth starts no OAuth flow",
            "; ".join(steps[:4]),
        )


@monitor(
    "untrusted-certificate-refused",
    "NET-2",
    "no request was completed to a TLS mock whose certificate is untrusted, for another "
    "host, or expired",
)
def untrusted_certificate_refused(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for served in observed.served:
        tls = getattr(served.mock, "tls", None)
        if tls in UNTRUSTED_TLS and served.names and served.reached:
            yield self.finding(
                "NET-2",
                f"{served.label}'s certificate ({tls}) is refused: nothing reaches it",
                f"it received {len(served.reached)} journal entries over TLS",
            )


@monitor(
    "redirect-not-followed",
    "NET-3",
    "a server that only a redirect named (never configured) received nothing",
)
def redirect_not_followed(self: Monitor, observed: Observed) -> Iterator[Finding]:
    targets = {
        str(s.mock.spec.misbehaviour.redirect_to).split("#")[0]: s
        for s in observed.served
        if s.names and s.mock.spec.misbehaviour.redirect_to
    }
    if not targets:
        return
    for label, mock, entries in _mocks(observed):
        url = str(getattr(mock, "url", "") or "")
        named_by = next(
            (s for target, s in targets.items() if url and target.startswith(url)), None
        )
        configured = any(label in s.names for s in observed.served if s.mock is mock)
        if named_by is not None and not configured and entries:
            yield self.finding(
                "NET-3",
                f"the redirect from {named_by.label} is not followed",
                f"its target {label} received {len(entries)} journal entries",
            )


def _plain_http_host(url: str) -> str | None:
    """The host of a plain-HTTP URL, else None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return None
    return host if parts.scheme == "http" else None


def _loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


# What the harness allows a host that refuses private addresses (PRIV-1): beyond it, such a
# host refuses loopback too, by its own profile (`localhost` is 127.0.0.1).
ALLOWANCE = (*LOOPBACK_ALLOWANCE, "localhost")


@monitor(
    "loopback-http-accepted",
    "NET-1",
    "a server configured over plain HTTP at a loopback address (`localhost`, 127.0.0.0/8, "
    "`::1`) that listened throughout is contacted by a session that reports it unavailable "
    "(a host that refuses private addresses may refuse loopback beyond the harness's "
    "allowance)",
)
def loopback_http_accepted(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # NET-1's other half: plain HTTP is accepted for loopback. A refusal sends nothing, so a
    # listening server that received nothing at all, while a session said it was
    # unavailable, was refused without a try (a server closed by its case is not listening)
    from mcp_host_conformance.harness.contract.adapter import HttpServer

    private_refused = PRIVATE_REFUSAL in observed.profiles
    urls = {
        config.name: host
        for config in observed.configured
        if isinstance(config, HttpServer)
        for host in [_plain_http_host(config.url)]
        if host is not None and _loopback(host) and not (private_refused and host not in ALLOWANCE)
    }
    silent = [
        s
        for s in observed.served
        if not s.stdio
        and not s.reached
        and getattr(s.mock, "listening", False)
        and any(name in urls for name in s.names)
    ]
    if not silent:
        return
    for served in silent:
        for name in (n for n in served.names if n in urls):
            statuses = [r.status(name) for r in observed.runs]
            refused = [s for s in statuses if s is not None and not s.connected]
            if refused:
                yield self.finding(
                    "NET-1",
                    f"plain HTTP to {served.label} at loopback ({urls[name]}) is accepted",
                    f"it received nothing; the host said {visible(refused[0].line[:160])!r}",
                )
                return


@monitor(
    "plain-http-refused",
    "NET-1",
    "no listener at a non-loopback address that a server was configured for over plain HTTP "
    "was ever connected to",
)
def plain_http_refused(self: Monitor, observed: Observed) -> Iterator[Finding]:
    from mcp_host_conformance.harness.contract.adapter import HttpServer

    remote = {
        host: config.name
        for config in observed.configured
        if isinstance(config, HttpServer)
        for host in [_plain_http_host(config.url)]
        if host is not None and not _loopback(host)
    }
    for mock in observed.other_mocks:
        address = str(getattr(mock, "address", "")).strip("[]")
        if address in remote:
            try:
                entries = list(mock.journal.entries())
            except Exception:  # noqa: BLE001 - an unreadable journal holds nothing to judge
                continue
            if entries:
                yield self.finding(
                    "NET-1",
                    f"the plain-HTTP URL of {remote[address]} (not loopback) is refused without "
                    "a connection",
                    f"{len(entries)} connection(s) reached {address}",
                )


@monitor(
    "private-address-refused",
    "PRIV-1",
    "no connection reached a listener at a private address that a configured URL aimed at "
    "(the address itself, a name for it, or a name that rebinds to it)",
    only=("private-address-refusal",),
)
def private_address_refused(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for mock in observed.other_mocks:
        if not getattr(mock, "private", False):
            continue
        reached = mock.journal.entries(kind="connection")
        if reached:
            yield self.finding(
                "PRIV-1",
                "a URL that resolves to a private or internal address is refused",
                f"{len(reached)} connection(s) reached the listener at {mock.address} "
                "(private) that a configured server's URL aimed at",
            )
