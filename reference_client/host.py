"""`Host`: the engine as one object: start (connect + discover), ask, cancel, close.

Strategy: the host is a thin shell around `discovery.discover` and `turn.Conversation`; it
holds what lives for a whole session (the model client, the redactor built from every
configured secret, the connections) and the one thing that crosses threads, `cancel`,
which only schedules work on the host's own event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_host_conformance.reference_client import builtins, config
from mcp_host_conformance.reference_client.discovery import Discovery, StatusLine, discover
from mcp_host_conformance.reference_client.model import DEFAULT_MODEL, ModelClient
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.turn import (
    UI,
    CallReport,
    Conversation,
    SessionSink,
    TurnReport,
)

__all__ = ["Host", "UI", "StatusLine", "CallReport", "TurnReport"]


class Host:
    def __init__(
        self,
        servers: Sequence[Any],
        *,
        model_url: str,
        model_key: str,
        environ: Mapping[str, str],
        cwd: Path,
        ui: UI,
        connect_timeout: float = 10.0,
        call_timeout: float = 30.0,
        ca_file: Path | None = None,
        session: SessionSink | None = None,
        history: list[dict] | None = None,
    ) -> None:
        self.servers = list(servers)
        self.environ = dict(environ)
        self.cwd = Path(cwd)
        self.ui = ui
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.ca_file = ca_file
        self.session = session
        self.redactor = Redactor([*config.secrets_of(self.servers), model_key])
        self.model = ModelClient(
            model_url,
            model_key,
            model=self.environ.get("OPENAI_MODEL", DEFAULT_MODEL),
            ca_file=ca_file,
        )
        self.discovery = Discovery()
        self.conversation = Conversation(
            model=self.model,
            discovery=self.discovery,
            ui=ui,
            redactor=self.redactor,
            cwd=self.cwd,
            call_timeout=call_timeout,
            session=session,
            history=history,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def statuses(self) -> list[StatusLine]:
        return self.discovery.statuses

    async def start(self) -> list[StatusLine]:
        """Connect every server in parallel and show one status line each (DISC-1)."""
        self._loop = asyncio.get_running_loop()
        self.discovery = await discover(
            self.servers,
            environ=self.environ,
            connect_timeout=self.connect_timeout,
            redactor=self.redactor,
            ca_file=self.ca_file,
            cwd=self.cwd,
            reserved=builtins.NAMES,
        )
        self.conversation = Conversation(
            model=self.model,
            discovery=self.discovery,
            ui=self.ui,
            redactor=self.redactor,
            cwd=self.cwd,
            call_timeout=self.call_timeout,
            session=self.session,
            history=self.conversation.history,
        )
        for status in self.discovery.statuses:
            self.ui.show(self.redactor.redact(status.line))
        return self.discovery.statuses

    async def ask(self, question: str) -> TurnReport:
        self._loop = asyncio.get_running_loop()
        return await self.conversation.ask(question)

    def cancel(self) -> None:
        """Interrupt the MCP call in flight; safe from any thread (RES-9)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self.conversation.cancel)

    async def close(self) -> None:
        """Close every connection; stdio servers are stopped and reaped (STDIO-5)."""
        if self._closed:
            return
        self._closed = True
        sessions = [s.session for s in self.discovery.servers.values()]
        outcomes = await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
        del outcomes  # closing is best effort per server; one failure must not skip the rest
        await self.model.close()
