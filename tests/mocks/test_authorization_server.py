"""The authorization-server mock answers every step of an OAuth client, and journals it."""

from __future__ import annotations

import httpx
import pytest

from mcp_host_conformance.mocks.authorization_server import (
    AuthorizationServerMock,
    is_oauth_path,
)


@pytest.fixture
def authority():
    with AuthorizationServerMock(resource="http://127.0.0.1:9/mcp") as mock:
        yield mock


def test_the_trail_from_the_challenge_to_the_token(authority):
    assert authority.challenge() == (
        f'Bearer resource_metadata="{authority.url}/.well-known/oauth-protected-resource"'
    )
    with httpx.Client(timeout=5, trust_env=False) as client:
        resource = client.get(authority.metadata_url).json()
        assert resource["resource"] == "http://127.0.0.1:9/mcp"
        (issuer,) = resource["authorization_servers"]
        server = client.get(f"{issuer}/.well-known/oauth-authorization-server").json()
        assert server["code_challenge_methods_supported"] == ["S256"]
        assert client.post(server["registration_endpoint"], json={}).status_code == 201
        assert client.get(server["authorization_endpoint"]).status_code == 200
        assert client.post(server["token_endpoint"], data={}).json() == {"error": "invalid_grant"}
        assert client.get(f"{authority.url}/elsewhere").status_code == 404
    paths = [(e.http_method, e.path) for e in authority.requests()]
    assert paths == [
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-authorization-server"),
        ("POST", "/register"),
        ("GET", "/authorize"),
        ("POST", "/token"),
        ("GET", "/elsewhere"),
    ]


def test_a_challenge_can_carry_an_error(authority):
    assert authority.challenge("insufficient_scope").startswith(
        'Bearer error="insufficient_scope", resource_metadata="'
    )


@pytest.mark.parametrize(
    ("path", "oauth"),
    [
        ("/.well-known/oauth-protected-resource", True),
        ("/.well-known/oauth-protected-resource/mcp", True),
        ("/.well-known/oauth-authorization-server", True),
        ("/.well-known/openid-configuration", True),
        ("/register", True),
        ("/mcp/register", True),
        ("/authorize?response_type=code", True),
        ("/token", True),
        ("/mcp", False),
        ("/", False),
        ("/moved/mcp", False),
    ],
)
def test_is_oauth_path(path, oauth):
    assert is_oauth_path(path) is oauth
