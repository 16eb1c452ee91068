"""One question's turn: model -> approval -> call -> result -> model, until it answers.

Strategy: `Conversation` owns the history (Responses input items) and walks the loop; the
texts come from the pure modules and the rules that span a turn or a session (TURN-1, the
16-call limit; RETRY-2/3, the pending acknowledgement) from `turn_rules.TurnRules`, which
the loop asks at each step. What stays here is the order of things:
- APR-1/2/3: every MCP call gets its own confirmation and waits for it; anything but yes
  denies and nothing is sent; annotations are never looked at.
- RES-*: the call runs once (RETRY-1) under the call timeout; timeout (RES-6), a connection
  lost after sending (RES-7), an oversized answer (RES-8), a user cancel (RES-9) or a
  garbled answer are `unknown`; a JSON-RPC error or `isError` is `failed`.
- RES-11: each function_call of a reply gets exactly one function_call_output, in order,
  before the next model request, whatever happened.
- SESS-1 / CRED-3: every item is redacted, then shown, saved and sent.
- HARD-1: whatever is shown passes `display.terminal_safe`; a server's output is shown as
  an indented block, so it cannot draw a line that looks like one of the host's own.

The public methods (`ask_approval`, `send_call`, `run_call`, `record`, `show`) are each one
step of the loop, named for what they do: the broken clients of the zoo patch them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mcp_host_conformance.reference_client import builtins, confirmation, offering, results
from mcp_host_conformance.reference_client.confirmation import ApprovalDecision, ConfirmationView
from mcp_host_conformance.reference_client.discovery import ConnectedServer, Discovery, OfferedTool
from mcp_host_conformance.reference_client.display import (
    answer_block,
    server_block,
    terminal_safe,
)
from mcp_host_conformance.reference_client.model import ModelClient, ModelError
from mcp_host_conformance.reference_client.policy import ProfilePolicy
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.rpc import RpcError
from mcp_host_conformance.reference_client.transports import McpError, ProtocolError, parse_json
from mcp_host_conformance.reference_client.turn_rules import (
    LIMIT_OUTPUT,
    TurnRules,
    pending_in_history,
)

__all__ = [
    "INSTRUCTIONS",
    "UI",
    "CallReport",
    "Conversation",
    "SessionSink",
    "TurnReport",
    "cancelled_outcome",
    "outcome_of_call",
    "timed_out_outcome",
]

SYSTEM_TEXT = (
    "You are the assistant of a terminal MCP host. Use the tools when they help; the user "
    "approves every MCP tool call."
)
INSTRUCTIONS = offering.INSTRUCTIONS + "\n\n" + SYSTEM_TEXT
NOT_ACKNOWLEDGED = "Question not sent: the unknown call has not been acknowledged."


class UI(Protocol):
    def show(self, text: str) -> None: ...

    async def approve(self, view: ConfirmationView) -> str: ...

    async def acknowledge(self, prompt: str) -> bool: ...


@dataclass
class CallReport:
    tool: str  # the exposed name
    status: results.Status
    output: str  # as shown


@dataclass
class TurnReport:
    question_sent: bool
    confirmations: list[ConfirmationView] = field(default_factory=list)
    calls: list[CallReport] = field(default_factory=list)
    acknowledgements: list[str] = field(default_factory=list)
    answer: str = ""


class SessionSink(Protocol):
    def append(self, item: dict[str, Any]) -> None: ...


def redacted_view(view: ConfirmationView, redactor: Redactor) -> ConfirmationView:
    return dataclasses.replace(
        view, **{f.name: redactor.redact(getattr(view, f.name)) for f in dataclasses.fields(view)}
    )


class Conversation:
    def __init__(
        self,
        *,
        model: ModelClient,
        ui: UI,
        redactor: Redactor,
        cwd: Path,
        call_timeout: float,
        discovery: Discovery | None = None,
        session: SessionSink | None = None,
        history: list[dict[str, Any]] | None = None,
        policy: ProfilePolicy | None = None,
    ) -> None:
        self.policy = policy or ProfilePolicy()  # the optional profiles (none: the core)
        self.model = model
        self.ui = ui
        self.redactor = redactor
        self.cwd = cwd
        self.call_timeout = call_timeout
        self.session = session
        self.history: list[dict[str, Any]] = list(history or [])  # resumed items, as loaded
        self.rules = TurnRules(pending_acknowledgement=pending_in_history(self.history))
        self.discovery = Discovery()
        self.tools: list[dict[str, Any]] = []
        self.offer(discovery or Discovery())
        self._cancel: asyncio.Event | None = None

    def offer(self, discovery: Discovery) -> None:
        """Fix the tools of this conversation: the built-ins and what discovery found (with
        pinning, only the tools a person approved: `enabled`)."""
        self.discovery = discovery
        self.tools = self.redactor.redact_obj(
            [
                *builtins.DEFINITIONS,
                *(t.definition for t in discovery.offered.values() if self.enabled(t)),
            ]
        )

    def enabled(self, offered: OfferedTool) -> bool:
        """Whether a discovered tool may be offered and called (profile pinning)."""
        server = self.discovery.servers.get(offered.server)
        destination = server.destination if server is not None else ""
        return self.policy.enabled(offered.server, offered.tool, destination)

    def check_arguments(self, offered: OfferedTool, arguments: dict[str, Any]) -> str | None:
        """Why these arguments may not be sent (profile schema-validation), or None."""
        return self.policy.argument_problem(offered.tool, arguments)

    def output_for_model(self, call: dict[str, Any], outcome: results.Outcome) -> str:
        """The function_call_output text of one call's outcome (profile untrusted-marking
        marks what a server returned)."""
        offered = self.discovery.offered.get(call["name"])
        return self.policy.model_output(outcome, offered.server if offered else None)

    def cancel(self) -> None:
        """Interrupt the MCP call in flight (call on the loop's thread)."""
        if self._cancel is not None:
            self._cancel.set()

    # ---- the turn ----------------------------------------------------------------------
    async def ask(self, question: str) -> TurnReport:
        report = TurnReport(question_sent=False)
        if self.rules.before_question() == "acknowledge":
            report.acknowledgements.append(results.ACK_PROMPT)
            accepted = await self.ui.acknowledge(terminal_safe(results.ACK_PROMPT))
            if not self.rules.acknowledge(accepted):
                self.show(NOT_ACKNOWLEDGED)
                return report
        self.record({"type": "message", "role": "user", "content": question})
        report.question_sent = True
        self.rules.start_turn()
        tool_choice: str | None = None
        while True:
            try:
                reply = await self.model.respond(
                    self.redactor.redact_obj(self.history), self.tools, INSTRUCTIONS, tool_choice
                )
            except ModelError as exc:
                self.show(f"Model request failed: {terminal_safe(str(exc), one_line=True)}")
                return report
            for item in reply.items:
                self.record(item)
            if reply.text:
                report.answer = terminal_safe(self.redactor.redact(reply.text))
                self.show(answer_block(report.answer))
            if not reply.calls:
                return report
            for call in reply.calls:
                if self.rules.request_call() == "run":
                    output = self.output_for_model(call, await self.run_call(call, report))
                else:
                    name = terminal_safe(call["name"], one_line=True)
                    self.show(f"Tool call {name} not executed: {LIMIT_OUTPUT}")
                    output = LIMIT_OUTPUT
                self.record(
                    {"type": "function_call_output", "call_id": call["call_id"], "output": output}
                )
            step = self.rules.after_outputs()
            if step == "stop":
                return report  # asked to finish and still calling: outputs go next time
            if step == "finish":
                tool_choice = "none"

    # ---- one call ------------------------------------------------------------------------
    async def run_call(self, call: dict[str, Any], report: TurnReport) -> results.Outcome:
        """One function call of the model, from its confirmation to its shown outcome."""
        name = call["name"]
        try:
            arguments = parse_json(call["arguments"], "arguments")
        except ProtocolError:
            arguments = None
        if name in builtins.NAMES:
            outcome = builtins.run(name, self.cwd, arguments)
            outcome = results.Outcome(outcome.status, self.redactor.redact(outcome.output))
            self.show(f"Built-in {name}: {outcome.status}")
            return outcome
        offered = self.discovery.offered.get(name)
        server = self.discovery.servers.get(offered.server) if offered else None
        if offered is None or server is None or not self.enabled(offered):
            outcome = results.Outcome(
                results.FAILED, f"No tool named {name} is available; nothing was sent."
            )
        elif not isinstance(arguments, dict):
            outcome = results.Outcome(
                results.FAILED,
                "The arguments are not a JSON object; nothing was sent to the server.",
            )
        elif (problem := self.check_arguments(offered, arguments)) is not None:
            outcome = results.Outcome(
                results.FAILED, f"The call was not sent: {problem}. Fix the arguments and retry."
            )
        else:
            view = confirmation.confirmation(
                offered.server,
                server.destination,
                offered.tool["name"],
                self.redactor.redact_obj(arguments),
                exposed_name=name,
            )
            view = redacted_view(view, self.redactor)
            if await self.ask_approval(offered, view, report) == "approved":
                outcome = await self.send_call(server, offered.tool["name"], arguments)
            else:
                outcome = results.denied()
        outcome = results.Outcome(outcome.status, self.redactor.redact(outcome.output))
        self.rules.record_outcome(outcome.status)
        report.calls.append(CallReport(name, outcome.status, terminal_safe(outcome.output)))
        shown_tool = offered.tool["name"] if offered else name
        where = f" on {offered.server}" if offered else ""
        heading = terminal_safe(f"Tool {shown_tool}{where}: {outcome.status}", one_line=True)
        self.show(f"{heading}\n{server_block(outcome.output)}")
        return outcome

    async def ask_approval(
        self, offered: OfferedTool, view: ConfirmationView, report: TurnReport
    ) -> ApprovalDecision:
        """Show this call's own confirmation and wait for the answer (APR-1/2/3)."""
        report.confirmations.append(view)
        return confirmation.decide(await self.ui.approve(view))

    async def send_call(
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
            return outcome_of_call(call)
        if cancelled in done:
            return cancelled_outcome()
        return timed_out_outcome(self.call_timeout)

    # ---- output ------------------------------------------------------------------------
    def record(self, item: dict[str, Any]) -> None:
        """Add an item to the history and the session file, secrets removed (SESS-1)."""
        item = self.redactor.redact_obj(item)
        self.history.append(item)
        if self.session is not None:
            self.session.append(item)

    def show(self, text: str) -> None:
        """Show a line to the person: secrets removed, control characters neutralized."""
        self.ui.show(terminal_safe(self.redactor.redact(text)))


def timed_out_outcome(call_timeout: float) -> results.Outcome:
    return results.unknown(f"no answer within the call timeout of {call_timeout:g} s")  # RES-6


def cancelled_outcome() -> results.Outcome:
    return results.unknown("the user cancelled the call while it was running")  # RES-9


def outcome_of_call(call: asyncio.Future[Any]) -> results.Outcome:
    """The outcome of a finished `call_tool` task: its result, or what its error means."""
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
