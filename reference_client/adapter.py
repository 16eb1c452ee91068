"""The harness adapter for the reference host (the one module that imports `harness`).

Strategy: translate, never decide. Configuration goes through `cli.main([...])` exactly as
a user would type it, secrets through `--header-from-env` / `--env-from-env` with the
variable set only in the environ handed to `cli.main` (never in argv). A started host runs
in a background thread with its own asyncio loop; `ask` blocks the harness's thread while
the turn runs there, and the approval / acknowledgement callbacks are called from a worker
thread so the loop stays free (a `cancel` from the harness reaches it at once). Everything
the user would have seen (status lines, confirmations with the typed answer, prompts,
results, answers) is collected into the `text` fields, through the same
`display.terminal_safe` as the terminal (HARD-1). A session starts the way `chat` starts
one: `engine.open_engine`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import sys
import threading
from collections.abc import Coroutine, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from mcp_host_conformance.harness.contract.adapter import (
    Acknowledger,
    AdapterError,
    Approver,
    CallResult,
    Confirmation,
    Description,
    HttpServer,
    PendingTool,
    ServerConfig,
    ServerStatus,
    Shown,
    StartOptions,
    Stopped,
    ToolApprover,
    ToolReview,
    Turn,
    as_status,
)
from mcp_host_conformance.reference_client import cli, config
from mcp_host_conformance.reference_client import engine as engine_module
from mcp_host_conformance.reference_client.config import ConfigError, ConfigStore
from mcp_host_conformance.reference_client.confirmation import ConfirmationView
from mcp_host_conformance.reference_client.display import terminal_safe
from mcp_host_conformance.reference_client.engine import HostEngine, TurnReport, open_engine
from mcp_host_conformance.reference_client.profiles import PROFILES, SettingsStore
from mcp_host_conformance.reference_client.sessions import SessionError
from mcp_host_conformance.reference_client.tool_review import ReviewView

NAME = "mcp-reference-host"
PROFILES_NAME = "mcp-reference-host-profiles"
SECRET_VARIABLE = "MCP_REFERENCE_SECRET_{}"  # set only in the environ given to cli.main
STOP_TIMEOUT = 30.0
# `mcp add` as a person types it at a terminal: the header's value is prompted for with echo
# off (CRED-5). The harness fills the placeholders and runs it in a pseudo-terminal.
INTERACTIVE_ADD = ["mcp", "add", "{name}", "{url}", "--header", "{header}"]

T = TypeVar("T")


def _version() -> str:
    try:
        return metadata.version("mcp-host-conformance")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "0.0.0"


def host_environ(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the host runs with: HOME, the outer PATH and LANG, then the extra.
    No XDG_* of the outer process leaks in, so configuration stays under this HOME."""
    environ = {"HOME": str(home), "PATH": os.environ.get("PATH", os.defpath)}
    if "LANG" in os.environ:
        environ["LANG"] = os.environ["LANG"]
    environ.update(extra or {})
    return environ


def add_command(server: ServerConfig) -> tuple[list[str], dict[str, str]]:
    """The argv a user would type to add `server`, and the variables holding its secrets."""
    secrets: dict[str, str] = {}

    def from_env(flag: str, name: str, value: str) -> list[str]:
        variable = SECRET_VARIABLE.format(len(secrets))
        secrets[variable] = value
        return [flag, f"{name}={variable}"]

    if isinstance(server, HttpServer):
        argv = ["mcp", "add", server.name, server.url]
        for name, value in server.headers.items():
            argv += from_env("--header-from-env", name, value)
        if server.oauth:
            argv.append("--oauth")
            client = dict(server.oauth_client)
            if client.get("client_id"):
                argv.append(f"--oauth-client-id={client['client_id']}")
            if client.get("client_secret"):
                variable = SECRET_VARIABLE.format(len(secrets))
                secrets[variable] = client["client_secret"]
                argv.append(f"--oauth-client-secret-from-env={variable}")
            if client.get("client_metadata_url"):
                argv.append(f"--oauth-client-metadata-url={client['client_metadata_url']}")
        if server.ca_file is not None:
            argv.append(f"--ca-file={server.ca_file}")
    else:
        argv = ["mcp", "add", server.name, f"--command={server.command}"]
        argv += [f"--arg={arg}" for arg in server.args]  # "=" so an arg like -x stays an arg
        for name, value in server.env.items():
            argv += from_env("--env-from-env", name, value)
    if server.connect_timeout is not None:
        argv.append(f"--connect-timeout={server.connect_timeout:g}")
    return argv, secrets


def confirmation_record(view: ConfirmationView) -> Confirmation:
    return Confirmation(
        server=view.server,
        destination=view.destination,
        tool=view.tool,
        arguments=view.arguments,
        warning=view.warning,
        text=view.text,
    )


class _Loop:
    """An asyncio loop of its own, on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="reference-host", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise AdapterError(f"the reference host did not finish within {timeout:g} s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(STOP_TIMEOUT)
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()


class _BridgeUI:
    """The host's UI, answered by the harness's callbacks; records what the user saw."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.approver: Approver | None = None
        self.acknowledger: Acknowledger | None = None
        self.reviewer: ToolApprover | None = None

    def take_text(self) -> str:
        text, self.lines = "\n".join(self.lines), []
        return text

    def show(self, text: str) -> None:
        self.lines.append(terminal_safe(text))

    async def approve(self, view: ConfirmationView) -> str:
        if self.approver is None:
            raise AdapterError("no approval callback during a turn")
        answer = await asyncio.to_thread(self.approver, confirmation_record(view))
        self.lines.append(terminal_safe(f"{view.text}{answer}"))
        return answer

    async def review_tool(self, view: ReviewView) -> bool:
        if self.reviewer is None:
            raise AdapterError("no tool-review callback during a review")
        pending = PendingTool(
            server=view.server,
            tool=view.tool,
            change="changed" if view.change == "changed" else "new",
            flagged=bool(view.flags),
            text=view.text,
        )
        approved = bool(await asyncio.to_thread(self.reviewer, pending))
        self.lines.append(terminal_safe(f"{view.text}{'y' if approved else 'n'}"))
        return approved

    async def acknowledge(self, prompt: str) -> bool:
        if self.acknowledger is None:
            raise AdapterError("no acknowledgement callback during a turn")
        accepted = await asyncio.to_thread(self.acknowledger, prompt)
        self.lines.append(terminal_safe(f"{prompt}{'y' if accepted else 'n'}"))
        return bool(accepted)


class ReferenceSession:
    """A running reference host (`mcp_host_conformance.harness.contract.adapter.ClientSession`)."""

    def __init__(self, options: StartOptions) -> None:
        self.options = options
        self.environ = host_environ(options.home, options.env)
        self.ui = _BridgeUI()
        self._ask_lock = threading.Lock()
        self._stopped: Stopped | None = None
        self._loop = _Loop()

        # a timeout the harness leaves to the host is the host's own default, as `chat` has it
        # (read when the host starts: a broken client may patch it)
        connect = options.connect_timeout
        if connect is None:
            connect = engine_module.DEFAULT_CONNECT_TIMEOUT
        call = options.call_timeout
        if call is None:
            call = engine_module.DEFAULT_CALL_TIMEOUT

        async def open_and_start() -> tuple[HostEngine, list[Any]]:
            try:
                engine = open_engine(
                    environ=self.environ,
                    model_url=options.model_url,
                    model_key=options.model_key,
                    cwd=options.cwd,
                    ui=self.ui,
                    resume=options.resume,
                    ca_file=options.ca_file,
                    connect_timeout=connect,
                    call_timeout=call,
                )
            except ConfigError as exc:
                raise AdapterError(f"cannot read the configuration: {exc}") from None
            except SessionError as exc:
                raise AdapterError(f"cannot open the session: {exc}") from None
            try:
                return engine, await engine.start()
            except BaseException:
                await engine.close()
                raise

        try:
            self.engine, lines = self._loop.run(open_and_start(), connect + 30)
        except BaseException:
            self._loop.stop()
            raise
        log = self.engine.session_log
        assert log is not None  # open_engine always opens one
        self.session = log
        self.statuses = [
            ServerStatus(s.name, s.connected, s.tools, s.destination, s.reason, s.line)
            for s in lines
        ]
        self.text = self.ui.take_text()

    def ask(self, question: str, approve: Approver, acknowledge: Acknowledger) -> Turn:
        with self._ask_lock:
            if self._stopped is not None:
                raise AdapterError("the session is stopped")
            self.ui.approver, self.ui.acknowledger = approve, acknowledge
            try:
                report: TurnReport = self._loop.run(self.engine.ask(question), self._bound())
            finally:
                self.ui.approver = self.ui.acknowledger = None
            return Turn(
                question_sent=report.question_sent,
                confirmations=tuple(confirmation_record(v) for v in report.confirmations),
                calls=tuple(
                    CallResult(c.tool, as_status(c.status), c.output) for c in report.calls
                ),
                acknowledgements=tuple(report.acknowledgements),
                answer=report.answer,
                text=self.ui.take_text(),
            )

    def cancel(self) -> None:
        self.engine.cancel()

    def _bound(self) -> float:
        # A guard against a hang, never a verdict: it grows with the run's timeout scale
        # (through the scaled call timeout), since a traced run on a loaded machine reviews
        # 128 tools in more than a fixed minute.
        return 60 + 20 * (self.engine.call_timeout + 5)

    def review_tools(self, approve: ToolApprover) -> ToolReview:
        """The tool review of profile pinning (chat's /review): every waiting tool shown,
        one answer each."""
        with self._ask_lock:
            if self._stopped is not None:
                raise AdapterError("the session is stopped")
            self.ui.reviewer = approve
            try:
                shown = self._loop.run(self.engine.review(self.ui.review_tool), self._bound())
            finally:
                self.ui.reviewer = None
            return ToolReview(
                tools=tuple(
                    PendingTool(
                        server=view.server,
                        tool=view.tool,
                        change="changed" if view.change == "changed" else "new",
                        flagged=bool(view.flags),
                        text=view.text,
                    )
                    for view, _approved in shown
                ),
                text=self.ui.take_text(),
            )

    def stop(self) -> Stopped:
        if self._stopped is not None:
            return self._stopped
        try:
            self._loop.run(self.engine.close(), STOP_TIMEOUT)
        finally:
            self._loop.stop()
            self.session.close()
        self._stopped = Stopped(self.session.id, (self.session.path,), self.ui.take_text())
        return self._stopped


class ReferenceAdapter:
    """`mcp_host_conformance.harness.contract.adapter.Adapter` for the reference host."""

    def describe(self) -> Description:
        return Description(
            name=NAME,
            version=_version(),
            profiles=frozenset(),
            connect_timeout=10.0,
            call_timeout=30.0,
            project_config_files=(),
            can_cancel=True,
            interactive_add=(
                sys.executable,
                "-m",
                "mcp_host_conformance.reference_client",
                *INTERACTIVE_ADD,
            ),
        )

    def _cli(self, home: Path, argv: list[str], secrets: Mapping[str, str] | None = None) -> str:
        out = io.StringIO()
        environ = host_environ(home, secrets)
        status = cli.main(argv, environ=environ, stdin=io.StringIO(""), stdout=out)
        if status != 0:
            raise AdapterError(
                f"`{NAME} {argv[0]} {argv[1]}` failed (exit {status}): {out.getvalue().strip()}"
            )
        return out.getvalue()

    def add_server(self, home: Path, server: ServerConfig) -> Shown:
        argv, secrets = add_command(server)
        text = self._cli(home, argv, secrets)
        return Shown(text, (ConfigStore(host_environ(home)).path,))

    def remove_server(self, home: Path, name: str) -> Shown:
        return Shown(
            self._cli(home, ["mcp", "remove", name]), (ConfigStore(host_environ(home)).path,)
        )

    def list_servers(self, home: Path) -> Shown:
        return Shown(self._cli(home, ["mcp", "list"]))

    def project_config(self, servers: Sequence[ServerConfig]) -> dict[str, str]:
        """The reference host reads no project configuration; its lure is its own file's
        shape where the project would hold it if the host took the working directory for
        HOME (`.config/mcp-reference-host/servers.json`)."""
        own: list[config.ServerConfig] = [
            config.HttpServerConfig(s.name, s.url, dict(s.headers), s.oauth, dict(s.oauth_client))
            if isinstance(s, HttpServer)
            else config.StdioServerConfig(s.name, s.command, list(s.args), dict(s.env))
            for s in servers
        ]
        return {f".config/{config.APP_DIR}/{config.FILE_NAME}": config.document(own)}

    def start(self, options: StartOptions) -> ReferenceSession:
        return ReferenceSession(options)


class ReferenceProfilesAdapter(ReferenceAdapter):
    """The reference host with every optional profile switched on in its settings (entry
    point `reference-profiles`): it claims them all. Each HOME it is given gets the profiles
    switched on first, through the command line, as its user would (`profiles enable all`)."""

    def __init__(self) -> None:
        self._prepared: set[Path] = set()
        self._lock = threading.Lock()

    def describe(self) -> Description:
        return dataclasses.replace(
            super().describe(), name=PROFILES_NAME, profiles=frozenset(PROFILES)
        )

    def _prepare(self, home: Path) -> None:
        with self._lock:
            if home in self._prepared and SettingsStore(host_environ(home)).path.exists():
                return
            self._prepared.add(home)
        super()._cli(home, ["profiles", "enable", "all"])

    def _cli(self, home: Path, argv: list[str], secrets: Mapping[str, str] | None = None) -> str:
        self._prepare(home)
        return super()._cli(home, argv, secrets)

    def allow_addresses(self, home: Path, addresses: tuple[str, ...]) -> Shown:
        return Shown(
            self._cli(home, ["mcp", "allow-address", *addresses]),
            (SettingsStore(host_environ(home)).path,),
        )

    def start(self, options: StartOptions) -> ReferenceSession:
        self._prepare(options.home)
        return super().start(options)


def driver_main(profiles: bool = False) -> int:
    """`mcp-reference-host driver [--profiles]`: serve this adapter (with every optional
    profile switched on, with --profiles) over the driver protocol (stdio)."""
    from mcp_host_conformance.harness.contract.driver_server import serve

    return serve(ReferenceProfilesAdapter() if profiles else ReferenceAdapter())
