"""`HostEngine`: the reference host as one object: start (connect + discover), ask, cancel,
close; and `open_engine`, the one way a front end gets one.

Strategy: the engine is a thin shell around `discovery.discover` and `turn.Conversation`;
it holds what lives for a whole session (the model client, the redactor built from every
configured secret, the connections, the session log) and the one thing that crosses
threads, `cancel`, which only schedules work on the engine's own event loop. Front ends
(the command line's `chat`, the harness adapter) never assemble an engine themselves:
`open_engine` loads the configuration, opens the session (new or resumed) and shows what
the person must know about it, so both front ends start a session the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_host_conformance.reference_client import builtins, config
from mcp_host_conformance.reference_client.discovery import Discovery, StatusLine, discover
from mcp_host_conformance.reference_client.display import terminal_safe
from mcp_host_conformance.reference_client.model import DEFAULT_MODEL, ModelClient
from mcp_host_conformance.reference_client.policy import ProfilePolicy
from mcp_host_conformance.reference_client.profiles import (
    OAUTH,
    PRIVATE_ADDRESS_REFUSAL,
    Settings,
    SettingsStore,
)
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.sessions import SessionLog, open_session
from mcp_host_conformance.reference_client.tool_gate import ReviewAnswer, ToolGate
from mcp_host_conformance.reference_client.tool_review import ReviewView
from mcp_host_conformance.reference_client.turn import (
    UI,
    CallReport,
    Conversation,
    SessionSink,
    TurnReport,
)

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "UI",
    "CallReport",
    "HostEngine",
    "StatusLine",
    "TurnReport",
    "open_engine",
]

# The timeouts the host keeps when it is given none (DISC-3, RES-6).
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 30.0

PENDING_NOTICE = (
    "The last MCP call of this session has an unknown outcome: before your next question is "
    "sent you will be asked to acknowledge that it may already have run."
)


class HostEngine:
    def __init__(
        self,
        servers: Sequence[Any],
        *,
        model_url: str,
        model_key: str,
        environ: Mapping[str, str],
        cwd: Path,
        ui: UI,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        ca_file: Path | None = None,
        session: SessionSink | None = None,
        history: list[dict[str, Any]] | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.servers = list(servers)
        self.settings = settings or Settings()  # the optional profiles switched on
        self.policy = ProfilePolicy(self.settings)
        self.gate = ToolGate(environ, self.policy)
        self.environ = dict(environ)
        self.cwd = Path(cwd)
        self.ui = ui
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.ca_file = ca_file
        self.session = session
        self.session_log: SessionLog | None = None  # closed with the engine, when it owns one
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
            ui=ui,
            redactor=self.redactor,
            cwd=self.cwd,
            call_timeout=call_timeout,
            session=session,
            history=history,
            policy=self.policy,
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
            refuse_private=self._refuse_private(),
            oauth=self._oauth_context(),
        )
        notices = self.gate.record(self.discovery)
        self.conversation.offer(self.discovery)
        for status in self.discovery.statuses:
            self.ui.show(terminal_safe(self.redactor.redact(status.line)))
        for notice in notices:
            self.ui.show(terminal_safe(self.redactor.redact(notice)))
        return self.discovery.statuses

    def _refuse_private(self) -> Any:
        if not self.settings.has(PRIVATE_ADDRESS_REFUSAL):
            return None
        return self.settings.allowed_addresses

    def _oauth_context(self) -> Any:
        """Profile oauth: what the servers' OAuth flows share (None: OAuth is off, and a 401
        is only reported, CRED-4/CRED-6)."""
        if not self.settings.has(OAUTH):
            return None
        from mcp_host_conformance.reference_client.oauth_flow import OAuthContext

        return OAuthContext(
            environ=self.environ,
            notify=lambda text: self.ui.show(terminal_safe(self.redactor.redact(text))),
            on_secret=self.redactor.add,
            ca_file=self.ca_file,
            refuse_private=self._refuse_private(),
        )

    def waiting_tools(self) -> int:
        """How many tools of the connected servers wait for a person's approval (pinning)."""
        return len(self.gate.waiting())

    async def review(self, answer: ReviewAnswer) -> list[tuple[ReviewView, bool]]:
        """Show every waiting tool to the person (profile pinning); the approved ones are
        offered and callable from the next model request on."""

        seen: list[ReviewView] = []

        async def redacted(view: ReviewView) -> bool:
            # Server text, but a tool's text could quote a configured secret back.
            shown = ReviewView(
                view.server,
                view.tool,
                view.change,
                view.flags,
                terminal_safe(self.redactor.redact(view.text)),
            )
            seen.append(shown)
            return await answer(shown)

        answers = await self.gate.review(redacted)
        self.conversation.offer(self.discovery)
        return [(view, approved) for view, (_, approved) in zip(seen, answers, strict=True)]

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
        """Close every connection (stdio servers are stopped and reaped, STDIO-5), the model
        client and the session log."""
        if self._closed:
            return
        self._closed = True
        try:
            sessions = [s.session for s in self.discovery.servers.values()]
            # Closing is best effort per server: one failure must not skip the rest.
            await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
            await self.model.close()
        finally:
            if self.session_log is not None:
                self.session_log.close()


def open_engine(
    *,
    environ: Mapping[str, str],
    model_url: str,
    model_key: str,
    cwd: Path,
    ui: UI,
    resume: str | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ca_file: Path | None = None,
) -> HostEngine:
    """The engine for one chat: the configured servers, and a new session or the saved
    session `resume`, whose notices are shown at once. Raises ConfigError / SessionError."""
    servers = config.ConfigStore(environ).load()
    settings = SettingsStore(environ).load()
    redactor = Redactor([*config.secrets_of(servers), model_key])
    opened = open_session(environ, resume, redactor=redactor)
    try:
        for notice in opened.notices:
            ui.show(terminal_safe(redactor.redact(notice)))
        engine = HostEngine(
            servers,
            model_url=model_url,
            model_key=model_key,
            environ=environ,
            cwd=cwd,
            ui=ui,
            connect_timeout=connect_timeout,
            call_timeout=call_timeout,
            ca_file=ca_file,
            session=opened.log,
            history=opened.history,
            settings=settings,
        )
    except BaseException:
        opened.log.close()
        raise
    engine.session_log = opened.log
    if engine.conversation.rules.pending_acknowledgement:
        ui.show(PENDING_NOTICE)
    return engine
