"""Broken clients for CRED (credentials); NET's are in `network`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    Seam,
    constant,
    pure,
    replaced,
    replaced_after,
    replaced_when,
)


def _merged(servers, kind):
    from mcp_host_conformance.reference_client.config import HttpServerConfig, StdioServerConfig

    cls, field = (HttpServerConfig, "headers") if kind == "http" else (StdioServerConfig, "env")
    union: dict[str, str] = {}
    for server in servers:
        if isinstance(server, cls):
            union.update(getattr(server, field))
    return [
        dataclasses.replace(s, **{field: {**union, **getattr(s, field)}})
        if isinstance(s, cls)
        else s
        for s in servers
    ]


def _merging(kind):
    def differs(original, servers, **options) -> bool:
        return _merged(servers, kind) != list(servers)

    return differs


@replaced_when("mcp_host_conformance.reference_client.discovery.discover", _merging("http"))
def _headers_to_all(original):
    async def discover(servers, **options):
        return await original(_merged(servers, "http"), **options)

    return discover


@replaced_when("mcp_host_conformance.reference_client.discovery.discover", _merging("stdio"))
def _env_to_all(original):
    async def discover(servers, **options):
        return await original(_merged(servers, "stdio"), **options)

    return discover


def _remote_headers(original, self, servers, **options) -> bool:
    from mcp_host_conformance.reference_client.config import HttpServerConfig

    return any(isinstance(server, HttpServerConfig) and server.headers for server in servers)


@replaced_when("mcp_host_conformance.reference_client.engine.HostEngine.__init__", _remote_headers)
def _headers_to_model(original):
    from mcp_host_conformance.reference_client.config import HttpServerConfig

    def init(self, servers, **options):
        original(self, servers, **options)
        for server in self.servers:
            if isinstance(server, HttpServerConfig):
                self.model._client.headers.update(server.headers)

    return init


def _redacts(original, self, text) -> bool:
    return original(self, text) != text


@replaced_when("mcp_host_conformance.reference_client.redaction.Redactor.redact", _redacts)
def _no_redaction(original):
    del original
    return lambda self, text: text


@pure
def _whole_values(original):
    from mcp_host_conformance.reference_client.config import HttpServerConfig

    del original

    def secrets_of(servers):
        # Each configured value as a whole: "Bearer TOKEN" is a secret, TOKEN alone is not.
        return [
            value
            for server in servers
            for value in (
                server.headers if isinstance(server, HttpServerConfig) else server.env
            ).values()
            if value
        ]

    return secrets_of


@replaced("mcp_host_conformance.reference_client.engine.HostEngine.start")
def _debug_log(original):
    async def start(self):
        # A "support bundle" written at each start: the servers as configured, headers and all.
        directory = Path(self.environ["HOME"]) / ".cache" / "mcp-reference-host"
        directory.mkdir(parents=True, exist_ok=True)
        with (directory / "debug.log").open("a", encoding="utf-8") as log:
            for server in self.servers:
                log.write(f"server {json.dumps(dataclasses.asdict(server))}\n")
        return await original(self)

    return start


# ---- CRED-6: an OAuth flow started after a 401/403 -------------------------------------------

_RESOURCE_METADATA = re.compile(r'resource_metadata="([^"]+)"')


_SEND_POST = "mcp_host_conformance.reference_client.transports.http.HttpTransport.send_post"


def _rejected(outcome, self, message):
    kind, response = outcome
    return kind == "return" and response.status_code in (401, 403)


def _on_rejection(step):
    """A transport that runs `step(response)` on every 401 and 403 answer to a POST: the
    way an OAuth-capable HTTP stack (an httpx auth flow) reacts to a challenge."""

    @replaced_after(_SEND_POST, _rejected)
    def make(original):
        async def send_post(outcome, self, message):
            _, response = outcome
            try:
                await step(response)
            except Exception:  # noqa: BLE001 - a failed OAuth step changes nothing else
                pass
            return response

        return send_post

    return make


async def _get(url):
    import httpx

    async with httpx.AsyncClient(trust_env=False, timeout=5.0) as client:
        await client.get(url)


async def _fetch_resource_metadata(response):
    found = _RESOURCE_METADATA.search(response.headers.get("www-authenticate", ""))
    if found:
        await _get(found.group(1))


async def _probe_server_metadata(response):
    parts = urlsplit(str(response.request.url))
    await _get(f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server")


async def _open_browser(response):
    import webbrowser

    parts = urlsplit(str(response.request.url))
    url = (
        f"{parts.scheme}://{parts.netloc}/authorize?response_type=code"
        "&client_id=mcp-reference-host&code_challenge_method=S256"
    )
    await asyncio.to_thread(webbrowser.open, url)


class _NotATerminal:
    """A stdin that says it is not a terminal (so the reference never turns echo off)."""

    def __init__(self, stream):
        self._stream = stream

    def isatty(self):
        return False

    def __getattr__(self, name):
        return getattr(self._stream, name)


@replaced(
    "mcp_host_conformance.reference_client.server_commands.read_secret"
)  # the name `mcp add` reads secrets through
def _echoed_secret(original):
    def read_secret(prompt, *, stdin, stdout):
        return original(prompt, stdin=_NotATerminal(stdin), stdout=stdout)

    return read_secret


CLIENTS = [
    BrokenClient(
        "headers-to-every-server",
        "Sends every remote server's headers to every remote server.",
        {"CRED-1"},
        (_headers_to_all,),
    ),
    BrokenClient(
        "header-to-model",
        "Sends the remote servers' headers along with every model request.",
        {"CRED-1", "CRED-3"},
        (_headers_to_model,),
        target="CRED-1",
    ),
    BrokenClient(
        "env-to-every-stdio-server",
        "Gives every stdio server the variables configured for any of them.",
        # STDIO-2: the other servers get a variable not configured for them (monitor environment-
        # clean)
        {"CRED-2", "STDIO-2"},
        (_env_to_all,),
    ),
    BrokenClient(
        "no-redaction",
        "Never removes secrets from what it shows, saves or sends.",
        # CRED-1: a header's value reaches the model in an error it passes on (monitor secret-goes-
        # to-its-server)
        {"CRED-3", "CRED-1"},
        (_no_redaction,),
        target="CRED-3",
    ),
    BrokenClient(
        "redacts-whole-values-only",
        "Removes each configured header and variable value as a whole, not the credential "
        "after its auth scheme (a server echoing TOKEN of `Bearer TOKEN` shows it).",
        {"CRED-3"},
        (
            Seam("mcp_host_conformance.reference_client.config.secrets_of", _whole_values),
            Seam("mcp_host_conformance.reference_client.server_commands.secrets_of", _whole_values),
        ),
    ),
    BrokenClient(
        "writes-debug-log",
        "Writes the configured servers, headers and variables included, to "
        "~/.cache/mcp-reference-host/debug.log at each start.",
        {"CRED-3"},
        (_debug_log,),
    ),
    BrokenClient(
        "fetches-resource-metadata",
        "After a 401 or 403 fetches the protected resource metadata its WWW-Authenticate "
        "header points at (the MCP authorization spec's first step).",
        {"CRED-6"},
        (_on_rejection(_fetch_resource_metadata),),
    ),
    BrokenClient(
        "probes-oauth-metadata",
        "After a 401 or 403 fetches /.well-known/oauth-authorization-server from the "
        "server's origin.",
        {"CRED-6"},
        (_on_rejection(_probe_server_metadata),),
    ),
    BrokenClient(
        "opens-browser-on-401",
        "After a 401 or 403 opens a browser at the server's default /authorize endpoint.",
        {"CRED-6"},
        (_on_rejection(_open_browser),),
    ),
    BrokenClient(
        "no-oauth-hint",
        "Reports rejected credentials without saying OAuth is unsupported or suggesting a header.",
        {"CRED-4"},
        (
            constant(
                "mcp_host_conformance.reference_client.transports.http.CREDENTIALS_REJECTED",
                "the server rejected the credentials (HTTP {status})",
            ),
        ),
        target="CRED-4",
    ),
    BrokenClient(
        "echoes-typed-secret",
        "Reads the value typed at `mcp add --header NAME` with terminal echo on.",
        {"CRED-5"},
        (_echoed_secret,),
    ),
]
