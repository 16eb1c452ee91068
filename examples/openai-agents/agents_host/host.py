"""A small MCP host on the OpenAI Agents SDK, with the SDK's defaults.

Strategy: the least a host author writes with the SDK's documented building blocks, and
nothing more. Servers from the host's configuration become `MCPServerStreamableHttp` /
`MCPServerStdio` objects, connected by an `MCPServerManager` (its defaults: connect one
after the other, drop the failed ones); the `Agent` gets the connected ones and a
Responses model (`OpenAIResponsesModel`) pointed at the configured endpoint; a turn is
`Runner.run` with an `SQLiteSession` under HOME. The one thing a host must add for a person
to decide about every call is the SDK's own human-in-the-loop: each server is created with
`require_approval="always"`, and every interruption is shown as a prompt whose answer
("y" or "yes" approves, anything else rejects) goes to `RunState.approve` / `reject`.
Tool names, descriptions, schemas, results and errors are the SDK's; tracing is off (it
would upload traces to OpenAI).
"""

from __future__ import annotations

import json
import ssl
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from agents import (
    Agent,
    Runner,
    SQLiteSession,
    ToolApprovalItem,
    ToolCallItem,
    ToolCallOutputItem,
    set_tracing_disabled,
)
from agents.mcp import MCPServer, MCPServerManager, MCPServerStdio, MCPServerStreamableHttp
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from agents_host import config

set_tracing_disabled(True)

MODEL = "mock-model"
INSTRUCTIONS = "You are a helpful assistant. Use the tools you are given when they help."


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
    call_ids: set[str] = field(default_factory=set)
    names: dict[str, str] = field(default_factory=dict)  # call_id -> function name


Prompt = Callable[[dict[str, str]], Awaitable[str]]


def _client_factory(ca_file: Path) -> Callable[..., httpx2.AsyncClient]:
    """The MCP SDK's own client settings, plus the one extra CA the user configured."""
    context = ssl.create_default_context()
    context.load_verify_locations(str(ca_file))

    def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=context)

    return factory


class Host:
    def __init__(
        self,
        home: Path,
        model_url: str,
        model_key: str,
        connect_timeout: float | None,  # None: the Agents SDK's own default
        call_timeout: float | None,
        ca_file: Path | None,
        resume: str | None,
    ) -> None:
        self.home = home
        self.specs = config.load(home)
        # a timeout left to the host is the SDK's own default: not passed at all
        self.session_timeout: dict[str, float] = (
            {} if call_timeout is None else {"client_session_timeout_seconds": call_timeout}
        )
        self.ca_file = ca_file
        servers = [self._server(name, spec) for name, spec in self.specs.items()]
        connect: dict[str, float] = (
            {} if connect_timeout is None else {"connect_timeout_seconds": connect_timeout}
        )
        self.manager = MCPServerManager(servers, **connect)
        self.model = OpenAIResponsesModel(
            model=MODEL, openai_client=AsyncOpenAI(base_url=model_url, api_key=model_key)
        )
        self.session_id = resume or uuid.uuid4().hex
        self.session_file = home / config.CONFIG_DIR / "sessions.db"

    def _server(self, name: str, spec: dict[str, Any]) -> MCPServer:
        if spec["type"] == "http":
            params: dict[str, Any] = {"url": spec["url"], "headers": spec.get("headers", {})}
            if self.ca_file is not None:
                params["httpx_client_factory"] = _client_factory(self.ca_file)
            return MCPServerStreamableHttp(
                params,  # type: ignore[arg-type]
                name=name,
                require_approval="always",
                **self.session_timeout,
            )
        return MCPServerStdio(
            {"command": spec["command"], "args": spec.get("args", []), "env": spec.get("env", {})},
            name=name,
            require_approval="always",
            **self.session_timeout,
        )

    async def start(self) -> list[Status]:
        await self.manager.connect_all()
        statuses = []
        errors = self.manager.errors
        for server in self.manager.all_servers:
            where = config.destination(self.specs[server.name])
            if server in self.manager.active_servers:
                tools = len(await server.list_tools())
                line = f"MCP server {server.name}: {tools} tools from {where}"
                statuses.append(Status(server.name, True, tools, where, None, line))
            else:
                reason = str(errors.get(server) or "could not connect")
                line = f"MCP server {server.name} unavailable: {reason}"
                statuses.append(Status(server.name, False, None, where, reason, line))
        self.session_file.parent.mkdir(parents=True, exist_ok=True)
        self.session = SQLiteSession(self.session_id, db_path=self.session_file)
        self.agent = Agent(
            name="assistant",
            instructions=INSTRUCTIONS,
            mcp_servers=self.manager.active_servers,
            model=self.model,
        )
        return statuses

    def _confirmation(self, item: ToolApprovalItem) -> dict[str, str]:
        origin = item.tool_origin
        server = (origin.mcp_server_name if origin else None) or ""
        where = config.destination(self.specs[server]) if server in self.specs else ""
        raw = item.raw_item
        arguments = getattr(raw, "arguments", None) or "{}"
        try:
            arguments = json.dumps(json.loads(arguments), indent=2)
        except ValueError:
            pass
        warning = "Arguments are sent to this server."
        text = (
            f"Server: {server}\nDestination: {where}\nTool: {item.tool_name}\n"
            f"Arguments: {arguments}\n{warning}\nApprove? [y/N]"
        )
        return {
            "server": server,
            "destination": where,
            "tool": str(item.tool_name),
            "arguments": arguments,
            "warning": warning,
            "text": text,
        }

    async def ask(self, question: str, prompt: Prompt) -> TurnOutcome:
        outcome = TurnOutcome()
        rejected: set[str] = set()
        try:
            result = await Runner.run(self.agent, question, session=self.session)
            while result.interruptions:
                state = result.to_state()
                for item in result.interruptions:
                    fields = self._confirmation(item)
                    outcome.confirmations.append(fields)
                    outcome.lines.append(fields["text"])
                    answer = await prompt(fields)
                    if answer.strip().lower() in ("y", "yes"):
                        state.approve(item)
                    else:
                        state.reject(item)
                        rejected.add(str(getattr(item.raw_item, "call_id", "")))
                self._collect(result.new_items, rejected, outcome)
                result = await Runner.run(self.agent, state, session=self.session)
            self._collect(result.new_items, rejected, outcome)
            outcome.answer = str(result.final_output or "")
            outcome.lines.append(outcome.answer)
        except Exception as exc:  # noqa: BLE001 - a host shows a failed turn and goes on
            outcome.lines.append(f"error: {type(exc).__name__}: {exc}")
        return outcome

    @staticmethod
    def _collect(items: list[Any], rejected: set[str], outcome: TurnOutcome) -> None:
        for item in items:
            if isinstance(item, ToolCallItem):
                raw = item.raw_item
                outcome.names[str(getattr(raw, "call_id", ""))] = str(getattr(raw, "name", ""))
        for item in items:
            if not isinstance(item, ToolCallOutputItem):
                continue
            raw = item.raw_item
            call_id = str(raw.get("call_id") if isinstance(raw, dict) else raw.call_id)
            if call_id in outcome.call_ids:
                continue
            outcome.call_ids.add(call_id)
            status = "denied" if call_id in rejected else "completed"
            output = item.output if isinstance(item.output, str) else json.dumps(item.output)
            outcome.calls.append(CallOutcome(outcome.names.get(call_id, ""), status, output))
            outcome.lines.append(f"{status}: {output}")

    async def close(self) -> None:
        await self.manager.cleanup_all()
