"""Broken clients for the optional profiles that decide where a host connects:
private-address refusal (PRIV-1) and OAuth (OAUTH-1). Each is `reference-profiles` with one
seam patched."""

from __future__ import annotations

import ipaddress
import socket

from mcp_host_conformance.zoo.client import BrokenClient, pure, replaced, replaced_when

_GUARDED = "mcp_host_conformance.reference_client.transports.guarded"


def _by_name(original, self, host, port, *args, **kwargs) -> bool:
    """A `GuardedBackend` method that differs for a host name only (the mocks are literals)."""
    from mcp_host_conformance.reference_client.private_addresses import parse_address

    return parse_address(host) is None


@replaced_when(f"{_GUARDED}.GuardedBackend.resolve", _by_name)
def _literal_only(original):
    import anyio

    del original

    async def resolve(self, host, port):  # a name (`_by_name`): trusted as it resolves
        found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return [str(info[4][0]) for info in found]

    return resolve


@replaced_when(f"{_GUARDED}.GuardedBackend.connect_tcp", _by_name)
def _connect_by_name(original):
    from mcp_host_conformance.reference_client.transports.network import AsyncioBackend

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        await self.resolve(host, port)  # checked...
        return await AsyncioBackend.connect_tcp(  # ...then looked up again to connect
            self, host, port, timeout, local_address, socket_options
        )

    return connect_tcp


@replaced(f"{_GUARDED}.address_refusal")
@pure
def _is_private(original):
    def address_refusal(address, allowed=()):
        if str(address) in allowed or not address.is_private:
            return None  # ipaddress's is_private: 100.64.0.0/10 (CGNAT) is not "private"
        return f"{address} is a private address"

    return address_refusal


@replaced(f"{_GUARDED}.address_refusal")
@pure
def _ipv4_only(original):
    def address_refusal(address, allowed=()):
        if isinstance(address, ipaddress.IPv6Address):
            return None
        return original(address, allowed)

    return address_refusal


_FLOW = "mcp_host_conformance.reference_client.oauth_flow"


def _without(parameter):
    @replaced(f"{_FLOW}.authorization_url")
    def make(original):
        from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

        def authorization_url(*args, **kwargs):
            url = urlsplit(original(*args, **kwargs))
            kept = [(k, v) for k, v in parse_qsl(url.query) if k not in parameter]
            return urlunsplit(url._replace(query=urlencode(kept)))

        return authorization_url

    return make


@replaced(f"{_FLOW}.OAuthFlow.token_request")
def _shows_token(original):
    async def token_request(self, *args, **kwargs):
        await original(self, *args, **kwargs)
        # "a short prefix is safe to show": it is not the whole token, so nothing redacts it
        self.context.notify(f"Signed in to {self.name} (token {self.tokens.access_token[:14]}...)")

    return token_request


@replaced(f"{_FLOW}.OAuthFlow.refresh")
def _no_refresh(original):
    async def refresh(self):
        from mcp_host_conformance.reference_client.oauth import OAuthError

        raise OAuthError("refresh not supported")  # the person authorizes again instead

    return refresh


@replaced(f"{_FLOW}.scopes_to_request")
def _no_scope(original):
    def scopes_to_request(challenge, resource_scopes, server):
        return None

    return scopes_to_request


CLIENTS = [
    BrokenClient(
        "refuses-literal-addresses-only",
        "Refuses a URL whose host is a private IP address, but trusts a name that resolves to one.",
        {"PRIV-1"},
        (_literal_only,),
        base="profiles",
    ),
    BrokenClient(
        "checks-then-connects-by-name",
        "Resolves and checks the host name, then lets the connection look it up again (DNS "
        "rebinding slips through).",
        {"PRIV-1"},
        (_connect_by_name,),
        base="profiles",
    ),
    BrokenClient(
        "uses-is-private",
        "Refuses what Python's ipaddress calls is_private: carrier-grade NAT addresses pass.",
        {"PRIV-1"},
        (_is_private,),
        base="profiles",
    ),
    BrokenClient(
        "refuses-ipv4-only",
        "Checks IPv4 addresses only: unique-local IPv6 and IPv4-mapped IPv6 addresses pass.",
        {"PRIV-1"},
        (_ipv4_only,),
        base="profiles",
    ),
    BrokenClient(
        "oauth-without-pkce",
        "Sends the authorization request without a PKCE code challenge.",
        {"OAUTH-1"},
        (_without(("code_challenge", "code_challenge_method")),),
        base="profiles",
    ),
    BrokenClient(
        "oauth-without-resource",
        "Leaves the resource parameter (RFC 8707) out of the authorization request.",
        {"OAUTH-1"},
        (_without(("resource",)),),
        base="profiles",
    ),
    BrokenClient(
        "oauth-ignores-scopes",
        "Asks for no scope, whatever the challenge or the resource metadata says.",
        {"OAUTH-1"},
        (_no_scope,),
        base="profiles",
    ),
    BrokenClient(
        "shows-oauth-token-prefix",
        "Shows the start of the access token once signed in.",
        {"OAUTH-1"},
        (_shows_token,),
        base="profiles",
    ),
    BrokenClient(
        "reauthorizes-instead-of-refreshing",
        "Never uses the refresh token: an expired token sends the person through the browser "
        "again.",
        {"OAUTH-1"},
        (_no_refresh,),
        base="profiles",
    ),
]
