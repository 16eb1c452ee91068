"""One question's turn: model -> approval -> call -> result -> model, until it answers.

Strategy: `Conversation` owns the history (Responses input items) and walks the loop; the
rules it enforces are each a few lines here, the texts come from the pure modules:
- APR-1/2/3: every MCP call gets its own confirmation and waits for it; anything but yes
  denies and nothing is sent; annotations are never looked at.
- RES-*: the call runs once (RETRY-1) under the call timeout; timeout (RES-6), a connection
  lost after sending (RES-7), an oversized answer (RES-8), a user cancel (RES-9) or a
  garbled answer are `unknown`; a JSON-RPC error or `isError` is `failed`.
- RES-11: each function_call of a reply gets exactly one function_call_output, in order,
  before the next model request, whatever happened.
- TURN-1: at most 16 tool calls per turn, built-ins included; later calls get an output
  saying the limit was reached, then the model is asked (tool_choice none) to finish.
- RETRY-2/3: after an `unknown`, the next question waits for an acknowledgement; declined,
  the question is not sent and the acknowledgement stays pending.
- SESS-1 / CRED-3: every item is redacted, then shown, saved and sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mcp_host_conformance.reference_client import builtins, confirmation, offering, results
from mcp_host_conformance.reference_client.confirmation import ConfirmationView
from mcp_host_conformance.reference_client.discovery import ConnectedServer, Discovery, OfferedTool
from mcp_host_conformance.reference_client.model import ModelClient, ModelError
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.rpc import RpcError
from mcp_host_conformance.reference_client.transports import McpError, ProtocolError, parse_json

MAX_CALLS_PER_TURN = 16  # TURN-1
LIMIT_OUTPUT = (
    f"Not executed: the limit of {MAX_CALLS_PER_TURN} tool calls per turn was reached. "
    "Answer the user with what you have."
)
SYSTEM_TEXT = (
    "You are the assistant of a terminal MCP host. Use the tools when they help; the user "
    "approves every MCP tool call."
)
INSTRUCTIONS = offering.INSTRUCTIONS + "\n\n" + SYSTEM_TEXT


class UI(Protocol):
    def show(self, text: str) -> None: ...

    async def approve(self, view: ConfirmationView) -> str: ...

    async def acknowledge(self, prompt: str) -> bool: ...


@dataclass
class CallReport:
    tool: str  # the exposed name
    status: str
    output: str


@dataclass
class TurnReport:
    question_sent: bool
    confirmations: list[ConfirmationView] = field(default_factory=list)
    calls: list[CallReport] = field(default_factory=list)
    acknowledgements: list[str] = field(default_factory=list)
    answer: str = ""


class SessionSink(Protocol):
    def append(self, item: dict) -> None: ...


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def tool_output(outcome: results.Outcome) -> str:
    """The function_call_output text: status line plus output, never over 64 KiB (pure)."""
    prefix = f"Status: {outcome.status}\n"
    text = prefix + outcome.output
    if _size(text) <= results.OUTPUT_LIMIT:
        return text
    marker = results.TRUNCATION_MARKER
    body = outcome.output.removesuffix(marker)
    room = results.OUTPUT_LIMIT - _size(prefix) - _size(marker)
    cut = body.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return prefix + cut + marker


def redacted_view(view: ConfirmationView, redactor: Redactor) -> ConfirmationView:
    return dataclasses.replace(
        view, **{f.name: redactor.redact(getattr(view, f.name)) for f in dataclasses.fields(view)}
    )


class Conversation:
    def __init__(
        self,
        *,
        model: ModelClient,
        discovery: Discovery,
        ui: UI,
        redactor: Redactor,
        cwd: Path,
        call_timeout: float,
        session: SessionSink | None = None,
        history: list[dict[str, Any]] | None = None,
    ) -> None:
        self.model = model
        self.discovery = discovery
        self.ui = ui
        self.redactor = redactor
        self.cwd = cwd
        self.call_timeout = call_timeout
        self.session = session
        self.history: list[dict[str, Any]] = list(history or [])  # resumed items, as loaded
        self.pending_unknown = False
        self.tools = redactor.redact_obj(
            [*builtins.DEFINITIONS, *(t.definition for t in discovery.offered.values())]
        )
        self._cancel: asyncio.Event | None = None

    def cancel(self) -> None:
        """Interrupt the MCP call in flight (call on the loop's thread)."""
        if self._cancel is not None:
            self._cancel.set()

    # ---- the turn ----------------------------------------------------------------------
    async def ask(self, question: str) -> TurnReport:
        report = TurnReport(question_sent=False)
        if self.pending_unknown:
            report.acknowledgements.append(results.ACK_PROMPT)
            if not await self.ui.acknowledge(results.ACK_PROMPT):
                self._show("Question not sent: the unknown call has not been acknowledged.")
                return report
            self.pending_unknown = False
        self._record({"type": "message", "role": "user", "content": question})
        report.question_sent = True
        calls_made = 0
        tool_choice: str | None = None
        while True:
            try:
                reply = await self.model.respond(
                    self.redactor.redact_obj(self.history), self.tools, INSTRUCTIONS, tool_choice
                )
            except ModelError as exc:
                self._show(f"Model request failed: {exc}")
                return report
            for item in reply.items:
                self._record(item)
            if reply.text:
                report.answer = self.redactor.redact(reply.text)
                self._show(report.answer)
            if not reply.calls:
                return report
            for call in reply.calls:
                if calls_made >= MAX_CALLS_PER_TURN or tool_choice == "none":
                    self._show(f"Tool call {call['name']} not executed: {LIMIT_OUTPUT}")
                    output = LIMIT_OUTPUT
                else:
                    calls_made += 1
                    output = tool_output(await self._run(call, report))
                self._record(
                    {"type": "function_call_output", "call_id": call["call_id"], "output": output}
                )
            if tool_choice == "none":
                return (
                    report  # asked to finish and still calling: the outputs go in the next request
                )
            if calls_made >= MAX_CALLS_PER_TURN:
                tool_choice = "none"

    # ---- one call ------------------------------------------------------------------------
    async def _run(self, call: dict[str, Any], report: TurnReport) -> results.Outcome:
        name = call["name"]
        try:
            arguments = parse_json(call["arguments"], "arguments")
        except ProtocolError:
            arguments = None
        if name in builtins.NAMES:
            outcome = builtins.run(name, self.cwd, arguments)
            outcome = results.Outcome(outcome.status, self.redactor.redact(outcome.output))
            self._show(f"Built-in {name}: {outcome.status}")
            return outcome
        offered = self.discovery.offered.get(name)
        server = self.discovery.servers.get(offered.server) if offered else None
        if offered is None or server is None:
            outcome = results.Outcome(
                results.FAILED, f"No tool named {name} is available; nothing was sent."
            )
        elif not isinstance(arguments, dict):
            outcome = results.Outcome(
                results.FAILED,
                "The arguments are not a JSON object; nothing was sent to the server.",
            )
        else:
            view = confirmation.confirmation(
                offered.server,
                server.destination,
                offered.tool["name"],
                arguments,
                exposed_name=name,
            )
            view = redacted_view(view, self.redactor)
            if await self._approve(offered, view, report):
                outcome = await self._call(server, offered.tool["name"], arguments)
            else:
                outcome = results.denied()
        outcome = results.Outcome(outcome.status, self.redactor.redact(outcome.output))
        if outcome.status == results.UNKNOWN:
            self.pending_unknown = True
        report.calls.append(CallReport(name, outcome.status, outcome.output))
        shown_tool = offered.tool["name"] if offered else name
        where = f" on {offered.server}" if offered else ""
        self._show(f"Tool {shown_tool}{where}: {outcome.status}\n{outcome.output}")
        return outcome

    async def _approve(
        self, offered: OfferedTool, view: ConfirmationView, report: TurnReport
    ) -> bool:
        """Show this call's own confirmation and wait for the answer (APR-1/2/3)."""
        report.confirmations.append(view)
        return confirmation.is_approved(await self.ui.approve(view))

    async def _call(
        self, server: ConnectedServer, tool: str, arguments: dict[str, Any]
    ) -> results.Outcome:
        """Send the call once and map what happens; never resend (RETRY-1)."""
        self._cancel = asyncio.Event()
        call = asyncio.ensure_future(server.session.call_tool(tool, arguments))
        cancelled = asyncio.ensure_future(self._cancel.wait())
        try:
            done, _ = await asyncio.wait(
                {call, cancelled}, timeout=self.call_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            cancelled.cancel()
            self._cancel = None
            if not call.done():
                call.cancel()
            await asyncio.gather(call, cancelled, return_exceptions=True)
        if call in done and not call.cancelled():
            return _outcome_of(call)
        if cancelled in done:
            return cancelled_outcome()
        return timed_out_outcome(self.call_timeout)

    # ---- output ------------------------------------------------------------------------
    def _record(self, item: dict[str, Any]) -> None:
        item = self.redactor.redact_obj(item)
        self.history.append(item)
        if self.session is not None:
            self.session.append(item)

    def _show(self, text: str) -> None:
        self.ui.show(self.redactor.redact(text))


def timed_out_outcome(call_timeout: float) -> results.Outcome:
    return results.unknown(f"no answer within the call timeout of {call_timeout:g} s")  # RES-6


def cancelled_outcome() -> results.Outcome:
    return results.unknown("the user cancelled the call while it was running")  # RES-9


def _outcome_of(call: asyncio.Future) -> results.Outcome:
    error = call.exception()
    if error is None:
        return results.from_call_result(call.result())
    if isinstance(error, RpcError):
        return results.from_rpc_error(error.error)
    if isinstance(error, McpError):
        if error.maybe_acted:
            return results.unknown(str(error))
        return results.Outcome(results.FAILED, f"The call was not accepted: {error}.")
    return results.unknown(f"unexpected error during the call ({type(error).__name__})")
