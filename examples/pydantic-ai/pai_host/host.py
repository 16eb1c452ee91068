"""A small MCP host written with pydantic-ai, with pydantic-ai's defaults.

Strategy: the least a host author writes with pydantic-ai's documented building blocks, and
nothing more. Each server of the host's `mcpServers` file becomes an `MCPToolset` built as
pydantic-ai's own `load_mcp_toolsets` builds it (`id` the server's name, tools prefixed with
it), with the two settings a host exposes (`init_timeout` for connecting, `read_timeout` for
each request) and, for HTTPS, the extra CA the user trusts (`verify`). `async with agent`
would enter every toolset and fail on the first server that fails, so the host enters each
toolset itself and drops the ones that fail, reporting them unavailable. The model is an
`OpenAIChatModel` (Chat Completions) on an `OpenAIProvider` pointed at the configured base
URL: pydantic-ai's documented way to reach an OpenAI-compatible endpoint. A turn is
`agent.run` with the conversation so far (kept under HOME for `resume`).

The one thing a host must add for a person to decide about every call is pydantic-ai's own
human-in-the-loop: every server's toolset is wrapped with `.approval_required()`, and the
agent gets the `HandleDeferredToolCalls` capability, whose handler shows each pending call as
a prompt ("y" or "yes" approves, anything else denies with pydantic-ai's `ToolDenied`).
Names, descriptions, schemas, results, errors and retries are pydantic-ai's.
"""

from __future__ import annotations

import json
import ssl
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolDenied,
)
from pydantic_ai.toolsets import AbstractToolset

from pai_host import config

MODEL = "mock-model"
INSTRUCTIONS = "You are a helpful assistant. Use the tools you are given when they help."
# How the host shows each outcome pydantic-ai records on a tool's return
OUTCOMES = {
    "success": "completed",
    "failed": "failed",
    "retried": "failed",
    "denied": "denied",
    "interrupted": "unknown",
}


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


Prompt = Callable[[dict[str, str]], Awaitable[str]]


class Host:
    def __init__(
        self,
        home: Path,
        model_url: str,
        model_key: str,
        connect_timeout: float,
        call_timeout: float,
        ca_file: Path | None,
        resume: str | None,
    ) -> None:
        self.home = home
        self.specs = config.load(home)
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.verify: ssl.SSLContext | None = None
        if ca_file is not None:
            self.verify = ssl.create_default_context()
            self.verify.load_verify_locations(str(ca_file))
        self.model = OpenAIChatModel(
            MODEL, provider=OpenAIProvider(base_url=model_url, api_key=model_key)
        )
        self.session_id = resume or uuid.uuid4().hex
        self.session_file = home / config.CONFIG_DIR / "sessions" / f"{self.session_id}.json"
        self.history: list[ModelMessage] = []
        if resume and self.session_file.exists():
            self.history = list(
                ModelMessagesTypeAdapter.validate_json(self.session_file.read_bytes())
            )
        self.entered: list[MCPToolset[Any]] = []
        self.tool_owner: dict[str, tuple[str, str]] = {}  # offered name -> (server, tool)
        self._prompt: Prompt | None = None
        self._turn: TurnOutcome | None = None

    def _toolset(self, name: str, spec: dict[str, Any]) -> MCPToolset[Any]:
        timeouts: dict[str, Any] = {
            "init_timeout": self.connect_timeout,
            "read_timeout": self.call_timeout,
        }
        if "command" in spec:
            transport = StdioTransport(
                command=spec["command"],
                args=list(spec.get("args") or []),
                env=spec.get("env"),
                cwd=spec.get("cwd"),
            )
            return MCPToolset(transport, id=name, **timeouts)
        verify = self.verify if str(spec.get("url", "")).startswith("https:") else None
        return MCPToolset(
            spec["url"], id=name, headers=spec.get("headers"), verify=verify, **timeouts
        )

    async def start(self) -> list[Status]:
        statuses = []
        toolsets: list[AbstractToolset[Any]] = []
        for name, spec in self.specs.items():
            where = config.destination(spec)
            try:
                toolset = self._toolset(name, spec)
                await toolset.__aenter__()
            except Exception as exc:  # noqa: BLE001 - one server's failure never stops the others
                reason = f"{type(exc).__name__}: {exc}"
                line = f"MCP server {name} unavailable: {reason}"
                statuses.append(Status(name, False, None, where, reason, line))
                continue
            self.entered.append(toolset)
            try:
                tools = await toolset.list_tools()
            except Exception as exc:  # noqa: BLE001
                reason = f"{type(exc).__name__}: {exc}"
                line = f"MCP server {name} unavailable: {reason}"
                statuses.append(Status(name, False, None, where, reason, line))
                continue
            for tool in tools:
                self.tool_owner[f"{name}_{tool.name}"] = (name, tool.name)
            toolsets.append(toolset.prefixed(name).approval_required())
            line = f"MCP server {name}: {len(tools)} tools from {where}"
            statuses.append(Status(name, True, len(tools), where, None, line))
        self.agent = Agent(
            self.model,
            instructions=INSTRUCTIONS,
            toolsets=toolsets,
            capabilities=[HandleDeferredToolCalls(handler=self._decide)],
        )
        return statuses

    def _confirmation(self, call: ToolCallPart) -> dict[str, str]:
        server, tool = self.tool_owner.get(call.tool_name, ("", call.tool_name))
        where = config.destination(self.specs[server]) if server in self.specs else ""
        arguments = call.args_as_json_str()
        try:
            arguments = json.dumps(json.loads(arguments), indent=2)
        except ValueError:
            pass
        warning = "Arguments are sent to this server."
        text = (
            f"Server: {server}\nDestination: {where}\nTool: {tool}\n"
            f"Arguments: {arguments}\n{warning}\nApprove? [y/N]"
        )
        return {
            "server": server,
            "destination": where,
            "tool": tool,
            "arguments": arguments,
            "warning": warning,
            "text": text,
        }

    async def _decide(
        self, ctx: RunContext[Any], requests: DeferredToolRequests
    ) -> DeferredToolResults:
        results = DeferredToolResults()
        for call in requests.approvals:
            fields = self._confirmation(call)
            if self._turn is not None:
                self._turn.confirmations.append(fields)
                self._turn.lines.append(fields["text"])
            answer = await self._prompt(fields) if self._prompt is not None else ""
            approved = answer.strip().lower() in ("y", "yes")
            results.approvals[call.tool_call_id] = True if approved else ToolDenied()
        return results

    async def ask(self, question: str, prompt: Prompt) -> TurnOutcome:
        outcome = TurnOutcome()
        self._prompt, self._turn = prompt, outcome
        try:
            result = await self.agent.run(question, message_history=self.history)
            self.history = result.all_messages()
            self._save()
            self._collect(result.new_messages(), outcome)
            outcome.answer = str(result.output or "")
            outcome.lines.append(outcome.answer)
        except Exception as exc:  # noqa: BLE001 - a host shows a failed turn and goes on
            outcome.lines.append(f"error: {type(exc).__name__}: {exc}")
        finally:
            self._prompt, self._turn = None, None
        return outcome

    @staticmethod
    def _collect(messages: list[ModelMessage], outcome: TurnOutcome) -> None:
        for message in messages:
            if isinstance(message, ModelResponse):
                for part in message.parts:
                    if isinstance(part, TextPart) and part.content:
                        outcome.lines.append(part.content)
                continue
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    status = OUTCOMES.get(part.outcome, part.outcome)
                    output = part.model_response_str()
                elif isinstance(part, RetryPromptPart) and part.tool_name:
                    status, output = "failed", part.model_response()
                else:
                    continue
                outcome.calls.append(CallOutcome(part.tool_name or "", status, output))
                outcome.lines.append(f"{part.tool_name}: {status}\n{output}")

    def _save(self) -> None:
        self.session_file.parent.mkdir(parents=True, exist_ok=True)
        self.session_file.write_bytes(ModelMessagesTypeAdapter.dump_json(self.history))

    async def close(self) -> None:
        for toolset in reversed(self.entered):
            try:
                await toolset.__aexit__(None, None, None)
            except Exception:  # noqa: BLE001, S110 - closing the others matters more
                pass
        self.entered = []
