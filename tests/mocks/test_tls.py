"""The TLS mocks' certificates: the trusted one verifies, each bad one fails in its own way."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from mcp_host_conformance.mocks import tls


def _handshake(kind: str, client: ssl.SSLContext) -> None:
    """A TLS handshake of `client` with a server holding the `kind` certificate."""
    server = tls.server_context(kind)
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def serve() -> None:
            connection, _ = listener.accept()
            try:
                server.wrap_socket(connection, server_side=True).close()
            except (ssl.SSLError, OSError):
                connection.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            with socket.create_connection(listener.getsockname(), timeout=5) as raw:
                client.wrap_socket(raw, server_hostname="127.0.0.1").close()
        finally:
            thread.join(5)


def test_the_trusted_certificate_verifies():
    _handshake("trusted", tls.client_context())


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("untrusted", "unable to get local issuer certificate"),
        ("wrong-host", "IP address mismatch"),
        ("expired", "certificate has expired"),
    ],
)
def test_each_bad_certificate_fails_for_its_own_reason(kind, reason):
    with pytest.raises(ssl.SSLCertVerificationError, match=reason):
        _handshake(kind, tls.client_context())


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="wrong-host"):
        tls.server_context("self-signed")
