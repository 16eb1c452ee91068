"""The first sync of a server being added (profile `verified-add`, SYNC-1).

Strategy: with verified add switched on, `mcp add` connects to the new server at once and
lists its tools exactly as a start would (the same transport, limits, address refusal and
redaction: `discovery.connect_server`), so a person sees right away whether the URL, the
token and the server are usable. Only when that sync succeeds is anything written; a
failed sync (wrong URL, private address, rejected token, a broken discovery limit) leaves
the configuration, the approvals and every other file as they were. The connection is
closed after the listing: the next start connects again (DISC-1).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_host_conformance.reference_client.config import ConfigError, ServerConfig
from mcp_host_conformance.reference_client.discovery import connect_server, make_transport
from mcp_host_conformance.reference_client.profiles import PRIVATE_ADDRESS_REFUSAL, Settings
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.transports import McpError

__all__ = ["DEFAULT_SYNC_TIMEOUT", "first_sync", "short_name_problem"]

DEFAULT_SYNC_TIMEOUT = 10.0  # seconds, like the connect timeout of a start (DISC-3)
_SHORT_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def short_name_problem(name: str) -> str | None:
    """SYNC-2: a server's name is a short lowercase name (lowercase letters, digits and `-`,
    at most 64, not starting with `-`); why `name` is not one, or None."""
    if _SHORT_NAME.fullmatch(name):
        return None
    return (
        "a server name is a short lowercase name: lowercase letters, digits and - "
        "(at most 64, not starting with -), like docs or my-server-2"
    )


async def _sync(
    server: ServerConfig,
    environ: Mapping[str, str],
    settings: Settings,
    redactor: Redactor,
    ca_file: Path | None,
    timeout: float,
) -> list[dict[str, Any]]:
    refuse = settings.allowed_addresses if settings.has(PRIVATE_ADDRESS_REFUSAL) else None
    try:
        transport = make_transport(
            server, environ=environ, ca_file=ca_file, cwd=None, refuse_private=refuse
        )
    except McpError as exc:
        raise ConfigError(redactor.redact(str(exc))) from None
    line, connected = await connect_server(server, transport, timeout=timeout, redactor=redactor)
    if connected is None:
        raise ConfigError(line.reason or "the server is unavailable")
    try:
        return list(connected.tools)
    finally:
        try:
            await connected.session.close()
        except Exception:  # closing is best effort; the sync itself succeeded
            pass


def first_sync(
    server: ServerConfig,
    *,
    environ: Mapping[str, str],
    settings: Settings,
    redactor: Redactor,
    ca_file: Path | None = None,
    timeout: float = DEFAULT_SYNC_TIMEOUT,
) -> list[dict[str, Any]]:
    """The tools the new server lists now; ConfigError with the reason if it cannot be
    synced (then nothing may be saved)."""
    return asyncio.run(_sync(server, environ, settings, redactor, ca_file, timeout))
