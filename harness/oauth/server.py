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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from mcp_host_conformance.mocks import _rpc
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.spec import ServerSpec, new_marker_token, with_markers

__all__ = ["OAuthServer"]

MAX_BODY = 1024 * 1024


class OAuthServer:
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
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                server._get(self)

            def do_POST(self) -> None:  # noqa: N802
                server._post(self)

            def do_DELETE(self) -> None:  # noqa: N802
                self.send_response(204)
                self.end_headers()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.url = f"{self.base}/mcp"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    # ---- control -------------------------------------------------------------------------
    def expire(self) -> None:
        """From now on the current access token is refused (as if it expired)."""
        with self._lock:
            self.access = None

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def entries(self, endpoint: str) -> list[Entry]:
        return self.journal.entries(
            kind="oauth", where=lambda e: e.extra.get("endpoint") == endpoint
        )

    # ---- HTTP ----------------------------------------------------------------------------
    def _record(self, endpoint: str, **extra: Any) -> None:
        self.journal.record(Entry(kind="oauth", extra={"endpoint": endpoint, **extra}))

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        if body is not None:
            handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _body(self, handler: BaseHTTPRequestHandler) -> bytes:
        length = int(handler.headers.get("content-length") or 0)
        return handler.rfile.read(min(length, MAX_BODY))

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        path = urlsplit(handler.path)
        if path.path == "/.well-known/oauth-protected-resource/mcp":
            self._record("resource-metadata")
            self._send(handler, 200, {"resource": self.url, "authorization_servers": [self.base]})
        elif path.path == "/.well-known/oauth-authorization-server":
            self._record("authorization-server-metadata")
            self._send(
                handler,
                200,
                {
                    "issuer": self.base,
                    "authorization_endpoint": f"{self.base}/authorize",
                    "token_endpoint": f"{self.base}/token",
                    "registration_endpoint": f"{self.base}/register",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                },
            )
        elif path.path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(path.query).items()}
            self._record("authorize", pkce=query.get("code_challenge_method"))
            target = query.get("redirect_uri", "")
            joiner = "&" if "?" in target else "?"
            location = (
                f"{target}{joiner}{urlencode({'code': self.code, 'state': query.get('state', '')})}"
            )
            handler.send_response(302)
            handler.send_header("location", location)
            handler.send_header("content-length", "0")
            handler.end_headers()
        else:
            self._send(handler, 404, {"error": "not_found"})

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

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        path = urlsplit(handler.path).path
        body = self._body(handler)
        if path == "/register":
            self._record("register")
            self._send(
                handler, 201, {"client_id": "mcphc-client", "token_endpoint_auth_method": "none"}
            )
        elif path == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
            grant = form.get("grant_type")
            presented = form.get("refresh_token") or form.get("code") or ""
            label = self.issued.get(presented) or ("code" if presented == self.code else "unknown")
            self._record("token", grant=grant, presented=label)
            valid = (grant == "authorization_code" and presented == self.code) or (
                grant == "refresh_token" and presented == self.refresh
            )
            if not valid:
                self._send(handler, 400, {"error": "invalid_grant"})
                return
            self._send(handler, 200, self._issue())
        elif path == "/mcp":
            self._mcp(handler, body)
        else:
            self._send(handler, 404, {"error": "not_found"})

    def _mcp(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        header = handler.headers.get("authorization") or ""
        token = header[7:] if header.lower().startswith("bearer ") else ""
        try:
            message = json.loads(body)
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
            self._send(handler, 401, {"error": "invalid_token"}, {"www-authenticate": challenge})
            return
        kind, _ = _rpc.classify(message)
        if kind != "request":
            self._send(handler, 202, None)
            return
        self._send(handler, 200, _rpc.answer(self.spec, message))
