"""The host: MCP servers through the `mcp` Python SDK 1.x client, a model through the
Responses API, and an approval prompt before every call.

Strategy: the same least-possible host as `examples/sdk_python_host` (the suite's own SDK,
2.x), written against the 1.x client a host such as fast-agent pins: each server gets its own
task that enters the SDK's default transport (`stdio_client`, or `streamablehttp_client` with
the SDK's own httpx client, given the CA to trust), a `ClientSession`, `initialize` and
`list_tools` (following `nextCursor`), then serves calls until the host closes. The only
settings passed to the SDK are the ones a host must pass: the configured headers, an extra CA
to trust, and the timeouts (the SDK's `read_timeout_seconds`).

The model loop offers every tool as `mcp_<server>_<tool>` with the label
`[MCP server S, tool T]` in its description, asks for approval (yes means `y`/`yes`), calls,
and sends the result's text back. Deliberately absent: name checks, discovery limits, size
limits, redirect or environment policy, result statuses beyond completed/failed/denied,
retry acknowledgement, sessions on disk. The suite's report on this host is a report on the
1.x SDK's defaults plus a naive loop.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from mcp1_host import config

MODEL = "gpt-4.1-mini"
MAX_MODEL_REQUESTS = 32  # per turn: a runaway guard, above the 16 calls a turn may make

# The UI: approval gets the confirmation fields and returns what the person typed.
ApprovalPrompt = Callable[[dict[str, str]], Awaitable[str]]


@dataclass
class Status:
    name: str
    connected: bool
    tools: int | None
    destination: str
    reason: str | None
    line: str


@dataclass
class CallOutcome:
    tool: str
    status: str
    output: str


@dataclass
class TurnOutcome:
    confirmations: list[dict[str, str]] = field(default_factory=list)
    calls: list[CallOutcome] = field(default_factory=list)
    answer: str = ""
    lines: list[str] = field(default_factory=list)


def _client_factory(ca_file: Path | None) -> Callable[..., httpx.AsyncClient]:
    """The SDK's `create_mcp_http_client` (its defaults: 30 s, 300 s read), plus the CA."""

    def make(
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        verify: ssl.SSLContext | bool = True
        if ca_file is not None:
            verify = ssl.create_default_context()
            verify.load_verify_locations(str(ca_file))
        default = httpx.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        return httpx.AsyncClient(
            headers=headers,
            timeout=timeout or default,
            auth=auth,
            verify=verify,
        )

    return make


class Server:
    """One configured server, connected by its own task."""

    def __init__(
        self,
        name: str,
        spec: dict[str, Any],
        connect_timeout: float,
        call_timeout: float,
        ca_file: Path | None,
        cwd: Path,
    ) -> None:
        self.name = name
        self.spec = spec
        self.destination = config.destination(spec)
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.ca_file = ca_file
        self.cwd = cwd
        self.tools: list[types.Tool] = []
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.calls: asyncio.Queue[tuple[str, dict[str, Any], asyncio.Future[Any]] | None] = (
            asyncio.Queue()
        )
        self.task = asyncio.create_task(self._run(), name=f"mcp-{name}")

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        if self.spec["type"] == "http":
            read, write, _ = await stack.enter_async_context(
                streamablehttp_client(
                    self.spec["url"],
                    headers=self.spec.get("headers") or None,
                    httpx_client_factory=_client_factory(self.ca_file),
                )
            )
            return read, write
        params = StdioServerParameters(
            command=self.spec["command"],
            args=self.spec.get("args", []),
            env=self.spec.get("env") or None,
            cwd=self.cwd,
        )
        return await stack.enter_async_context(stdio_client(params))

    async def _run(self) -> None:
        waiting: asyncio.Future[Any] | None = None
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(
                        read, write, read_timeout_seconds=timedelta(seconds=self.connect_timeout)
                    )
                )
                await session.initialize()
                cursor: str | None = None
                while True:
                    listing = await session.list_tools(cursor=cursor)
                    self.tools.extend(listing.tools)
                    cursor = listing.nextCursor
                    if not cursor:
                        break
                self.ready.set_result(None)
                while (request := await self.calls.get()) is not None:
                    tool, arguments, waiting = request
                    try:
                        result = await session.call_tool(
                            tool,
                            arguments,
                            read_timeout_seconds=timedelta(seconds=self.call_timeout),
                        )
                    except Exception as exc:
                        waiting.set_exception(exc)
                    else:
                        waiting.set_result(result)
                    waiting = None
        except BaseException as exc:
            error = (
                exc if isinstance(exc, Exception) else RuntimeError("the connection was cancelled")
            )
            for future in (self.ready, waiting):
                if future is not None and not future.done():
                    future.set_exception(error)
            while not self.calls.empty():
                request = self.calls.get_nowait()
                if request is not None and not request[2].done():
                    request[2].set_exception(RuntimeError(f"server {self.name} is disconnected"))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if self.task.done():
            raise RuntimeError(f"server {self.name} is disconnected")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.calls.put((tool, arguments, future))
        return await future

    async def close(self) -> None:
        if not self.task.done():
            await self.calls.put(None)
        try:
            await asyncio.wait_for(asyncio.shield(self.task), 15)
        except (TimeoutError, Exception):
            self.task.cancel()


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def result_text(result: types.CallToolResult) -> str:
    """The naive mapping: text blocks as text, every other block as its JSON."""
    parts = [
        b.text if isinstance(b, types.TextContent) else b.model_dump_json(by_alias=True)
        for b in result.content
    ]
    return "\n".join(parts)


class Host:
    """The running host: connected servers, the tools offered, the conversation."""

    def __init__(
        self,
        home: Path,
        cwd: Path,
        model_url: str,
        model_key: str,
        connect_timeout: float = 10.0,
        call_timeout: float = 30.0,
        ca_file: Path | None = None,
    ) -> None:
        self.home = home
        self.cwd = cwd
        self.model_url = model_url.rstrip("/") + "/responses"
        self.model_key = model_key
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.ca_file = ca_file
        self.servers: dict[str, Server] = {}
        self.offered: dict[str, tuple[Server, types.Tool]] = {}
        self.history: list[dict[str, Any]] = []
        self.model = httpx.AsyncClient(timeout=300.0)

    async def start(self) -> list[Status]:
        for name, spec in config.load(self.home).items():
            self.servers[name] = Server(
                name, spec, self.connect_timeout, self.call_timeout, self.ca_file, self.cwd
            )
        statuses = []
        for name, server in self.servers.items():
            try:
                await server.ready
            except Exception as exc:
                reason = _reason(exc)
                line = f"MCP server {name} unavailable: {reason}"
                statuses.append(Status(name, False, None, server.destination, reason, line))
                continue
            for tool in server.tools:
                self.offered[f"mcp_{name}_{tool.name}"] = (server, tool)
            count = len(server.tools)
            line = f"MCP server {name}: {count} tools from {server.destination}"
            statuses.append(Status(name, True, count, server.destination, None, line))
        return statuses

    def functions(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "name": exposed,
                "description": (
                    f"[MCP server {server.name}, tool {tool.name}] {tool.description or ''}"
                ).strip(),
                "parameters": tool.inputSchema,
                "strict": False,
            }
            for exposed, (server, tool) in self.offered.items()
        ]

    async def _respond(self) -> dict[str, Any]:
        body = {"model": MODEL, "input": self.history, "tools": self.functions(), "store": False}
        response = await self.model.post(
            self.model_url, json=body, headers={"Authorization": f"Bearer {self.model_key}"}
        )
        if response.status_code != 200:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:200]
            raise RuntimeError(f"the model service answered HTTP {response.status_code}: {message}")
        return response.json()

    async def ask(self, question: str, approve: ApprovalPrompt) -> TurnOutcome:
        turn = TurnOutcome()
        self.history.append({"role": "user", "content": question})
        for _ in range(MAX_MODEL_REQUESTS):
            reply = await self._respond()
            calls = []
            for item in reply.get("output", []):
                if item.get("type") == "function_call":
                    calls.append(item)
                    self.history.append(
                        {k: item[k] for k in ("type", "call_id", "name", "arguments")}
                    )
                elif item.get("type") == "message":
                    text = "".join(p.get("text", "") for p in item.get("content", []))
                    self.history.append({"role": "assistant", "content": text})
                    turn.answer = text
                    turn.lines.append(text)
            if not calls:
                return turn
            for item in calls:
                outcome = await self._call(item, approve, turn)
                turn.calls.append(outcome)
                turn.lines.append(f"{outcome.tool}: {outcome.status}\n{outcome.output}")
                self.history.append(
                    {
                        "type": "function_call_output",
                        "call_id": item["call_id"],
                        "output": outcome.output,
                    }
                )
        return turn

    async def _call(
        self, item: dict[str, Any], approve: ApprovalPrompt, turn: TurnOutcome
    ) -> CallOutcome:
        exposed = item["name"]
        if exposed not in self.offered:
            return CallOutcome(exposed, "failed", f"unknown tool {exposed}")
        server, tool = self.offered[exposed]
        arguments = json.loads(item["arguments"] or "{}")
        shown = json.dumps(arguments, indent=2)
        text = (
            f"Server: {server.name}\nDestination: {server.destination}\nTool: {tool.name}\n"
            f"Arguments:\n{shown}\nAllow? [y/N] "
        )
        confirmation = {
            "server": server.name,
            "destination": server.destination,
            "tool": tool.name,
            "arguments": shown,
            "warning": "",
            "text": text,
        }
        turn.confirmations.append(confirmation)
        answer = await approve(confirmation)
        turn.lines.append(text + answer)
        if answer.strip().lower() not in ("y", "yes"):
            return CallOutcome(exposed, "denied", "the user denied this call")
        try:
            result = await server.call(tool.name, arguments)
        except Exception as exc:
            return CallOutcome(exposed, "failed", _reason(exc))
        status = "failed" if result.isError else "completed"
        return CallOutcome(exposed, status, result_text(result))

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers.values()))
        await self.model.aclose()
