"""The conformance driver of the mcp 1.x example host, run by the host's own Python.

The suite (mcp 2.x) cannot load this host in its process: the two SDKs cannot share a virtual
environment. So the host keeps its own, and this script, started by the suite with
`--client-cmd "HOST_VENV/bin/python examples/mcp1-host/driver.py"`, speaks the driver protocol
through the suite's driver kit (`mcp_host_conformance.harness.contract.driver_kit`: one file of
the standard library, installed here with `pip install --no-deps mcp-host-conformance`, or
copied beside this script). It translates, never decides: configuration commands edit the
host's own file under the given HOME; a started host runs on an asyncio loop of its own
thread, and `ask` waits while the turn runs there, asking the suite at each approval prompt
and typing its answer back as given.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

try:
    from mcp_host_conformance.harness.contract import driver_kit as kit
except ImportError:  # a copy of the one file, beside this script
    import driver_kit as kit  # type: ignore[no-redef]

from mcp1_host import config
from mcp1_host.host import Host

T = TypeVar("T")
BOUND = 300.0  # seconds: the driver's own wait on the host's loop, above the suite's bounds


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp1-host", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(BOUND)
        except TimeoutError:
            future.cancel()
            raise RuntimeError(f"the host did not finish within {BOUND:g} s") from None

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        if not self.thread.is_alive():
            self.loop.close()


class Session:
    def __init__(self, options: dict[str, Any]) -> None:
        self._loop = _Loop()
        ca_file = options.get("ca_file")

        async def make() -> tuple[Host, list[Any]]:
            host = Host(
                Path(options["home"]),
                Path(options["cwd"]),
                options["model_url"],
                options["model_key"],
                options["connect_timeout"],
                options["call_timeout"],
                Path(ca_file) if ca_file else None,
            )
            return host, await host.start()

        try:
            self.host, statuses = self._loop.run(make())
        except BaseException:
            self._loop.stop()
            raise
        self.statuses = [
            kit.server_status(s.name, s.connected, s.tools, s.destination, s.reason, s.line)
            for s in statuses
        ]
        self.text = "\n".join(s.line for s in statuses)
        self._stopped: dict[str, Any] | None = None

    def ask(self, question: str, approve: Any, acknowledge: Any) -> dict[str, Any]:
        async def prompt(fields: dict[str, str]) -> str:
            return await asyncio.to_thread(approve, kit.confirmation(**fields))

        outcome = self._loop.run(self.host.ask(question, prompt))
        return kit.turn(
            True,
            confirmations=[kit.confirmation(**c) for c in outcome.confirmations],
            calls=[kit.call_result(c.tool, c.status, c.output) for c in outcome.calls],
            answer=outcome.answer,
            text="\n".join(outcome.lines),
        )

    def cancel(self) -> None:  # not claimed (can_cancel is false)
        raise RuntimeError("this host cannot cancel a call")

    def stop(self) -> dict[str, Any]:
        if self._stopped is None:
            try:
                self._loop.run(self.host.close())
            finally:
                self._loop.stop()
            self._stopped = kit.stopped()
        return self._stopped


class Driver(kit.Driver):
    def describe(self) -> dict[str, Any]:
        return kit.description("mcp1-host", f"mcp {metadata.version('mcp')}")

    def add_server(self, home: str, server: dict[str, Any]) -> dict[str, Any]:
        servers = config.load(Path(home))
        if server["type"] == "http":
            entry = {"type": "http", "url": server["url"], "headers": server.get("headers", {})}
        else:
            entry = {
                "type": "stdio",
                "command": server["command"],
                "args": server.get("args", []),
                "env": server.get("env", {}),
            }
        servers[server["name"]] = entry
        return kit.shown(f"added {server['name']}", [str(config.save(Path(home), servers))])

    def remove_server(self, home: str, name: str) -> dict[str, Any]:
        servers = config.load(Path(home))
        servers.pop(name, None)
        return kit.shown(f"removed {name}", [str(config.save(Path(home), servers))])

    def list_servers(self, home: str) -> dict[str, Any]:
        servers = config.load(Path(home))
        return kit.shown("\n".join(f"{n}: {config.destination(s)}" for n, s in servers.items()))

    def start(self, options: dict[str, Any]) -> Session:
        return Session(options)


if __name__ == "__main__":
    raise SystemExit(kit.serve(Driver()))
