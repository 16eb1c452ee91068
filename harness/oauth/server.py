"""An OAuth-protected MCP server and its authorization server, in one mock (OAUTH-1: refresh).

Strategy: the official framework's scenarios check how a host authorizes, but none makes a
host refresh a token. This mock does, without any clock: it serves protected resource
metadata, authorization server metadata, dynamic registration, an authorization endpoint
that approves at once (a 302 to the host's callback with a code, as the person's click
would) and a token endpoint issuing canary tokens with a refresh token; its MCP endpoint
(`/mcp`, answered by `mocks._rpc` from a `ServerSpec`) accepts only the current access
token. `expire()` makes the server reject the current access token from then on (401
`invalid_token`, like an expired one): a host that refreshes host-side gets a new one with
the refresh token (grant_type=refresh_token) and no browser; a host that sends the person
through the browser again, or gives up, is seen in the journal. Every request is journalled
(kind "oauth": the endpoint, the grant type, which token or refresh token was presented by
its label, never its value). Binds 127.0.0.1, port 0.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from mcp_host_conformance.mocks import _rpc
from mcp_host_conformance.mocks._http import Request, write_response
from mcp_host_conformance.mocks.authorization_server import authorization_metadata
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.loop_server import Connection, LoopServer, ServedMock
from mcp_host_conformance.mocks.spec import ServerSpec, new_marker_token, with_markers

__all__ = ["OAuthServer"]

# (status, JSON body or None, headers); the mocks' server bounds what it reads (HttpLimits).
_Answer = tuple[int, Any, dict[str, str]]


class OAuthServer(ServedMock):
    """Started when made (`url`, `base`); `close()` ends it."""

    def __init__(self, spec: ServerSpec, new_secret: Any) -> None:
        """`new_secret(label)` makes a canary (the `secrets` fixture's `new`)."""
        self.marker_token = new_marker_token()  # the mock model finds its tools by marker
        self.spec = with_markers(spec, self.marker_token)
        self.journal = Journal()
        self._new_secret = new_secret
        self._lock = threading.Lock()
        self.issued: dict[str, str] = {}  # token value -> its label ("access-1", "refresh-1")
        self.access: str | None = None  # the access token accepted now
        self.refresh: str | None = None
        self.code = new_secret("oauth-code")
        self._issued_count = 0
        self.base = self.url = ""
        self.start()

    def _new_server(self) -> LoopServer:
        return LoopServer(self._handle, self.journal, name="oauth-protected")

    def _started(self, server: LoopServer) -> None:
        self.base = f"http://127.0.0.1:{server.port}"
        self.url = f"{self.base}/mcp"

    # ---- control -------------------------------------------------------------------------
    def expire(self) -> None:
        """From now on the current access token is refused (as if it expired)."""
        with self._lock:
            self.access = None

    def entries(self, endpoint: str) -> list[Entry]:
        return self.journal.entries(
            kind="oauth", where=lambda e: e.extra.get("endpoint") == endpoint
        )

    # ---- HTTP ----------------------------------------------------------------------------
    def _record(self, endpoint: str, **extra: Any) -> None:
        self.journal.record(Entry(kind="oauth", extra={"endpoint": endpoint, **extra}))

    async def _handle(self, request: Request, conn: Connection) -> bool:
        keep = request.keep_alive
        if request.method == "GET":
            status, body, headers = self._get(request)
        elif request.method == "POST":
            status, body, headers = self._post(request)
        elif request.method == "DELETE":
            status, body, headers = 204, None, {}
        else:
            status, body, headers = 405, None, {"allow": "GET, POST, DELETE"}
        data = json.dumps(body).encode() if body is not None else b""
        if body is not None:
            headers = {**headers, "content-type": "application/json"}
        write_response(conn.writer, status, data, list(headers.items()), keep_alive=keep)
        return keep

    def _get(self, request: Request) -> _Answer:
        path = urlsplit(request.target)
        if path.path == "/.well-known/oauth-protected-resource/mcp":
            self._record("resource-metadata")
            return 200, {"resource": self.url, "authorization_servers": [self.base]}, {}
        if path.path == "/.well-known/oauth-authorization-server":
            self._record("authorization-server-metadata")
            return 200, authorization_metadata(self.base), {}
        if path.path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(path.query).items()}
            self._record("authorize", pkce=query.get("code_challenge_method"))
            target = query.get("redirect_uri", "")
            joiner = "&" if "?" in target else "?"
            code = urlencode({"code": self.code, "state": query.get("state", "")})
            return 302, None, {"location": f"{target}{joiner}{code}"}
        return 404, {"error": "not_found"}, {}

    def _issue(self) -> dict[str, Any]:
        with self._lock:
            self._issued_count += 1
            n = self._issued_count
            self.access = self._new_secret(f"oauth-access-{n}")
            self.refresh = self._new_secret(f"oauth-refresh-{n}")
            self.issued[self.access] = f"access-{n}"
            self.issued[self.refresh] = f"refresh-{n}"
            return {
                "access_token": self.access,
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": self.refresh,
            }

    def _post(self, request: Request) -> _Answer:
        path = urlsplit(request.target).path
        if path == "/register":
            self._record("register")
            return 201, {"client_id": "mcphc-client", "token_endpoint_auth_method": "none"}, {}
        if path == "/token":
            form = {k: v[0] for k, v in parse_qs(request.body.decode("utf-8", "replace")).items()}
            grant = form.get("grant_type")
            presented = form.get("refresh_token") or form.get("code") or ""
            label = self.issued.get(presented) or ("code" if presented == self.code else "unknown")
            self._record("token", grant=grant, presented=label)
            valid = (grant == "authorization_code" and presented == self.code) or (
                grant == "refresh_token" and presented == self.refresh
            )
            if not valid:
                return 400, {"error": "invalid_grant"}, {}
            return 200, self._issue(), {}
        if path == "/mcp":
            return self._mcp(request)
        return 404, {"error": "not_found"}, {}

    def _mcp(self, request: Request) -> _Answer:
        header = request.headers.get("authorization") or ""
        token = header[7:] if header.lower().startswith("bearer ") else ""
        try:
            message = json.loads(request.body)
        except ValueError:
            message = None
        method = message.get("method") if isinstance(message, dict) else None
        with self._lock:
            accepted = bool(token) and token == self.access
        self._record(
            "mcp",
            method=method,
            presented=self.issued.get(token, "none" if not token else "unknown"),
            accepted=accepted,
        )
        if not accepted:
            challenge = (
                f'Bearer resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"'
                + (', error="invalid_token"' if token else "")
            )
            return 401, {"error": "invalid_token"}, {"www-authenticate": challenge}
        kind, _ = _rpc.classify(message)
        if kind != "request":
            return 202, None, {}
        return 200, _rpc.answer(self.spec, message), {}
