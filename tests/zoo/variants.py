"""Accepted variants: the reference client with one behaviour changed in a way the rules
allow, or presented the way real hosts present it. The suite must fail nothing against them
but the rules about that very presentation (tests/test_accepted_variants.py): a case that
fails one otherwise checks the reference client's way of meeting a rule, not the rule.

The presentations real hosts use: a menu instead of a typed y/n (Codex), no arguments
shown at the prompt and a turn that ends on a refusal (opencode), no status word in what
the model is told (pydantic-ai), status lines in a format of their own. Each is judged by
what the servers and the model received; only the rule that asks for a presentation (the
arguments shown, APR-4/5; the status lines' wording, DISC-1/3) may fail it.

Strategy: a variant is a `BrokenClient` whose `fails` is empty (so the zoo's machinery
applies its seams, in this process and in a host command run in a process of its own), and
which is not in the zoo's registry: it is loaded as `--client
mcp_host_conformance.zoo.variants:NAME`. Each says which rules it exercises, and which
rules of presentation it does not follow (`breaks`: the suite must fail exactly those).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_host_conformance.zoo.client import BrokenClient, constant, replaced

__all__ = ["VARIANTS", "AcceptedVariant"]


@dataclass(frozen=True)
class AcceptedVariant(BrokenClient):
    """A reference client changed within the rules; `exercises`: the rules it tries."""

    exercises: frozenset[str] = field(default=frozenset())
    # the rules about a presentation it does not follow: the suite fails exactly these
    breaks: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        object.__setattr__(self, "fails", frozenset())
        object.__setattr__(self, "seams", tuple(self.seams))
        object.__setattr__(self, "exercises", frozenset(self.exercises))
        object.__setattr__(self, "breaks", frozenset(self.breaks))
        object.__setattr__(self, "defined_in", (__name__, __file__))


@replaced("mcp_host_conformance.reference_client.confirmation.shown_arguments")
def _quoted_arguments(original):
    import json

    def shown_arguments(arguments):
        return json.dumps(original(arguments), ensure_ascii=False)  # the seed's quoted form

    return shown_arguments


@replaced("mcp_host_conformance.reference_client.transports.http.HttpTransport.resume_stream")
def _never_resume(original):
    from mcp_host_conformance.reference_client.transports import TransportError

    del original

    async def resume_stream(self, request_id, stream, lost):
        raise TransportError(lost or "the event stream ended without a response; not resumed")

    return resume_stream


@replaced("mcp_host_conformance.reference_client.results.render_content")
def _structured_after_text(original):
    import json

    def render(result):
        text = original(result)
        structured = result.get("structuredContent") if isinstance(result, dict) else None
        if structured is not None and not text.endswith(
            json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
        ):
            text += "\nstructuredContent: " + json.dumps(structured, ensure_ascii=False)
        return text

    return render


@replaced("mcp_host_conformance.reference_client.model.ModelClient.respond")
def _no_status_to_the_model(original):
    from mcp_host_conformance.reference_client.results import STATUS_PREFIX

    def without_status(item):
        output = item.get("output") if item.get("type") == "function_call_output" else None
        if not isinstance(output, str) or not output.startswith(STATUS_PREFIX):
            return item
        return {**item, "output": output.partition("\n")[2]}  # the output as it came

    async def respond(self, input_items, tools, instructions, tool_choice=None):
        items = [without_status(item) for item in input_items]
        return await original(self, items, tools, instructions, tool_choice)

    return respond


@replaced("mcp_host_conformance.reference_client.adapter.confirmation_record")
def _as_a_menu(original):
    import dataclasses

    def confirmation_record(view):
        # Approve once / Deny, Deny selected: Enter denies, as the host's menu decides
        return dataclasses.replace(original(view), choices=MENU, default=MENU[1])

    return confirmation_record


MENU = ("Approve once", "Deny")


@replaced("mcp_host_conformance.reference_client.adapter._BridgeUI.approve")
def _pick_from_the_menu(original):
    async def approve(self, view):
        asked = self.approver
        if asked is None:
            return await original(self, view)

        def pick(record):  # the adapter picks as a person would: "" its default, "y" approve
            typed = asked(record)
            entry = record.default if typed == "" else MENU[0] if typed == "y" else MENU[1]
            return "y" if entry == MENU[0] else "n"

        self.approver = pick
        try:
            return await original(self, view)
        finally:
            self.approver = asked

    return approve


@replaced("mcp_host_conformance.reference_client.confirmation.confirmation")
def _no_arguments_shown(original):
    import dataclasses

    def confirmation(server, destination, tool, arguments, *, exposed_name=None):
        view = original(server, destination, tool, arguments, exposed_name=exposed_name)
        text = view.text.replace(f"Arguments: {view.arguments}\n", "")
        return dataclasses.replace(view, arguments="", text=text)

    return confirmation


_RULES = "mcp_host_conformance.reference_client.turn_rules.TurnRules"


@replaced(f"{_RULES}.record_outcome")
def _note_refusal(original):
    def record_outcome(self, status):
        if status == "denied":
            self.zoo_refused = True  # the turn ends at this refusal
        original(self, status)

    return record_outcome


@replaced(f"{_RULES}.start_turn")
def _new_turn(original):
    def start_turn(self):
        self.zoo_refused = False
        original(self)

    return start_turn


@replaced(f"{_RULES}.request_call")
def _nothing_after_refusal(original):
    def request_call(self):  # the reply's calls after the refusal are not run
        return "refuse" if getattr(self, "zoo_refused", False) else original(self)

    return request_call


@replaced(f"{_RULES}.after_outputs")
def _end_turn_on_refusal(original):
    def after_outputs(self):  # no further model request: the outputs go with the next question
        return "stop" if getattr(self, "zoo_refused", False) else original(self)

    return after_outputs


@replaced("mcp_host_conformance.reference_client.discovery.connected_line")
def _own_connected_line(original):
    import dataclasses

    def connected_line(name, tools, destination):
        line = original(name, tools, destination)
        return dataclasses.replace(line, line=f"✓ {name} ({tools} tools) {destination}")

    return connected_line


@replaced("mcp_host_conformance.reference_client.discovery.unavailable_line")
def _own_unavailable_line(original):
    import dataclasses

    def unavailable_line(name, destination, reason):
        line = original(name, destination, reason)
        return dataclasses.replace(line, line=f"✗ {name} failed to start: {line.reason}")

    return unavailable_line


VARIANTS = [
    AcceptedVariant(
        "quotes-arguments",
        "Shows the confirmation's arguments in the seed's quoted form (a JSON string of the "
        "pretty JSON) and words the warning its own way.",
        frozenset(),
        (
            _quoted_arguments,
            constant(
                "mcp_host_conformance.reference_client.confirmation.WARNING",
                "This MCP server will receive these arguments. What it does with them is "
                "outside the host's control.",
            ),
        ),
        exercises=frozenset({"APR-4", "APR-5"}),
    ),
    AcceptedVariant(
        "never-resumes",
        "Does not resume an SSE stream the server closes before the response: the call is unknown.",
        frozenset(),
        (_never_resume,),
        exercises=frozenset({"RES-1", "RES-5", "RES-6", "RES-7", "RETRY-1"}),
    ),
    AcceptedVariant(
        "shows-structured-beside-text",
        "Hands the model a result's structuredContent after its text blocks, also when there "
        "is text.",
        frozenset(),
        (_structured_after_text,),
        exercises=frozenset({"RES-1", "RES-4"}),
    ),
    AcceptedVariant(
        "states-no-status",
        "Hands the model each call's output as it came, with no status word (the person is "
        "still shown each status), as pydantic-ai does: where an output does not say its "
        "status in words (a completed or failed call; an unknown one still says 'the outcome "
        "of this call is unknown'), the rules that give that status fail (RES-1, RES-5, and "
        "RES-7 and RES-8 for their completed calls), as the catalog's RES decision says; no "
        "other rule does, every rule's substance holding.",
        frozenset(),
        (_no_status_to_the_model,),
        exercises=frozenset(
            {
                "RES-1",
                "RES-2",
                "RES-3",
                "RES-4",
                "RES-5",
                "RES-6",
                "RES-7",
                "RES-8",
                "RES-9",
                "RES-10",
                "RES-12",
                "APR-2",
                "RETRY-1",
            }
        ),
        breaks=frozenset({"RES-1", "RES-5", "RES-7", "RES-8"}),
    ),
    AcceptedVariant(
        "asks-with-a-menu",
        "Shows each confirmation as a menu (Approve once / Deny, Deny selected), as Codex "
        "does; the adapter picks the entry a person's answer means.",
        frozenset(),
        (_as_a_menu, _pick_from_the_menu),
        exercises=frozenset({"APR-1", "APR-2", "APR-3", "APR-4"}),
    ),
    AcceptedVariant(
        "shows-no-arguments",
        "Shows no arguments at the confirmation (server, destination, tool and warning only), "
        "as opencode does: only the rules about the arguments shown fail.",
        frozenset(),
        (_no_arguments_shown,),
        exercises=frozenset({"APR-1", "APR-2", "APR-3", "RES-11"}),
        breaks=frozenset({"APR-4", "APR-5"}),
    ),
    AcceptedVariant(
        "ends-turn-on-refusal",
        "Ends the turn at a refused call, as opencode does: the reply's later calls are not "
        "run, and every output goes with the next question instead of a model request now.",
        frozenset(),
        (_note_refusal, _new_turn, _nothing_after_refusal, _end_turn_on_refusal),
        exercises=frozenset({"APR-1", "APR-2", "APR-3", "EXP-5", "RES-11", "CFG-6"}),
    ),
    AcceptedVariant(
        "own-status-lines",
        "Shows each server's status line in a format of its own (`✓ docs (3 tools) URL`, "
        "`✗ docs failed to start: REASON`): only the rules that state the format fail.",
        frozenset(),
        (_own_connected_line, _own_unavailable_line),
        exercises=frozenset({"DISC-4", "DISC-6", "DISC-7", "DISC-8", "DISC-10", "STDIO-6"}),
        breaks=frozenset({"DISC-1", "DISC-3"}),
    ),
]
(
    QUOTES_ARGUMENTS,
    NEVER_RESUMES,
    SHOWS_STRUCTURED_BESIDE_TEXT,
    STATES_NO_STATUS,
    ASKS_WITH_A_MENU,
    SHOWS_NO_ARGUMENTS,
    ENDS_TURN_ON_REFUSAL,
    OWN_STATUS_LINES,
) = VARIANTS
