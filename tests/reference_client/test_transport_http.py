"""The Streamable HTTP transport against the HTTP mock and tiny raw servers (NET-*, CRED-4)."""

from __future__ import annotations

import json
import socket
import ssl
from pathlib import Path

import pytest

from mcp_host_conformance.mocks.http_server import HttpMock
from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool
from mcp_host_conformance.reference_client.rpc import RpcSession
from mcp_host_conformance.reference_client.transports import MessageTooLarge, TransportError
from mcp_host_conformance.reference_client.transports.http import (
    HttpTransport,
    sse_messages,
    ssl_context,
)
from tests.reference_client.engine_support import RawHttpServer, http_answer, run

SECRET = "tok-Zq81-secret-value"


def spec(**misbehaviour) -> ServerSpec:
    return ServerSpec(name="docs", tools=[Tool("query")], misbehaviour=Misbehaviour(**misbehaviour))


async def discover_with(transport: HttpTransport) -> list[dict]:
    session = RpcSession(transport)
    try:
        await transport.connect()
        await session.initialize()
        return await session.list_tools()
    finally:
        await session.close()


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_initialize_list_and_close_with_session(mode: str) -> None:
    s = spec()
    s.response_mode = mode
    with HttpMock(s) as mock:
        tools = run(discover_with(HttpTransport(mock.url, {"X-Api-Key": SECRET})))
        assert [t["name"] for t in tools] == ["query"]
        assert mock.journal.methods()[:3] == [
            "initialize",
            "notifications/initialized",
            "tools/list",
        ]
        http = mock.journal.entries(kind="http")
        assert all(e.headers.get("x-api-key") == SECRET for e in http)
        assert http[-1].http_method == "DELETE"
        post = http[0]
        assert (
            "text/event-stream" in post.headers["accept"]
            and "application/json" in post.headers["accept"]
        )
        # a session id came back and is sent from then on
        assert "mcp-session-id" in http[1].headers


def test_redirect_is_an_error_and_never_followed() -> None:
    with HttpMock(spec()) as target:
        with HttpMock(spec(redirect_status=307, redirect_to=target.url)) as mock:
            with pytest.raises(TransportError, match="redirect"):
                run(discover_with(HttpTransport(mock.url, {"Authorization": SECRET})))
        assert target.journal.is_empty()


def test_redirect_at_call_time_is_not_followed() -> None:
    with HttpMock(spec()) as target:
        with HttpMock(
            spec(redirect_status=302, redirect_to=target.url, redirect_at="tools/call")
        ) as mock:

            async def go() -> None:
                transport = HttpTransport(mock.url, {})
                session = RpcSession(transport)
                await transport.connect()
                await session.initialize()
                try:
                    with pytest.raises(TransportError, match="redirect") as caught:
                        await session.call_tool("query", {})
                    assert caught.value.maybe_acted is False
                finally:
                    await session.close()

            run(go())
        assert target.journal.is_empty()


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_credentials_say_oauth_unsupported(status: int) -> None:
    with HttpMock(spec(reject_status=status)) as mock:
        with pytest.raises(TransportError) as caught:
            run(discover_with(HttpTransport(mock.url, {"Authorization": f"Bearer {SECRET}"})))
    message = str(caught.value)
    assert "OAuth is not supported" in message and "API key" in message
    assert SECRET not in message


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_oversized_discovery_response_is_refused(mode: str) -> None:
    s = spec(oversize_at="tools/list")
    s.response_mode = mode
    with HttpMock(s) as mock:
        with pytest.raises(MessageTooLarge):
            run(discover_with(HttpTransport(mock.url, {})))


def test_plain_http_to_a_remote_host_is_refused_before_connecting() -> None:
    transport = HttpTransport("http://example.com/mcp", {"Authorization": SECRET})
    with pytest.raises(TransportError, match="HTTPS") as caught:
        run(transport.connect())
    assert caught.value.maybe_acted is False


def test_untrusted_certificate_is_refused_and_extra_ca_is_trusted() -> None:
    with HttpMock(spec(), tls="untrusted") as mock:
        with pytest.raises(TransportError, match="(?i)certificate"):
            run(discover_with(HttpTransport(mock.url, {}, ca_file=mock.ca_file)))
    with HttpMock(spec(), tls="trusted") as mock:
        with pytest.raises(TransportError):
            run(discover_with(HttpTransport(mock.url, {})))
        assert [
            t["name"] for t in run(discover_with(HttpTransport(mock.url, {}, ca_file=mock.ca_file)))
        ] == ["query"]


def test_public_trust_stores_are_loaded_at_the_first_handshake_not_before() -> None:
    """certifi and the system store cost ~0.1 s of CPU a process: a host that only talks plain
    HTTP never loads them, and one that does TLS has them in place before its first handshake
    (NET-2: the extra CA file is loaded at once, so a bad file is still reported early)."""
    make = ssl_context.__wrapped__  # a fresh context, not the process's cached one
    with HttpMock(spec(), tls="trusted") as mock:
        fresh = make(None)
        assert fresh.cert_store_stats()["x509_ca"] == 0
        with socket.create_connection(("127.0.0.1", mock.port), timeout=10) as raw:
            with pytest.raises(ssl.SSLCertVerificationError):  # the mock's CA is not public
                fresh.wrap_socket(raw, server_hostname="127.0.0.1")
        public = fresh.cert_store_stats()["x509_ca"]
        assert public > 50, "certifi's bundle was not loaded before the handshake"

        with_extra = make(mock.ca_file)
        assert with_extra.cert_store_stats()["x509_ca"] == 1  # the extra CA only, for now
        with_extra.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="127.0.0.1")
        assert with_extra.cert_store_stats()["x509_ca"] == public + 1
    with pytest.raises(TransportError, match="CA file"):
        make(Path("/nonexistent/ca.pem"))


def test_an_https_server_s_transport_loads_the_stores_before_its_timed_connect() -> None:
    """Loading the stores inside a connect timeout made a trusted TLS server unavailable under
    load: an HTTPS server's transport loads them when made; a plain HTTP one never does."""
    ca_file = Path(__file__)  # any path: a context of its own in the cache (never loaded here)
    ssl_context.cache_clear()
    try:
        HttpTransport("http://127.0.0.1:9/mcp", {}, ca_file=None)
        assert ssl_context(None).cert_store_stats()["x509_ca"] == 0
        HttpTransport("HTTPS://127.0.0.1:9/mcp", {}, ca_file=None)
        assert ssl_context(None).cert_store_stats()["x509_ca"] > 50
        HttpTransport("https://127.0.0.1:9/mcp", {}, ca_file=ca_file)  # unusable: left to connect
    finally:
        ssl_context.cache_clear()


def test_connection_reset_after_call_is_maybe_acted() -> None:
    with HttpMock(spec(drop_call="reset")) as mock:

        async def go() -> None:
            transport = HttpTransport(mock.url, {})
            session = RpcSession(transport)
            await transport.connect()
            await session.initialize()
            try:
                with pytest.raises(TransportError) as caught:
                    await session.call_tool("query", {"q": 1})
                assert caught.value.maybe_acted is True
            finally:
                await session.close()

        run(go())
        assert mock.journal.count("tools/call") == 1


def test_proxy_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    with HttpMock(spec()) as mock:
        assert run(discover_with(HttpTransport(mock.url, {})))


def test_compressed_body_is_refused() -> None:
    def respond(request: bytes) -> bytes:
        return http_answer(200, b"\x1f\x8b", extra="content-encoding: gzip\r\n")

    with RawHttpServer(respond) as server:
        with pytest.raises(Exception, match="compressed"):
            run(discover_with(HttpTransport(server.url, {})))


def test_json_response_with_huge_content_length_is_refused_early() -> None:
    def respond(request: bytes) -> bytes:
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 9999999\r\n\r\n{"
        )

    with RawHttpServer(respond) as server:
        with pytest.raises(MessageTooLarge):
            run(discover_with(HttpTransport(server.url, {})))


# ---- the SSE reader --------------------------------------------------------------------------


async def _collect(chunks: list[bytes]) -> list[bytes]:
    async def source():
        for chunk in chunks:
            yield chunk

    return [m async for m in sse_messages(source())]


def test_sse_events_split_across_chunks_and_line_endings() -> None:
    message = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode()
    stream = (
        b": comment\r\nevent: message\r\ndata: " + message + b"\r\n\r\nevent: other\ndata: x\n\n"
    )
    chunks = [stream[i : i + 3] for i in range(0, len(stream), 3)]
    assert run(_collect(chunks)) == [message]


def test_sse_multi_line_data_and_incomplete_event_dropped() -> None:
    assert run(_collect([b"data: a\ndata: b\n\ndata: never-finished\n"])) == [b"a\nb"]


def test_sse_message_over_limit_raises_before_buffering_everything() -> None:
    big = [b"data: " + b"x" * (512 * 1024) + b"\n"] * 3
    with pytest.raises(MessageTooLarge):
        run(_collect(big))
    with pytest.raises(MessageTooLarge):
        run(_collect([b"data: " + b"y" * (256 * 1024)] * 5))  # one line without an end
