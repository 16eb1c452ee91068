"""Broken clients for TURN: limits inside one turn (`no-call-limit` is in retry.py)."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    constant,
    replaced,
    replaced_when,
    same_until,
)

_TURN_RULES = "mcp_host_conformance.reference_client.turn_rules"
_REQUEST_CALL = f"{_TURN_RULES}.TurnRules.request_call"
RUN_CALL = "mcp_host_conformance.reference_client.turn.Conversation.run_call"


def ended(status: str):
    """The `differs` of a `same_until(RUN_CALL, ...)` seam: a call ended with the status
    `results.<status>` (or raised), the event the clients that keep such calls for later
    wait for (the reference client is imported only when asked: after the patches)."""

    def differs(outcome, *args, **kwargs) -> bool:
        from mcp_host_conformance.reference_client import results

        kind, answer = outcome
        return kind == "raise" or answer.status == getattr(results, status)

    return differs


def _near_the_limit(outcome, rules) -> bool:
    """The turn's 15th call ran or a call was refused: below that, any call limit from 15
    up (or none, or one looked at per reply) runs every call as the reference's 16 does."""
    return outcome != ("return", "run") or rules.calls_run >= 15


def call_limit(value: int):
    """The seam of MAX_CALLS_PER_TURN set to `value` (15 or more)."""
    return same_until(_REQUEST_CALL, _near_the_limit)(
        constant(f"{_TURN_RULES}.MAX_CALLS_PER_TURN", value)
    )


@same_until(_REQUEST_CALL, _near_the_limit)
@replaced(_REQUEST_CALL)
def _limit_per_reply(original):
    from mcp_host_conformance.reference_client import turn_rules

    del original

    def request_call(self):
        # The limit is looked at once per model reply: a reply that starts under it runs
        # all its calls.
        if not getattr(self, "zoo_reply_open", False):
            self.zoo_reply_open = True
            self.zoo_reply_runs = (
                not self.finishing and self.calls_run < turn_rules.MAX_CALLS_PER_TURN
            )
        if not self.zoo_reply_runs:
            return "refuse"
        self.calls_run += 1
        return "run"

    return request_call


@same_until(_REQUEST_CALL, _near_the_limit)  # it only notes where a reply ends
@replaced(f"{_TURN_RULES}.TurnRules.after_outputs")
def _reply_done(original):
    def after_outputs(self):
        self.zoo_reply_open = False
        return original(self)

    return after_outputs


def _fifteen_calls_in_the_session(outcome, conversation, item) -> bool:
    """The conversation holds 15 function calls: before, a count never reset is under the
    limit wherever the reference's count per turn is (it runs and refuses the same calls)."""
    calls = sum(1 for held in conversation.history if held.get("type") == "function_call")
    return calls >= 15


@same_until(
    "mcp_host_conformance.reference_client.turn.Conversation.record", _fifteen_calls_in_the_session
)
@replaced(f"{_TURN_RULES}.TurnRules.start_turn")
def _count_per_session(original):
    del original

    def start_turn(self):
        self.finishing = False  # the call count is never reset: one budget per session

    return start_turn


def _at_the_limit(original, self) -> bool:
    """`after_outputs` would say other than "continue" (asked without calling it: it sets
    `finishing`)."""
    from mcp_host_conformance.reference_client import turn_rules

    return self.finishing or self.calls_run >= turn_rules.MAX_CALLS_PER_TURN


@replaced_when(f"{_TURN_RULES}.TurnRules.after_outputs", _at_the_limit)
def _never_finish(original):
    del original
    return lambda self: "continue"  # refuses calls past the limit, but asks the model again


CLIENTS = [
    BrokenClient(
        "limit-checked-per-reply",
        "Checks the call limit once per model reply: a reply started under it runs whole.",
        {"TURN-1"},
        (_limit_per_reply, _reply_done),
    ),
    BrokenClient(
        "limit-per-session",
        "Never resets the count of tool calls: 16 per session, not per turn.",
        {"TURN-1"},
        (_count_per_session,),
    ),
    BrokenClient(
        "keeps-asking-after-limit",
        "Refuses calls past the limit but keeps asking the model, so the turn never ends.",
        {"TURN-1"},
        (_never_finish,),
    ),
    BrokenClient(
        "stops-at-15-calls",
        "Allows 15 tool calls per turn instead of 16.",
        {"TURN-1"},
        (call_limit(15),),
    ),
]
