"""Broken clients for NET (connections)."""

from __future__ import annotations

import functools
import ssl
from urllib.parse import urlsplit

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    Seam,
    constant,
    pure,
    replaced,
    same_until,
)

_TRANSPORT = "mcp_host_conformance.reference_client.transports"
_HTTP = f"{_TRANSPORT}.http"
_STDIO = f"{_TRANSPORT}.stdio"
# Where `url_refusal` is looked up: at connection and in `mcp add`.
_URL_REFUSAL = (
    f"{_HTTP}.url_refusal",
    "mcp_host_conformance.reference_client.server_commands.url_refusal",
)


# ---- NET-1 ------------------------------------------------------------------------------------


@pure
def _case_sensitive_scheme(original):
    def url_refusal(url):
        # "Plain HTTP" is decided by the text `http://`; `HTTP://host` passes as if secure.
        if url.startswith("http://"):
            return original(url)
        from mcp_host_conformance.reference_client.config import url_problem

        return url_problem(url)

    return url_refusal


@pure
def _only_127_0_0_1(original):
    def url_refusal(url):
        refusal = original(url)
        parts = urlsplit(url)
        if refusal is None and parts.scheme.lower() == "http":
            if parts.hostname not in ("localhost", "127.0.0.1"):
                return "plain HTTP is refused for a non-local host; use HTTPS"
        return refusal

    return url_refusal


# ---- NET-2 ------------------------------------------------------------------------------------


@replaced(f"{_HTTP}.ssl_context")
def _unverified(original):
    del original

    @functools.lru_cache(maxsize=8)  # as the original: a context per server is slow to load
    def ssl_context(ca_file=None):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    return ssl_context


_NO_CHECK_TIME = 0x200000  # OpenSSL's X509_V_FLAG_NO_CHECK_TIME (Python names no constant)


def _verified_but(change):
    """An `ssl_context` that verifies, then has `change(context)` applied (a fresh context:
    the reference caches the one it shares)."""

    def make(original):
        @functools.lru_cache(maxsize=8)  # loading the CA bundles is slow: once, as the original
        def ssl_context(ca_file=None):
            context = original.__wrapped__(ca_file)
            change(context)
            return context

        return ssl_context

    return make


def _no_hostname_check(context):
    context.check_hostname = False  # the chain is still verified: any name will do


def _no_expiry_check(context):
    context.verify_flags |= _NO_CHECK_TIME  # "clocks in containers are often wrong"


# ---- NET-3 ------------------------------------------------------------------------------------


def _answer_with_location(outcome, client, request, **options) -> bool:
    """An HTTP answer that names a Location: the only one a client following redirects (or
    taking a cross-origin Location out) treats otherwise. Every httpx client's, the
    reference's own included (a superset of the MCP clients' answers)."""
    kind, response = outcome
    return kind == "return" and "location" in response.headers


@same_until("httpx.AsyncClient.send", _answer_with_location)
@replaced(f"{_HTTP}.http_client")
def _follow_redirects(original):
    def http_client(*args, **kwargs):
        client = original(*args, **kwargs)
        client.follow_redirects = True
        return client

    return http_client


@same_until("httpx.AsyncClient.send", _answer_with_location)
@replaced(f"{_HTTP}.http_client")
def _follow_same_origin(original):
    def http_client(*args, **kwargs):
        client = original(*args, **kwargs)
        client.follow_redirects = True

        async def keep_cross_origin(response):
            # Only a redirect to another origin is refused (the MCP SDK's policy): without
            # its Location, httpx hands the 3xx back instead of following it.
            location = response.headers.get("location")
            if location is None:
                return
            target = response.request.url.join(location)
            if (target.scheme, target.host, target.port) != (
                response.request.url.scheme,
                response.request.url.host,
                response.request.url.port,
            ):
                del response.headers["location"]

        client.event_hooks["response"].append(keep_cross_origin)
        return client

    return http_client


# ---- NET-4 ------------------------------------------------------------------------------------

_LIMIT = 1024 * 1024
# The size clients' limits (1 MB, 4 MiB, none) all read a message well under 1 MB as the
# reference does: they act only where something that large was read (`same_until`), which
# is where the reference read it (a line, a body, an SSE event or line) or refused it.
_NEAR = 1_000_000 - 4096
_SSE_FEED = f"{_TRANSPORT}.sse.SseParser.feed"
_READ_BODY = f"{_HTTP}.HttpTransport.read_body"
_READ_LINE = f"{_STDIO}.StdioTransport.read_line"


def _too_large(outcome) -> bool:
    from mcp_host_conformance.reference_client.transports import MessageTooLarge

    kind, value = outcome
    return kind == "raise" and isinstance(value, MessageTooLarge)


def _fed_near_limit(outcome, parser, chunk) -> bool:
    """An SSE feed that refused a message, dispatched one that large, or holds that much of
    a line or an event (the parser's own limit is checked there and nowhere else)."""
    if outcome[0] == "raise":
        return True
    return parser.held > _NEAR or any(len(event.data) + 1 > _NEAR for event in outcome[1])


def _body_near_limit(outcome, transport, response) -> bool:
    length = response.headers.get("content-length", "")
    if _too_large(outcome) or (length.isdigit() and int(length) > _NEAR):
        return True
    return outcome[0] == "return" and len(outcome[1]) > _NEAR


def _line_near_limit(outcome, transport) -> bool:
    return _too_large(outcome) or (outcome[0] == "return" and len(outcome[1]) > _NEAR)


def _message_limit(module: str, value: int):
    """The seam of `module`'s MAX_MESSAGE_BYTES, the same until a message near it is read."""
    seam = constant(f"{module}.MAX_MESSAGE_BYTES", value)
    if module == _STDIO:
        return same_until(_READ_LINE, _line_near_limit)(seam)
    return same_until(_READ_BODY, _body_near_limit)(same_until(_SSE_FEED, _fed_near_limit)(seam))


@pure
def _characters_counted(original):
    from mcp_host_conformance.reference_client.transports import MessageTooLarge

    def parse_json(data, what="message"):
        # The limit applied to the decoded text: characters, not bytes.
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        if len(text) > _LIMIT:
            raise MessageTooLarge()
        return original(data, what)

    return parse_json


CLIENTS = [
    BrokenClient(
        "allows-plain-http",
        "Accepts plain-HTTP URLs to any host.",
        {"NET-1"},
        tuple(Seam(target, pure(lambda original: lambda url: None)) for target in _URL_REFUSAL),
        target="NET-1",
    ),
    BrokenClient(
        "skips-certificate-check",
        "Does not verify HTTPS certificates of MCP servers.",
        {"NET-2"},
        (_unverified,),
    ),
    BrokenClient(
        "follows-redirects",
        "Lets its HTTP library follow redirects.",
        # APR-1, RETRY-1: a call redirected reaches a second server, unapproved (monitors calls-
        # wait-for-approval, sent-once)
        {
            "NET-3",
            "CRED-1",
            "APR-1",
            "RETRY-1",
        },  # CRED-1: the redirect cases check the headers' destinations too
        (_follow_redirects,),
        target="NET-3",
    ),
    BrokenClient(
        "no-message-limit",
        "Reads messages and responses of any size.",
        {"NET-4", "RES-8"},  # RES-8: an oversized call result is then completed
        (_message_limit(_HTTP, 1 << 30), _message_limit(_STDIO, 1 << 30)),
        target="NET-4",
    ),
    BrokenClient(
        "case-sensitive-scheme-check",
        "Refuses plain HTTP to a remote host only when the URL starts with `http://` in lower "
        "case (`HTTP://host` passes).",
        {"NET-1"},
        tuple(Seam(target, _case_sensitive_scheme) for target in _URL_REFUSAL),
    ),
    BrokenClient(
        "loopback-is-127-0-0-1-only",
        "Accepts plain HTTP only for `localhost` and 127.0.0.1 (not 127.0.0.2 or [::1]).",
        {"NET-1"},
        tuple(Seam(target, _only_127_0_0_1) for target in _URL_REFUSAL),
    ),
    BrokenClient(
        "skips-hostname-check",
        "Verifies the certificate chain but not that it names the server's host.",
        {"NET-2"},
        (Seam(f"{_HTTP}.ssl_context", _verified_but(_no_hostname_check)),),
    ),
    BrokenClient(
        "ignores-certificate-expiry",
        "Verifies certificates but not their validity dates (an expired one is accepted).",
        {"NET-2"},
        (Seam(f"{_HTTP}.ssl_context", _verified_but(_no_expiry_check)),),
    ),
    BrokenClient(
        "follows-same-origin-redirects",
        "Refuses redirects to another origin but follows those to the same host and port "
        "(the MCP SDK's behaviour).",
        {"NET-3"},
        (_follow_same_origin,),
    ),
    BrokenClient(
        "counts-characters",
        "Limits each message to 1 MiB of characters of its decoded text, not of bytes.",
        {"NET-4", "RES-8"},  # RES-8: a multi-byte call result over 1 MiB is then completed
        target="NET-4",
        seams=(
            _message_limit(_HTTP, 4 * _LIMIT),
            _message_limit(_STDIO, 4 * _LIMIT),
            Seam(f"{_HTTP}.parse_json", _characters_counted),
            Seam(f"{_STDIO}.parse_json", _characters_counted),
        ),
    ),
    BrokenClient(
        "megabyte-limit",
        "Limits each message to 1 MB (1 000 000 bytes) instead of 1 MiB.",
        {"NET-4", "RES-8"},  # RES-8: a call result near 1 MiB is then refused
        target="NET-4",
        seams=(
            _message_limit(_HTTP, 1_000_000),
            _message_limit(_STDIO, 1_000_000),
        ),
    ),
]
