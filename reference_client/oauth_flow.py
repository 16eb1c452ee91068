"""OAuth for MCP servers, the I/O (profile `oauth`, OAUTH-1): metadata, registration, the
browser, the callback, tokens.

Strategy: an `OAuthFlow` belongs to one configured server and sits in its HTTP transport.
The transport asks it for the Authorization header of each request and hands it every 401
or 403 challenge; the flow answers whether to send the request again (once):
- 401 with a refresh token: refresh it host-side (grant_type=refresh_token), no browser;
- 401 otherwise, or 403 `insufficient_scope`: authorize: find the protected resource
  metadata and the authorization server's (`oauth` says where), identify the client
  (configured credentials, a client ID metadata document URL when the server supports it,
  else dynamic registration), open the authorization URL in the person's browser
  (`$BROWSER`, else the URL is shown to them), take the code on a loopback listener
  (`http://127.0.0.1:PORT/callback`, the state checked), and exchange it with the PKCE
  verifier; at most MAX_AUTHORIZATIONS per flow, so a server that keeps asking cannot loop.
Every URL it fetches obeys the host's rules for servers (HTTPS or loopback, NET-1; never a
redirect, NET-3; the private-address refusal when switched on, PRIV-1), every body is read
with a bound, and every token goes to the redactor before anything else sees it, and to the
token file (0600), never to a screen or a log.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from mcp_host_conformance.reference_client import untrusted_json
from mcp_host_conformance.reference_client.config import (
    APP_DIR,
    config_home,
    private_dir,
    url_refusal,
    write_private,
)
from mcp_host_conformance.reference_client.oauth import (
    AuthServer,
    Challenge,
    OAuthError,
    Pkce,
    Tokens,
    authorization_server_urls,
    authorization_url,
    canonical_resource,
    client_auth,
    parse_challenge,
    parse_metadata,
    parse_tokens,
    protected_resource_urls,
    resource_matches,
    scopes_to_request,
    token_method,
)

__all__ = ["OAuthContext", "OAuthFlow", "TokenStore"]

MAX_BODY = 1024 * 1024
MAX_AUTHORIZATIONS = 3
AUTHORIZATION_TIMEOUT = 120.0  # seconds a person has to approve in the browser
REQUEST_TIMEOUT = 15.0
CALLBACK_PATH = "/callback"
CLIENT_NAME = "mcp-reference-host"
_DONE_PAGE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\nconnection: close\r\n\r\n"
    b"<!doctype html><title>Authorized</title><p>mcp-reference-host is authorized. "
    b"You can close this window.</p>"
)
_BAD_PAGE = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n"
    b"This is not the authorization mcp-reference-host is waiting for.\n"
)


@dataclass
class OAuthContext:
    """What every flow of one host process shares."""

    environ: Mapping[str, str]
    notify: Callable[[str], None] = lambda _text: None  # show a line to the person
    on_secret: Callable[[str], None] = lambda _secret: None  # a new secret to redact
    ca_file: Path | None = None
    refuse_private: Collection[str] | None = None
    authorization_timeout: float = AUTHORIZATION_TIMEOUT


class TokenStore:
    """The tokens and client registrations, by server name, in a private file."""

    FILE_NAME = "oauth-tokens.json"

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.path = config_home(environ) / APP_DIR / self.FILE_NAME

    def load(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as f:
                raw = f.read(MAX_BODY + 1)
            document = untrusted_json.decode(raw) if len(raw) <= MAX_BODY else {}
        except (OSError, untrusted_json.UntrustedJsonError):
            return {}
        return document if isinstance(document, dict) else {}

    def entry(self, name: str, url: str) -> dict[str, Any]:
        found = self.load().get(name)
        return found if isinstance(found, dict) and found.get("url") == url else {}

    def save(self, name: str, entry: dict[str, Any]) -> None:
        document = self.load()
        document[name] = entry
        private_dir(self.path.parent)
        write_private(self.path, json.dumps(document, indent=1).encode("utf-8"))

    def forget(self, name: str) -> None:
        document = self.load()
        if document.pop(name, None) is not None:
            write_private(self.path, json.dumps(document, indent=1).encode("utf-8"))


def _tokens_from(entry: Mapping[str, Any]) -> Tokens | None:
    tokens = entry.get("tokens")
    if not isinstance(tokens, dict) or not isinstance(tokens.get("access_token"), str):
        return None
    refresh = tokens.get("refresh_token")
    expires = tokens.get("expires_at")
    return Tokens(
        tokens["access_token"],
        refresh if isinstance(refresh, str) else None,
        float(expires) if isinstance(expires, int | float) else None,
    )


@dataclass
class _Callback:
    state: str
    code: asyncio.Future[str] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class OAuthFlow:
    def __init__(
        self,
        name: str,
        server_url: str,
        client: Mapping[str, str],
        context: OAuthContext,
    ) -> None:
        self.name = name
        self.server_url = server_url
        self.configured = dict(client)
        self.context = context
        self.store = TokenStore(context.environ)
        self.entry = self.store.entry(name, server_url)
        self.tokens = _tokens_from(self.entry)
        self.authorizations = 0
        self._refreshed: set[str] = set()  # access tokens already refreshed (never twice)
        for secret in (*self.configured.values(), *self._secrets()):
            context.on_secret(secret)

    def _secrets(self) -> list[str]:
        found = []
        if self.tokens is not None:
            found.append(self.tokens.access_token)
            if self.tokens.refresh_token:
                found.append(self.tokens.refresh_token)
        secret = self.entry.get("client_secret")
        if isinstance(secret, str):
            found.append(secret)
        return found

    # ---- what the transport asks ---------------------------------------------------------
    def header(self) -> dict[str, str]:
        if self.tokens is None:
            return {}
        return {"authorization": f"Bearer {self.tokens.access_token}"}

    async def on_challenge(self, status: int, www_authenticate: str | None) -> bool:
        """Whether the request should be sent again (with a new token). Raises OAuthError
        with the reason when the authorization cannot go on."""
        challenge = parse_challenge(www_authenticate)
        tokens = self.tokens
        if (
            status == 401
            and tokens is not None
            and tokens.refresh_token
            and tokens.access_token not in self._refreshed
        ):
            self._refreshed.add(tokens.access_token)
            try:
                await self.refresh()
                return True
            except OAuthError:
                pass  # the refresh token was refused too: a person authorizes again
        if status == 403 and challenge.error != "insufficient_scope":
            return False
        if self.authorizations >= MAX_AUTHORIZATIONS:
            raise OAuthError(
                f"the server still refuses after {MAX_AUTHORIZATIONS} authorizations; giving up"
            )
        await self.authorize(challenge)
        return True

    # ---- HTTP -----------------------------------------------------------------------------
    def _client(self) -> httpx.AsyncClient:
        from mcp_host_conformance.reference_client.transports.http import http_client

        return http_client(self.context.ca_file, self.context.refuse_private)

    async def _json(
        self, client: httpx.AsyncClient, method: str, url: str, **kwargs: Any
    ) -> tuple[int, Any]:
        refusal = url_refusal(url)
        if refusal:
            raise OAuthError(f"refused {url[:200]}: {refusal}")
        headers = {"accept": "application/json", "accept-encoding": "identity"}
        headers.update(kwargs.pop("headers", {}))
        try:
            request = client.build_request(method, url, headers=headers, **kwargs)
            response = await client.send(request, stream=True)
        except (httpx.HTTPError, OSError) as exc:
            raise OAuthError(f"cannot reach {urlsplit(url).netloc}: {type(exc).__name__}") from None
        try:
            body = b""
            async for chunk in response.aiter_raw():
                body += chunk
                if len(body) > MAX_BODY:
                    raise OAuthError(f"{urlsplit(url).netloc} sent more than 1 MiB")
        except httpx.HTTPError as exc:
            raise OAuthError(f"connection lost ({type(exc).__name__})") from None
        finally:
            await response.aclose()
        try:
            value = untrusted_json.decode(body) if body else None
        except untrusted_json.UntrustedJsonError:
            value = None
        return response.status_code, value

    async def _first(self, client: httpx.AsyncClient, urls: list[str]) -> Any:
        for url in urls:
            status, value = await self._json(client, "GET", url)
            if status == 200 and isinstance(value, dict):
                return value
        return None

    # ---- the flows -----------------------------------------------------------------------
    async def _discover(
        self, client: httpx.AsyncClient, challenge: Challenge
    ) -> tuple[AuthServer, tuple[str, ...]]:
        resource = await self._first(client, protected_resource_urls(self.server_url, challenge))
        if resource is None:  # 2025-03-26: the server's origin is its authorization server
            issuer = f"{urlsplit(self.server_url).scheme}://{urlsplit(self.server_url).netloc}"
            scopes: tuple[str, ...] = ()
        else:
            advertised = resource.get("resource")
            if isinstance(advertised, str) and not resource_matches(advertised, self.server_url):
                raise OAuthError(
                    f"the server's resource metadata names another resource ({advertised[:200]}); "
                    "not authorizing"
                )
            servers = resource.get("authorization_servers")
            if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
                raise OAuthError("the server's resource metadata names no authorization server")
            issuer = servers[0]
            raw = resource.get("scopes_supported")
            scopes = (
                tuple(s for s in raw if isinstance(s, str))[:64] if isinstance(raw, list) else ()
            )
        metadata = await self._first(client, authorization_server_urls(issuer))
        if metadata is None:
            return AuthServer.fallback(issuer), scopes
        return parse_metadata(metadata, issuer), scopes

    async def _client_identity(
        self, client: httpx.AsyncClient, server: AuthServer, redirect_uri: str
    ) -> tuple[str, str | None, Mapping[str, Any]]:
        """(client_id, client_secret, the registration's answer)."""
        if self.configured.get("client_id"):
            return self.configured["client_id"], self.configured.get("client_secret"), {}
        metadata_url = self.configured.get("client_metadata_url")
        if metadata_url and server.client_id_metadata_documents:
            return metadata_url, None, {"token_endpoint_auth_method": "none"}
        registered = self.entry.get("registration")
        if isinstance(registered, dict) and self.entry.get("issuer") == server.issuer:
            secret = registered.get("client_secret")
            return (
                str(registered["client_id"]),
                secret if isinstance(secret, str) else None,
                registered,
            )
        if not server.registration_endpoint:
            raise OAuthError(
                "the authorization server allows no dynamic registration: configure a client "
                "(mcp add NAME URL --oauth --oauth-client-id ID)"
            )
        wanted = next(
            (
                m
                for m in ("none", "client_secret_basic", "client_secret_post")
                if m in server.token_auth_methods
            ),
            "client_secret_basic",
        )
        status, answer = await self._json(
            client,
            "POST",
            server.registration_endpoint,
            json={
                "client_name": CLIENT_NAME,
                "redirect_uris": [redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": wanted,
            },
        )
        if status not in (200, 201) or not isinstance(answer, dict):
            raise OAuthError(f"the client registration was refused (HTTP {status})")
        client_id = answer.get("client_id")
        secret = answer.get("client_secret")
        if not isinstance(client_id, str) or not client_id:
            raise OAuthError("the client registration returned no client id")
        if isinstance(secret, str):
            self.context.on_secret(secret)
        registration = {
            "client_id": client_id,
            **({"client_secret": secret} if isinstance(secret, str) else {}),
            **(
                {"token_endpoint_auth_method": answer["token_endpoint_auth_method"]}
                if isinstance(answer.get("token_endpoint_auth_method"), str)
                else {}
            ),
        }
        self.entry = {**self.entry, "issuer": server.issuer, "registration": registration}
        return client_id, secret if isinstance(secret, str) else None, registration

    async def authorize(self, challenge: Challenge) -> None:
        self.authorizations += 1
        async with self._client() as client:
            server, resource_scopes = await self._discover(client, challenge)
            callback, listener, redirect_uri = await self._listen()
            try:
                client_id, secret, registered = await self._client_identity(
                    client, server, redirect_uri
                )
                pkce = Pkce.new()
                callback.state = pkce.state
                url = authorization_url(
                    server,
                    client_id,
                    redirect_uri,
                    pkce,
                    canonical_resource(self.server_url),
                    scopes_to_request(challenge, resource_scopes, server),
                )
                self._open(url)
                try:
                    code = await asyncio.wait_for(callback.code, self.context.authorization_timeout)
                except TimeoutError:
                    raise OAuthError(
                        f"no authorization within {self.context.authorization_timeout:g} s"
                    ) from None
            finally:
                listener.close()
            method = token_method(registered, server, secret is not None)
            headers, form = client_auth(method, client_id, secret)
            body = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": pkce.verifier,
                "resource": canonical_resource(self.server_url),
                **form,
            }
            await self.token_request(client, server, body, headers, method, client_id, secret)

    async def refresh(self) -> None:
        """A new access token from the refresh token, host-side (no browser)."""
        tokens = self.tokens
        if tokens is None or not tokens.refresh_token:
            raise OAuthError("no refresh token")
        endpoint = self.entry.get("token_endpoint")
        client_id = self.entry.get("client_id")
        if not isinstance(endpoint, str) or not isinstance(client_id, str):
            raise OAuthError("the token endpoint is not known")
        secret = self.entry.get("client_secret")
        secret = secret if isinstance(secret, str) else None
        method = str(self.entry.get("token_method") or "none")
        headers, form = client_auth(method, client_id, secret)
        body = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": canonical_resource(self.server_url),
            **form,
        }
        server = AuthServer(endpoint, endpoint, endpoint)
        async with self._client() as client:
            await self.token_request(client, server, body, headers, method, client_id, secret)

    async def token_request(
        self,
        client: httpx.AsyncClient,
        server: AuthServer,
        body: Mapping[str, str],
        headers: Mapping[str, str],
        method: str,
        client_id: str,
        secret: str | None,
    ) -> None:
        status, answer = await self._json(
            client,
            "POST",
            server.token_endpoint,
            content=urlencode(body).encode(),
            headers={**headers, "content-type": "application/x-www-form-urlencoded"},
        )
        if status != 200:
            error = answer.get("error") if isinstance(answer, dict) else None
            shown = f": {str(error)[:60]}" if isinstance(error, str) else ""
            raise OAuthError(f"the token request was refused (HTTP {status}{shown})")
        tokens = parse_tokens(answer, time.time(), self.tokens)
        self.context.on_secret(tokens.access_token)
        if tokens.refresh_token:
            self.context.on_secret(tokens.refresh_token)
        self.tokens = tokens
        self.entry = {
            **self.entry,
            "url": self.server_url,
            "token_endpoint": server.token_endpoint,
            "client_id": client_id,
            "token_method": method,
            **({"client_secret": secret} if secret else {}),
            "tokens": {
                "access_token": tokens.access_token,
                "refresh_token": tokens.refresh_token,
                "expires_at": tokens.expires_at,
            },
        }
        self.store.save(self.name, self.entry)

    # ---- the browser and the callback ------------------------------------------------------
    def _open(self, url: str) -> None:
        browser = self.context.environ.get("BROWSER", "")
        try:
            argv = shlex.split(browser)
        except ValueError:
            argv = []
        if argv:
            try:
                subprocess.Popen(  # noqa: S603 - the person's own browser command, no shell
                    [*argv, url],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=dict(self.context.environ),
                    start_new_session=True,
                )
                self.context.notify(f"Opened your browser to authorize MCP server {self.name}.")
                return
            except OSError:
                pass
        self.context.notify(
            f"To authorize MCP server {self.name}, open this URL in your browser:\n  {url}\n"
            f"Waiting up to {self.context.authorization_timeout:g} s."
        )

    async def _listen(self) -> tuple[_Callback, asyncio.Server, str]:
        callback = _Callback(state="")

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = await asyncio.wait_for(reader.readline(), 5.0)
                parts = line.decode("latin-1", "replace").split()
                target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
                query = parse_qs(target.query) if target and target.path == CALLBACK_PATH else {}
                code, state = query.get("code", [""])[0], query.get("state", [""])[0]
                if code and state and state == callback.state and not callback.code.done():
                    callback.code.set_result(code)
                    writer.write(_DONE_PAGE)
                else:
                    writer.write(_BAD_PAGE)
                await writer.drain()
            except (OSError, TimeoutError, ValueError):
                pass
            finally:
                writer.close()

        listener = await asyncio.start_server(handle, "127.0.0.1", 0, limit=8192)
        port = listener.sockets[0].getsockname()[1]
        return callback, listener, f"http://127.0.0.1:{port}{CALLBACK_PATH}"


def forget_tokens(environ: Mapping[str, str], name: str) -> None:
    """Remove a server's tokens and registration (when the server is removed)."""
    TokenStore(environ).forget(name)
