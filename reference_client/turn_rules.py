"""The rules of a conversation's turns as a small state machine with no I/O (TURN-1, RETRY-2/3).

Strategy: in the style of h11, the turn loop tells `TurnRules` what happened (a question
is about to go out, the person answered the acknowledgement, the model asked for a call, a
call ended with a status, a reply's outputs are recorded) and asks it what to do next; it
never touches a model, a server or a terminal. So the two rules that span a turn or a whole
session are each in one place, testable without a loop, and are the seams a broken client
patches:
- TURN-1: every tool call counts, built-ins included; at most MAX_CALLS_PER_TURN run in a
  turn. A call asked for past the limit is refused (it gets an output saying so), and the
  model is then asked to finish without tools; if it still calls, the turn ends.
- RETRY-2/3: after an `unknown` outcome the next question waits for an acknowledgement
  that the call may already have run. Declined, the question is not sent and the
  acknowledgement stays pending, so a later question asks again; accepted, it is cleared.
  The pending acknowledgement survives a restart: a resumed session starts pending when
  its history holds an `unknown` output after the last question the person sent
  (`pending_in_history`), because a sent question is the only proof of an acknowledgement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from mcp_host_conformance.reference_client.results import (
    STATUS_PREFIX,
    UNKNOWN,
    Status,
)

__all__ = [
    "LIMIT_OUTPUT",
    "MAX_CALLS_PER_TURN",
    "CallDecision",
    "NextRequest",
    "QuestionGate",
    "TurnRules",
    "pending_in_history",
]

MAX_CALLS_PER_TURN = 16  # TURN-1
LIMIT_OUTPUT = (
    f"Not executed: the limit of {MAX_CALLS_PER_TURN} tool calls per turn was reached. "
    "Answer the user with what you have."
)
_UNKNOWN_OUTPUT = f"{STATUS_PREFIX}{UNKNOWN}".lower()

QuestionGate = Literal["send", "acknowledge"]
CallDecision = Literal["run", "refuse"]
NextRequest = Literal["continue", "finish", "stop"]  # finish: ask with tool_choice "none"


class TurnRules:
    """Where a conversation stands on TURN-1 and RETRY-2/3."""

    def __init__(self, *, pending_acknowledgement: bool = False) -> None:
        self.pending_acknowledgement = pending_acknowledgement
        self.calls_run = 0  # in the current turn
        self.finishing = False  # the model was asked to finish without tools

    # ---- before a question (RETRY-2/3) ------------------------------------------------
    def before_question(self) -> QuestionGate:
        """Whether the next question may go out, or an acknowledgement is needed first."""
        return "acknowledge" if self.pending_acknowledgement else "send"

    def acknowledge(self, accepted: bool) -> bool:
        """The person's answer to the acknowledgement; whether the question may go out."""
        if accepted:
            self.pending_acknowledgement = False
        return accepted

    # ---- inside a turn (TURN-1) --------------------------------------------------------
    def start_turn(self) -> None:
        self.calls_run = 0
        self.finishing = False

    def request_call(self) -> CallDecision:
        """The model asked for a call: run it (it counts) or refuse it (over the limit)."""
        # The limit is read here, at each call, so one constant governs it.
        if self.finishing or self.calls_run >= MAX_CALLS_PER_TURN:
            return "refuse"
        self.calls_run += 1
        return "run"

    def record_outcome(self, status: Status) -> None:
        """A call that ran ended with `status`; an unknown one must be acknowledged."""
        if status == UNKNOWN:
            self.pending_acknowledgement = True

    def after_outputs(self) -> NextRequest:
        """Every call of a reply has its output: what the next model request is."""
        if self.finishing:
            return "stop"  # asked to finish and still calling: the outputs go next time
        if self.calls_run >= MAX_CALLS_PER_TURN:
            self.finishing = True
            return "finish"
        return "continue"


def pending_in_history(items: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a loaded history ends with an unacknowledged unknown outcome: an output that
    states status unknown after the last user message."""
    pending = False
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            pending = False
        elif kind == "function_call_output":
            output = item.get("output")
            if isinstance(output, str) and output.lower().startswith(_UNKNOWN_OUTPUT):
                pending = True
    return pending
