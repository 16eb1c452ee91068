"""OAuth for MCP servers, the pure part (profile `oauth`, OAUTH-1).

Strategy: the MCP authorization spec (2025-11-25) is OAuth 2.1's authorization code flow
with PKCE, found through metadata: the server's 401 names its protected resource metadata
(RFC 9728), which names the authorization server, whose metadata (RFC 8414, or OpenID
Connect discovery) names the endpoints. Everything that decides is here, as pure functions
of what the servers sent: where to look for each metadata document and in which order
(path-based before root), which scopes to ask for (the challenge's, else every scope the
resource supports, else none; `offline_access` only when the authorization server lists
it), how the client authenticates at the token endpoint (what registration said, else what
the server supports), the PKCE pair (S256), the authorization URL (with `resource`, RFC
8707), and reading a token response. The I/O (requests, the browser, the callback
listener, the token store) is `oauth_flow`.

Everything read comes from servers: bounded, type-checked, and a value that does not fit
is a refusal with a reason (`OAuthError`), never an exception of another kind. Tokens are
secrets: no function here puts one in a message.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode, urlsplit, urlunsplit

__all__ = [
    "AuthServer",
    "Challenge",
    "OAuthError",
    "Pkce",
    "Tokens",
    "authorization_server_urls",
    "authorization_url",
    "canonical_resource",
    "client_auth",
    "parse_challenge",
    "parse_metadata",
    "parse_tokens",
    "protected_resource_urls",
    "resource_matches",
    "scopes_to_request",
]

MAX_SCOPE = 1024
MAX_TOKEN = 8 * 1024
OFFLINE_ACCESS: Final = "offline_access"


class OAuthError(Exception):
    """The authorization cannot go on; the message says why (never holding a token)."""


# ---- the challenge in a 401 / 403 --------------------------------------------------------

_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))')


@dataclass(frozen=True)
class Challenge:
    """A `WWW-Authenticate: Bearer ...` challenge."""

    resource_metadata: str | None = None
    scope: str | None = None
    error: str | None = None


def parse_challenge(header: str | None) -> Challenge:
    """The Bearer challenge's parameters (RFC 6750, RFC 9728); empty for anything else."""
    if not header or not header.strip().lower().startswith("bearer"):
        return Challenge()
    params = {
        m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3))
        for m in _PARAM.finditer(header[6:][:4096])
    }
    scope = params.get("scope")
    return Challenge(
        resource_metadata=params.get("resource_metadata") or None,
        scope=scope[:MAX_SCOPE] if scope else None,
        error=params.get("error") or None,
    )


# ---- where the metadata documents are ------------------------------------------------------


def _origin(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc, parts.path.rstrip("/")


def protected_resource_urls(server_url: str, challenge: Challenge) -> list[str]:
    """Where the protected resource metadata may be, in order: the challenge's URL, else
    the path-based well-known URL, then the root one (RFC 9728)."""
    if challenge.resource_metadata:
        return [challenge.resource_metadata]
    scheme, netloc, path = _origin(server_url)
    base = f"{scheme}://{netloc}/.well-known/oauth-protected-resource"
    return [f"{base}{path}", base] if path else [base]


def authorization_server_urls(issuer: str) -> list[str]:
    """Where an authorization server's metadata may be, in the spec's order: with a path,
    OAuth path-inserted, OpenID Connect path-inserted, OpenID Connect path-appended; without,
    the two root documents."""
    scheme, netloc, path = _origin(issuer)
    root = f"{scheme}://{netloc}"
    if path:
        return [
            f"{root}/.well-known/oauth-authorization-server{path}",
            f"{root}/.well-known/openid-configuration{path}",
            f"{root}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{root}/.well-known/oauth-authorization-server",
        f"{root}/.well-known/openid-configuration",
    ]


def canonical_resource(server_url: str) -> str:
    """The MCP server's canonical URI (RFC 8707): scheme and host lower case, no fragment,
    no query."""
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


def resource_matches(advertised: str, server_url: str) -> bool:
    """Whether protected resource metadata's `resource` is this server (the same origin,
    and a path that is the server's or a parent of it)."""
    a, s = urlsplit(advertised), urlsplit(canonical_resource(server_url))
    if (a.scheme.lower(), a.netloc.lower()) != (s.scheme, s.netloc):
        return False
    path = a.path.rstrip("/")
    return s.path.rstrip("/") == path or s.path.startswith(path + "/") or not path


# ---- metadata ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AuthServer:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] = ()
    token_auth_methods: tuple[str, ...] = ("client_secret_basic",)
    code_challenge_methods: tuple[str, ...] = ()
    client_id_metadata_documents: bool = False

    @classmethod
    def fallback(cls, server_url: str) -> AuthServer:
        """The 2025-03-26 default endpoints at the server's origin (no metadata)."""
        scheme, netloc, _path = _origin(server_url)
        root = f"{scheme}://{netloc}"
        return cls(root, f"{root}/authorize", f"{root}/token", f"{root}/register")


def _strings(value: Any, limit: int = 64) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v[:MAX_SCOPE] for v in value[:limit] if isinstance(v, str))


def _url(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise OAuthError(f"the authorization server metadata has no usable {what}")
    return value[:2048]


def parse_metadata(document: Any, issuer: str) -> AuthServer:
    """Authorization server metadata (RFC 8414 / OpenID Connect discovery)."""
    if not isinstance(document, dict):
        raise OAuthError("the authorization server metadata is not a JSON object")
    registration = document.get("registration_endpoint")
    return AuthServer(
        issuer=str(document.get("issuer") or issuer)[:2048],
        authorization_endpoint=_url(
            document.get("authorization_endpoint"), "authorization endpoint"
        ),
        token_endpoint=_url(document.get("token_endpoint"), "token endpoint"),
        registration_endpoint=_url(registration, "registration endpoint") if registration else None,
        scopes_supported=_strings(document.get("scopes_supported")),
        token_auth_methods=_strings(document.get("token_endpoint_auth_methods_supported"))
        or ("client_secret_basic",),
        code_challenge_methods=_strings(document.get("code_challenge_methods_supported")),
        client_id_metadata_documents=document.get("client_id_metadata_document_supported") is True,
    )


def scopes_to_request(
    challenge: Challenge, resource_scopes: Sequence[str], server: AuthServer
) -> str | None:
    """The scope parameter: the challenge's scope, else every scope the resource supports,
    else none; plus `offline_access` (a refresh token) when the authorization server lists
    it. None: no scope parameter at all."""
    if challenge.scope:
        scopes = challenge.scope.split()
    else:
        scopes = list(resource_scopes)
    if OFFLINE_ACCESS in server.scopes_supported and OFFLINE_ACCESS not in scopes:
        scopes.append(OFFLINE_ACCESS)
    return " ".join(dict.fromkeys(scopes)) or None


# ---- PKCE and the authorization request ---------------------------------------------------


@dataclass(frozen=True)
class Pkce:
    verifier: str = field(repr=False)
    challenge: str
    state: str = field(repr=False)

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-]
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        return cls(verifier, challenge, secrets.token_urlsafe(24))


def authorization_url(
    server: AuthServer,
    client_id: str,
    redirect_uri: str,
    pkce: Pkce,
    resource: str,
    scope: str | None,
) -> str:
    if server.code_challenge_methods and "S256" not in server.code_challenge_methods:
        raise OAuthError("the authorization server does not support PKCE with S256")
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": pkce.challenge,
        "code_challenge_method": "S256",
        "state": pkce.state,
        "resource": resource,
    }
    if scope:
        query["scope"] = scope
    joiner = "&" if urlsplit(server.authorization_endpoint).query else "?"
    return f"{server.authorization_endpoint}{joiner}{urlencode(query)}"


def client_auth(
    method: str, client_id: str, client_secret: str | None
) -> tuple[dict[str, str], dict[str, str]]:
    """(headers, form fields) that authenticate the client at the token endpoint."""
    if method == "client_secret_basic" and client_secret:
        from urllib.parse import quote

        pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        encoded = base64.b64encode(pair.encode()).decode("ascii")
        return {"authorization": f"Basic {encoded}"}, {}
    if method == "client_secret_post" and client_secret:
        return {}, {"client_id": client_id, "client_secret": client_secret}
    return {}, {"client_id": client_id}


# ---- tokens ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tokens:
    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None  # seconds since the epoch
    scope: str | None = None


def parse_tokens(document: Any, now: float, previous: Tokens | None = None) -> Tokens:
    """A token response; a refresh that sends no new refresh token keeps the old one."""
    if not isinstance(document, dict):
        raise OAuthError("the token response is not a JSON object")
    access = document.get("access_token")
    kind = document.get("token_type", "Bearer")
    if not isinstance(access, str) or not access or len(access) > MAX_TOKEN:
        raise OAuthError("the token response holds no usable access token")
    if not isinstance(kind, str) or kind.lower() != "bearer":
        raise OAuthError("the token response is not a bearer token")
    if any(c < "\x21" or c > "\x7e" for c in access):
        raise OAuthError("the access token holds characters a header cannot carry")
    refresh = document.get("refresh_token")
    if not isinstance(refresh, str) or not refresh or len(refresh) > MAX_TOKEN:
        refresh = previous.refresh_token if previous else None
    expires = document.get("expires_in")
    expires_at = (
        now + float(expires)
        if isinstance(expires, int | float) and not isinstance(expires, bool) and 0 < expires < 1e9
        else None
    )
    scope = document.get("scope")
    return Tokens(
        access, refresh, expires_at, scope[:MAX_SCOPE] if isinstance(scope, str) else None
    )


def token_method(registered: Mapping[str, Any], server: AuthServer, has_secret: bool) -> str:
    """How to authenticate at the token endpoint: what registration said, else the first of
    the server's methods this client can use."""
    said = registered.get("token_endpoint_auth_method")
    if isinstance(said, str) and said in ("none", "client_secret_basic", "client_secret_post"):
        return said
    for method in server.token_auth_methods:
        if method == "none" or (
            has_secret and method in ("client_secret_basic", "client_secret_post")
        ):
            return method
    return "client_secret_basic" if has_secret else "none"
