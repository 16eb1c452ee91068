"""The conformance adapter for the SDK example host (`--client sdk_python_host.adapter:Adapter`).

Strategy: translate, never decide. Configuration commands edit the host's own file under the
given HOME; a started host runs on an asyncio loop of its own thread, and `ask` blocks the
harness's thread while the turn runs there, calling the harness's approval callback from a
worker thread and passing its answer through as typed. The host runs in the harness's
process, so its environment is the harness's: `StartOptions.env` is not applied (the SDK's
stdio transport reads `os.environ` itself, and an adapter must not change the harness's
environment); HOME and the working directory are passed to the host explicitly.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Sequence
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
    ServerConfig,
    ServerStatus,
    Shown,
    StartOptions,
    Stopped,
    Turn,
    as_status,
)
from sdk_python_host import config
from sdk_python_host.host import Host

T = TypeVar("T")
BOUND = 300.0  # seconds: the adapter's own wait on the host's loop, above the harness's bounds


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="sdk-python-host", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(BOUND)
        except TimeoutError:
            future.cancel()
            raise AdapterError(f"the SDK host did not finish within {BOUND:g} s") from None

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        if not self.thread.is_alive():
            self.loop.close()


class Session:
    def __init__(self, options: StartOptions) -> None:
        self._loop = _Loop()

        async def make() -> tuple[Host, list]:
            host = Host(
                options.home,
                options.cwd,
                options.model_url,
                options.model_key,
                options.connect_timeout,
                options.call_timeout,
                options.ca_file,
            )
            return host, await host.start()

        try:
            self.host, statuses = self._loop.run(make())
        except BaseException:
            self._loop.stop()
            raise
        self.statuses = [
            ServerStatus(s.name, s.connected, s.tools, s.destination, s.reason, s.line)
            for s in statuses
        ]
        self.text = "\n".join(s.line for s in statuses)
        self._stopped: Stopped | None = None

    def ask(self, question: str, approve: Approver, acknowledge: Acknowledger) -> Turn:
        async def prompt(fields: dict[str, str]) -> str:
            return await asyncio.to_thread(approve, Confirmation(**fields))

        try:
            outcome = self._loop.run(self.host.ask(question, prompt))
        except AdapterError:
            raise
        except Exception as exc:
            raise AdapterError(f"the SDK host's turn failed: {type(exc).__name__}: {exc}") from None
        return Turn(
            question_sent=True,
            confirmations=tuple(Confirmation(**c) for c in outcome.confirmations),
            calls=tuple(CallResult(c.tool, as_status(c.status), c.output) for c in outcome.calls),
            answer=outcome.answer,
            text="\n".join(outcome.lines),
        )

    def cancel(self) -> None:  # not claimed (can_cancel False)
        raise AdapterError("the SDK host cannot cancel a call")

    def stop(self) -> Stopped:
        if self._stopped is None:
            try:
                self._loop.run(self.host.close())
            finally:
                self._loop.stop()
            self._stopped = Stopped(session_id=None, session_files=(), text="")
        return self._stopped


class Adapter:
    """`mcp_host_conformance.harness.contract.adapter.Adapter` for the SDK example host."""

    def describe(self) -> Description:
        return Description(name="sdk-python-host", version=f"mcp {metadata.version('mcp')}")

    def add_server(self, home: Path, server: ServerConfig) -> Shown:
        servers = config.load(home)
        servers[server.name] = _entry(server)
        path = config.save(home, servers)
        return Shown(f"added {server.name}", (path,))

    def remove_server(self, home: Path, name: str) -> Shown:
        servers = config.load(home)
        servers.pop(name, None)
        return Shown(f"removed {name}", (config.save(home, servers),))

    def list_servers(self, home: Path) -> Shown:
        lines = [f"{name}: {config.destination(spec)}" for name, spec in config.load(home).items()]
        return Shown("\n".join(lines))

    def project_config(self, servers: Sequence[ServerConfig]) -> dict[str, str]:
        """The host reads no project configuration; its lure is its own file's shape where a
        project would hold it if the host took the working directory for HOME."""
        document = {server.name: _entry(server) for server in servers}
        return {f"{config.CONFIG_DIR}/{config.CONFIG_FILE}": json.dumps(document, indent=2)}

    def start(self, options: StartOptions) -> Session:
        return Session(options)


def _entry(server: ServerConfig) -> dict[str, Any]:
    """A server as this host's configuration file holds it."""
    if isinstance(server, HttpServer):
        return {"type": "http", "url": server.url, "headers": dict(server.headers)}
    return {
        "type": "stdio",
        "command": server.command,
        "args": list(server.args),
        "env": dict(server.env),
    }
