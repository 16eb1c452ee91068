"""The conformance adapter for the pydantic-ai host (`--client pai_host.adapter:Adapter`).

Strategy: translate, never decide. Configuration commands edit the host's own file under the
given HOME; a started host runs on an asyncio loop of its own thread, and `ask` blocks the
harness's thread while the turn runs there, calling the harness's approval callback from a
worker thread and passing its answer through as typed. The host runs in the harness's
process, so its environment is the harness's: `StartOptions.env` is not applied (the MCP
SDK's stdio transport, which FastMCP's uses, reads `os.environ` itself, and an adapter must
not change the harness's environment); HOME is passed to the host explicitly.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Coroutine
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from pydantic_ai.tools import ToolDenied

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
)
from pai_host import config
from pai_host.host import Host

T = TypeVar("T")
BOUND = 300.0  # seconds: the adapter's own wait on the host's loop, above the harness's bounds


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="pydantic-ai-host", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(BOUND)
        except TimeoutError:
            future.cancel()
            raise AdapterError(f"the pydantic-ai host did not finish within {BOUND:g} s") from None

    def stop(self) -> None:
        """End the loop as `asyncio.run` ends a host's program: every task still running
        cancelled and awaited (pydantic-ai keeps each stdio server's connection in a task of
        its own until then, and the MCP SDK stops the server as that task ends), async
        generators and the default executor shut down, the loop closed."""

        async def exit_program() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()
            await self.loop.shutdown_default_executor()

        try:
            asyncio.run_coroutine_threadsafe(exit_program(), self.loop).result(BOUND)
        except (TimeoutError, RuntimeError):
            pass  # the loop is stopped below whatever the tasks did
        finally:
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
                options.model_url,
                options.model_key,
                options.connect_timeout,
                options.call_timeout,
                options.ca_file,
                options.resume,
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
            raise AdapterError(f"the host's turn failed: {type(exc).__name__}: {exc}") from None
        return Turn(
            question_sent=True,
            confirmations=[Confirmation(**c) for c in outcome.confirmations],
            calls=[CallResult(c.tool, c.status, c.output) for c in outcome.calls],
            answer=outcome.answer,
            text="\n".join(outcome.lines),
        )

    def cancel(self) -> None:  # not claimed (can_cancel False)
        raise AdapterError("the pydantic-ai host cannot cancel a call")

    def stop(self) -> Stopped:
        if self._stopped is None:
            try:
                self._loop.run(self.host.close())
            finally:
                self._loop.stop()
            files = [self.host.session_file] if self.host.session_file.exists() else []
            self._stopped = Stopped(self.host.session_id, files, "")
        return self._stopped


class Adapter:
    """`mcp_host_conformance.harness.contract.adapter.Adapter` for the pydantic-ai host."""

    def describe(self) -> Description:
        return Description(
            name="pydantic-ai-host",
            version=(
                f"pydantic-ai-slim {metadata.version('pydantic-ai-slim')}, "
                f"fastmcp {metadata.version('fastmcp-slim')}, mcp {metadata.version('mcp')}"
            ),
            # MCPToolset's defaults (pydantic_ai/mcp.py): init_timeout 5 s, read_timeout 5 min
            connect_timeout=5.0,
            call_timeout=300.0,
            # pydantic-ai's own words for a call's outcome over Chat Completions, which has no
            # error channel: a failed or retried call's output is wrapped in {"error": ...}
            # (pydantic_ai/messages.py, ERROR_OUTCOMES and model_response_str), a denied one is
            # ToolDenied's message (pydantic_ai/_deferred.py), anything else is the result
            status_vocabulary={
                "failed": r'\A\{"error":',
                "denied": rf"\A{re.escape(ToolDenied().message)}\Z",
                "completed": r'\A(?!\{"error":)',
            },
        )

    def add_server(self, home: Path, server: ServerConfig) -> Shown:
        servers = config.load(home)
        if isinstance(server, HttpServer):
            servers[server.name] = {"url": server.url, "headers": dict(server.headers)}
        else:
            servers[server.name] = {
                "command": server.command,
                "args": list(server.args),
                "env": dict(server.env),
            }
        path = config.save(home, servers)
        return Shown(f"added {server.name}", [path])

    def remove_server(self, home: Path, name: str) -> Shown:
        servers = config.load(home)
        servers.pop(name, None)
        return Shown(f"removed {name}", [config.save(home, servers)])

    def list_servers(self, home: Path) -> Shown:
        lines = [f"{name}: {config.destination(spec)}" for name, spec in config.load(home).items()]
        return Shown("\n".join(lines))

    def start(self, options: StartOptions) -> Session:
        return Session(options)
