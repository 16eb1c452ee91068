"""A mock OAuth authorization server: every request it gets is an OAuth step a host took.

Strategy: a host without OAuth must start no OAuth flow after a 401 or 403 (CRED-6). The
MCP authorization spec tells a client where to start: the `WWW-Authenticate` header of the
401 names the protected resource metadata (`resource_metadata="URL"`), which names the
authorization server, whose metadata names the registration, authorization and token
endpoints. A rejecting MCP mock can point its challenge at this server
(`Misbehaviour(reject_challenge=server.challenge())`), and this server answers each step
the way a real one would, so a host that follows the trail goes as far as it would in the
world and its journal shows every step: one kind="http" entry per request (method, path,
headers), whatever it is. Nothing here is ever needed by a conforming host: a case expects
this journal to stay empty.

Served (every other path is a 404, journalled all the same):
- GET `/.well-known/oauth-protected-resource[/...]`: `{"resource", "authorization_servers"}`
- GET `/.well-known/oauth-authorization-server[/...]`, `/.well-known/openid-configuration`:
  the endpoints below, `code` with PKCE S256
- POST `/register`: 201 with a client id; GET `/authorize`: a page; POST `/token`: 400
  `invalid_grant` (no flow can complete, so no token ever exists).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_host_conformance.mocks._http import Request, write_response
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.loop_server import Connection, LoopServer, ServedMock

__all__ = ["OAUTH_PATHS", "AuthorizationServerMock", "authorization_metadata", "is_oauth_path"]

JSON_HEADERS = [("content-type", "application/json"), ("cache-control", "no-store")]
# Where an OAuth client goes: discovery documents and the default endpoints (the 2025-03-26
# MCP spec falls back to /authorize, /token and /register at the server's own origin).
OAUTH_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
)


def authorization_metadata(origin: str) -> dict[str, Any]:
    """An authorization server's metadata (RFC 8414) at `origin`: code with PKCE S256,
    dynamic registration, public clients, refresh tokens."""
    return {
        "issuer": origin,
        "authorization_endpoint": f"{origin}/authorize",
        "token_endpoint": f"{origin}/token",
        "registration_endpoint": f"{origin}/register",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }


def is_oauth_path(path: str) -> bool:
    """Whether a request path (query ignored) is one of an OAuth client's steps, at any
    prefix (`/.well-known/oauth-protected-resource/mcp`, `/mcp/register`, ...)."""
    bare = path.split("?", 1)[0].rstrip("/")
    return any(bare.startswith(p) or bare.endswith(p) for p in OAUTH_PATHS)


class AuthorizationServerMock(ServedMock):
    """Serves the OAuth discovery trail on 127.0.0.1:<port>; `journal` holds every request."""

    def __init__(self, resource: str = "") -> None:
        self.resource = resource  # the protected resource (an MCP server's URL) it speaks for
        self.journal = Journal()
        self.url: str | None = None  # the origin, "http://127.0.0.1:PORT"

    def _new_server(self) -> LoopServer:
        return LoopServer(self._handle, self.journal, name="authorization-server")

    def _started(self, server: LoopServer) -> None:
        self.url = f"http://127.0.0.1:{server.port}"

    @property
    def metadata_url(self) -> str:
        """The protected resource metadata URL a 401's challenge points at."""
        return f"{self._origin()}/.well-known/oauth-protected-resource"

    def challenge(self, error: str | None = None) -> str:
        """A `WWW-Authenticate` value pointing at this server's resource metadata, as the
        MCP authorization spec has a server send it (`error="insufficient_scope"` on a 403)."""
        parts = [f'resource_metadata="{self.metadata_url}"']
        if error:
            parts.insert(0, f'error="{error}"')
        return "Bearer " + ", ".join(parts)

    def requests(self) -> list[Entry]:
        return self.journal.entries(kind="http")

    def _origin(self) -> str:
        if self.url is None:
            raise RuntimeError("the authorization server mock is not started")
        return self.url

    def _documents(self) -> dict[str, dict[str, Any]]:
        origin = self._origin()
        server = authorization_metadata(origin)
        return {
            "/.well-known/oauth-protected-resource": {
                "resource": self.resource or origin,
                "authorization_servers": [origin],
                "bearer_methods_supported": ["header"],
            },
            "/.well-known/oauth-authorization-server": server,
            "/.well-known/openid-configuration": server,
        }

    async def _handle(self, request: Request, conn: Connection) -> bool:
        keep = request.keep_alive
        if self.admin_or_record(request, conn) is None:
            return keep
        path = request.path.rstrip("/")
        document = next((d for p, d in self._documents().items() if path.startswith(p)), None)
        if document is not None and request.method == "GET":
            status, body = 200, document
        elif path == "/register" and request.method == "POST":
            status, body = 201, {"client_id": "mock-client", "token_endpoint_auth_method": "none"}
        elif path == "/authorize" and request.method == "GET":
            page = b"<html><body>mock authorization page: nothing to approve</body></html>"
            write_response(conn.writer, 200, page, [("content-type", "text/html")], keep_alive=keep)
            return keep
        elif path == "/token" and request.method == "POST":
            status, body = 400, {"error": "invalid_grant"}
        else:
            status, body = 404, {"error": "not_found"}
        write_response(
            conn.writer, status, json.dumps(body).encode(), JSON_HEADERS, keep_alive=keep
        )
        return keep
