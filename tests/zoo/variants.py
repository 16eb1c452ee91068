"""Accepted variants: the reference client with one behaviour changed in a way the rules
allow. The suite must fail nothing against them (tests/test_accepted_variants.py): a case
that fails one checks the reference client's way of meeting a rule, not the rule.

Strategy: a variant is a `BrokenClient` whose `fails` is empty (so the zoo's machinery
applies its seams, in this process and in a host command run in a process of its own), and
which is not in the zoo's registry: it is loaded as `--client
mcp_host_conformance.zoo.variants:NAME`. Each says which rules it exercises.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_host_conformance.zoo.client import BrokenClient, constant, replaced

__all__ = ["VARIANTS", "AcceptedVariant"]


@dataclass(frozen=True)
class AcceptedVariant(BrokenClient):
    """A reference client changed within the rules; `exercises`: the rules it tries."""

    exercises: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        object.__setattr__(self, "fails", frozenset())
        object.__setattr__(self, "seams", tuple(self.seams))
        object.__setattr__(self, "exercises", frozenset(self.exercises))
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
]
QUOTES_ARGUMENTS, NEVER_RESUMES, SHOWS_STRUCTURED_BESIDE_TEXT = VARIANTS
