"""Streamable HTTP client transport over httpx, written to the host rules.

Strategy: one `httpx.AsyncClient` per server, built so the rules hold by construction:
- NET-1: the URL is checked (`config.url_refusal`) before any socket is opened.
- NET-2: `verify=` an SSL context from certifi plus the system store plus the extra CA file.
- NET-3: `follow_redirects=False`; any 3xx is an error, at connect and at call time. The
  configured headers are sent only on requests to this server's URL, so they never reach
  another destination.
- NET-4: bodies are read as raw streams and abandoned past 1 MiB per JSON response or per
  SSE message; `Accept-Encoding: identity` so a compressed bomb cannot grow behind the count.
- RETRY-1: `AsyncHTTPTransport(retries=0)` and this module never resends a request.
- `trust_env=False`: no proxy from the environment ever sees a request or its headers.
- CRED-4: 401/403 become a reason that says OAuth is not supported and suggests a static
  header, without the value.
- Headers HTTP cannot carry (a hand-edited configuration) make the server unavailable with
  a reason, before any request (`config.header_problem`).
Why not the SDK's client: see `transports/__init__.py`.

SSE resumption (the 2025-11-25 revision's polling): a server may answer a request with an
event stream, send a priming event (an event id, a `retry` field, no data) and close the
stream before the response; the response then comes on a GET to the same URL carrying
`Last-Event-ID`. So when a request's stream ends, gracefully or not, before its response,
and the stream gave an event id, the transport waits the `retry` the server asked for
(at most MAX_RETRY_SECONDS; DEFAULT_RETRY_SECONDS without one) and resumes with a GET, at
most MAX_RESUMPTIONS times. Resuming is not resending: the request itself is POSTed once
(RETRY-1). Whatever ends the wait (a stream without an id to resume from, a GET the server
refuses, the attempts spent) is a TransportError that says the server may have acted, so
a call ends `unknown`; the call and connect timeouts, applied by the callers, bound it all.
"""

from __future__ import annotations

import asyncio
import functools
import http.cookiejar
import os
import re
import ssl
import sys
import threading
from collections.abc import AsyncIterator, Collection, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import certifi
import httpcore
import httpx

from mcp_host_conformance.reference_client.config import header_problem, url_refusal
from mcp_host_conformance.reference_client.transports import (
    MAX_MESSAGE_BYTES,
    McpError,
    MessageTooLarge,
    ProtocolError,
    TransportError,
    encode,
    parse_json,
)
from mcp_host_conformance.reference_client.transports.guarded import GuardedBackend
from mcp_host_conformance.reference_client.transports.network import AsyncioBackend
from mcp_host_conformance.reference_client.transports.sse import SseParser

ACCEPT = "application/json, text/event-stream"
CLOSE_TIMEOUT = 2.0  # seconds for the DELETE that ends the session; best effort
MAX_RESUMPTIONS = 8  # GETs with Last-Event-ID for one request
DEFAULT_RETRY_SECONDS = 1.0  # when the stream named no `retry`
MAX_RETRY_SECONDS = 60.0  # a larger `retry` is waited this long (the timeouts bound it anyway)
_SESSION_ID = re.compile(r"^[\x21-\x7e]{1,256}$")

CREDENTIALS_REJECTED = (
    "the server rejected the credentials (HTTP {status}). OAuth is not supported by this "
    "host; configure a static header instead, such as an API key "
    "(mcp add NAME URL --header Authorization)"
)


class _TrustOnFirstHandshake(ssl.SSLContext):
    """A verifying context (as `ssl.create_default_context`) that loads certifi's bundle and
    the system store when first needed, not when made.

    Why: the model client and every server transport need a context when they are built,
    most runs talk plain HTTP to a local model and local servers, and the two loads cost
    ~0.1 s of CPU, most of a restarted host's start beyond its imports. Verification is the
    same: nothing is wrapped before the stores are loaded (NET-2). An HTTPS server's or
    model's client loads them when it is made (`trust_ready`), out of any connect timeout:
    under load the loading took longer than a scaled connect timeout (seen: a trusted TLS
    server reported unavailable)."""

    _loaded = False
    _loading = threading.Lock()

    def load_stores(self) -> None:
        """Load certifi and the system store now (once), e.g. before a timed connect."""
        with self._loading:
            if not self._loaded:
                self.load_verify_locations(cafile=certifi.where())
                self.load_default_certs()
                self._loaded = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_stores()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_stores()
        return super().wrap_bio(*args, **kwargs)


@functools.lru_cache(maxsize=8)
def ssl_context(ca_file: Path | None = None) -> ssl.SSLContext:
    """Certificate verification on (NET-2): certifi + system store + an extra CA file.

    Cached: a context's stores are loaded once a process, not once a server; certifi and the
    system store when first needed (`_TrustOnFirstHandshake`), the extra CA file now, so a
    file that cannot be used is reported as such.
    """
    context = _TrustOnFirstHandshake(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, hostname checked
    keylog = os.environ.get("SSLKEYLOGFILE")  # as ssl.create_default_context
    if keylog and not sys.flags.ignore_environment:
        context.keylog_filename = keylog
    if ca_file is not None:
        try:
            context.load_verify_locations(cafile=str(ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(
                f"cannot use the CA file {ca_file}: {exc.__class__.__name__}", maybe_acted=False
            ) from None
    return context


def trust_ready(url: str, ca_file: Path | None = None) -> None:
    """For an HTTPS `url`, load the trust stores of its context now, so that the first
    handshake's loading does not come out of a connect timeout (an unusable CA file is left
    for the connection to report)."""
    if urlsplit(url).scheme.lower() != "https":
        return
    try:
        context = ssl_context(ca_file)
    except TransportError:
        return
    if isinstance(context, _TrustOnFirstHandshake):  # a broken client's may be another
        context.load_stores()


class NoCookies(http.cookiejar.CookieJar):
    """A jar that keeps nothing: a server's cookies are never sent back (MCP sessions go by
    Mcp-Session-Id), and httpx's jar parsed every response's headers for them."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None


def http_transport(
    ca_file: Path | None = None, refuse_private: Collection[str] | None = None
) -> httpx.AsyncHTTPTransport:
    """httpx's transport that never retries and connects through `network.AsyncioBackend`
    (asyncio's streams, not anyio's), or through `guarded.GuardedBackend` when
    `refuse_private` is given (profile private-address-refusal): it refuses private and
    internal addresses but these exact allowed ones (PRIV-1)."""
    transport = httpx.AsyncHTTPTransport(verify=ssl_context(ca_file), retries=0, trust_env=False)
    # httpx takes no network backend, so its pool is rebuilt with the same settings and ours
    # (httpx's own pool stays unused and is never opened).
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=ssl_context(ca_file),
        max_connections=100,  # httpx's default limits
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        retries=0,
        network_backend=AsyncioBackend()
        if refuse_private is None
        else GuardedBackend(refuse_private),
    )
    return transport


def http_client(
    ca_file: Path | None = None, refuse_private: Collection[str] | None = None
) -> httpx.AsyncClient:
    """An httpx client that never retries, never redirects, keeps no cookies and ignores
    proxy variables (`http_transport`)."""
    return httpx.AsyncClient(
        transport=http_transport(ca_file, refuse_private),
        follow_redirects=False,
        trust_env=False,
        timeout=httpx.Timeout(None),
        cookies=NoCookies(),
    )


def status_error(status: int) -> TransportError | None:
    """The error for an HTTP status that is not a usable answer, or None (pure)."""
    if 300 <= status < 400:
        return TransportError(
            f"the server answered with a redirect (HTTP {status}); redirects are not followed",
            maybe_acted=False,
        )
    if status in (401, 403):
        return TransportError(CREDENTIALS_REJECTED.format(status=status), maybe_acted=False)
    if 400 <= status < 500:
        return TransportError(f"the server refused the request (HTTP {status})", maybe_acted=False)
    if status >= 500:
        return TransportError(f"the server failed (HTTP {status})")
    if status < 200:
        return TransportError(f"unexpected HTTP status {status}")
    return None


def same_id(message: Any, request_id: Any) -> bool:
    # Type check too: in Python True == 1, and "1" must not answer request 1.
    if not isinstance(message, dict) or "id" not in message:
        return False
    return type(message["id"]) is type(request_id) and message["id"] == request_id


def pick_response(value: Any, request_id: Any) -> dict[str, Any] | None:
    """The response to `request_id` in a decoded body (a message or a batch), or None."""
    for message in value if isinstance(value, list) else [value]:
        if same_id(message, request_id) and ("result" in message or "error" in message):
            return message
    return None


def retry_delay(retry_ms: int | None) -> float:
    """Seconds to wait before resuming a stream: the server's `retry`, within bounds (pure)."""
    if retry_ms is None:
        return DEFAULT_RETRY_SECONDS
    return min(retry_ms / 1000.0, MAX_RETRY_SECONDS)


def headers_refusal(headers: Mapping[str, str]) -> str | None:
    """Why the configured headers cannot be sent, or None (the value is never quoted)."""
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem:
            return f"{problem}; remove the server and add it again"
    return None


class HttpTransport:
    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        ca_file: Path | None = None,
        refuse_private: Collection[str] | None = None,
        oauth: Any = None,
    ) -> None:
        self.url = url
        self.destination = url
        self._headers = dict(headers)
        self._ca_file = ca_file
        self._refuse_private = refuse_private
        # Profile oauth: an `oauth_flow.OAuthFlow` that gives the Authorization header and
        # answers 401/403 challenges (authorize, refresh, step up); None: static headers only.
        self._oauth = oauth
        self._client: httpx.AsyncClient | None = None
        self._session_id: str | None = None
        trust_ready(url, ca_file)  # made before the timed connect, so loaded out of its time
        self._protocol_version: str | None = None

    # ---- lifecycle --------------------------------------------------------------------
    async def connect(self) -> None:
        refusal = url_refusal(self.url) or headers_refusal(self._headers)
        if refusal:
            raise TransportError(refusal, maybe_acted=False)
        self._client = http_client(self._ca_file, self._refuse_private)

    def set_protocol_version(self, version: str) -> None:
        self._protocol_version = version

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            if self._session_id is not None:
                try:
                    await client.delete(
                        self.url, headers=self._request_headers(), timeout=CLOSE_TIMEOUT
                    )
                except (httpx.HTTPError, OSError):
                    pass  # the server may be gone already; ending the session is a courtesy
        finally:
            await client.aclose()

    # ---- messages ---------------------------------------------------------------------
    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        request_id = message.get("id")
        stream = SseParser(limit=MAX_MESSAGE_BYTES)
        response = await self._post(message)
        try:
            self._check(response)
            if response.status_code == 202:
                raise ProtocolError("the server accepted the request but sent no response")
            kind = _content_type(response)
            if kind == "application/json":
                try:
                    body = await self.read_body(response)
                except httpx.HTTPError as exc:
                    raise TransportError(
                        f"connection lost while reading the response ({type(exc).__name__})"
                    ) from None
                found = pick_response(parse_json(body, "response"), request_id)
                if found is None:
                    raise ProtocolError("the server's response does not answer the request")
                return found
            if kind != "text/event-stream":
                raise ProtocolError(
                    f"the server answered with an unexpected content type {kind[:60]!r}"
                )
            found, lost = await self._read_events(response, request_id, stream)
            if found is not None:
                return found
        finally:
            await response.aclose()
        return await self.resume_stream(request_id, stream, lost)

    async def _read_events(
        self, response: httpx.Response, request_id: Any, stream: SseParser
    ) -> tuple[dict[str, Any] | None, str | None]:
        """The response to `request_id` from an event stream, or None and why the stream
        ended without it (None when it was closed gracefully)."""
        stream.restart()
        try:
            async for chunk in response.aiter_raw():
                for event in stream.feed(chunk):
                    if event.event != "message" or not event.data.strip():
                        continue  # a priming event, or one of another type
                    found = pick_response(parse_json(event.data, "SSE message"), request_id)
                    if found is not None:
                        return found, None
        except httpx.HTTPError as exc:
            return None, f"connection lost while reading the response ({type(exc).__name__})"
        return None, None

    async def resume_stream(
        self, request_id: Any, stream: SseParser, lost: str | None
    ) -> dict[str, Any]:
        """Resume the request's stream with GET + Last-Event-ID until its response comes."""
        ended = lost or "the event stream ended without a response"
        for _attempt in range(MAX_RESUMPTIONS):
            event_id = stream.last_event_id
            if event_id is None:
                raise TransportError(f"{ended}, and the server gave no event id to resume it")
            await asyncio.sleep(retry_delay(stream.retry_ms))
            response = await self._get_stream(event_id)
            try:
                found, lost = await self._read_events(response, request_id, stream)
            finally:
                await response.aclose()
            if found is not None:
                return found
            ended = lost or "the resumed event stream ended without a response"
        raise TransportError(
            f"{ended}; the stream was resumed {MAX_RESUMPTIONS} times without the response"
        )

    async def _get_stream(self, event_id: str) -> httpx.Response:
        """The GET that resumes a stream. Any failure means the server may have acted."""
        if self._client is None:
            raise TransportError("not connected")
        headers = self._request_headers()
        del headers["content-type"]
        headers["accept"] = "text/event-stream"
        headers["last-event-id"] = event_id
        request = self._client.build_request("GET", self.url, headers=headers)
        try:
            response = await self._client.send(request, stream=True)
        except (httpx.HTTPError, OSError) as exc:
            raise TransportError(
                f"the response stream could not be resumed: connection failed "
                f"({type(exc).__name__})"
            ) from None
        problem: str | None = None
        if response.status_code != 200:
            problem = (
                f"the server refused to resume the response stream (HTTP {response.status_code})"
            )
        elif _content_type(response) != "text/event-stream":
            problem = "the server resumed the response stream with something else than events"
        else:
            try:
                self._check(response)
            except McpError as exc:
                problem = str(exc)
        if problem is not None:
            await response.aclose()
            raise TransportError(problem)
        return response

    async def notify(self, message: dict[str, Any]) -> None:
        response = await self._post(message)
        try:
            self._check(response)
        finally:
            await response.aclose()

    # ---- internals --------------------------------------------------------------------
    def _request_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        if self._oauth is not None:
            headers.update(self._oauth.header())
        headers.update(
            {"accept": ACCEPT, "content-type": "application/json", "accept-encoding": "identity"}
        )
        if self._session_id is not None:
            headers["mcp-session-id"] = self._session_id
        if self._protocol_version is not None:
            headers["mcp-protocol-version"] = self._protocol_version
        return headers

    async def _post(self, message: dict[str, Any]) -> httpx.Response:
        response = await self.send_post(message)
        # Profile oauth: a 401 or 403 challenge is the authorization's to answer; the request
        # is sent again only once it says so (never after a refusal the server acted on:
        # 401/403 mean it did not act), a few rounds at most (step-up, then the call).
        rounds = 0
        while self._oauth is not None and response.status_code in (401, 403) and rounds < 3:
            rounds += 1
            challenge = response.headers.get("www-authenticate")
            await response.aclose()
            from mcp_host_conformance.reference_client.oauth import OAuthError

            try:
                again = await self._oauth.on_challenge(response.status_code, challenge)
            except OAuthError as exc:
                raise TransportError(
                    f"the OAuth authorization failed: {exc}", maybe_acted=False
                ) from None
            if not again:
                raise TransportError(
                    f"the server refused the authorization (HTTP {response.status_code})",
                    maybe_acted=False,
                )
            response = await self.send_post(message)
        return response

    async def send_post(self, message: dict[str, Any]) -> httpx.Response:
        """One POST of `message`, its answer as it came (streamed, no status checked): a
        connect failure is a TransportError that did not act, a later one may have."""
        if self._client is None:
            raise TransportError("not connected", maybe_acted=False)
        request = self._client.build_request(
            "POST", self.url, content=encode(message), headers=self._request_headers()
        )
        try:
            return await self._client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            host = urlsplit(self.url).netloc
            raise TransportError(
                f"cannot connect to {host}: {_reason(exc)}", maybe_acted=False
            ) from None
        except (httpx.HTTPError, OSError) as exc:
            raise TransportError(f"connection lost ({type(exc).__name__})") from None

    def _check(self, response: httpx.Response) -> None:
        if self._oauth is not None and response.status_code in (401, 403):
            raise TransportError(
                f"the server refused the authorization (HTTP {response.status_code})",
                maybe_acted=False,
            )
        error = status_error(response.status_code)
        if error is not None:
            raise error
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ProtocolError("the server sent a compressed body although identity was asked for")
        session_id = response.headers.get("mcp-session-id")
        if session_id is not None and self._session_id is None:
            if not _SESSION_ID.match(session_id):
                raise ProtocolError("the server sent an invalid Mcp-Session-Id")
            self._session_id = session_id

    async def read_body(self, response: httpx.Response) -> bytes:
        """A JSON answer's whole body, at most 1 MiB (NET-4, MessageTooLarge past it). A zoo
        seam: the size clients watch what it reads."""
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_MESSAGE_BYTES:
            raise MessageTooLarge("response")
        chunks: list[bytes] = []
        total = 0
        async for chunk in response.aiter_raw():
            total += len(chunk)
            if total > MAX_MESSAGE_BYTES:
                raise MessageTooLarge("response")
            chunks.append(chunk)
        return b"".join(chunks)


def _content_type(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


async def sse_messages(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The data of each `message` event of an SSE stream, at most 1 MiB each (NET-4).

    A line or event past the limit raises MessageTooLarge before it is buffered whole; an
    incomplete event at the end of the stream is dropped (as the SSE standard says).
    """
    parser = SseParser(limit=MAX_MESSAGE_BYTES)
    async for chunk in chunks:
        for event in parser.feed(chunk):
            if event.event == "message":
                yield event.data
