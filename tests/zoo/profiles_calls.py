"""Broken clients for the optional profiles that act on a call: schema validation (ARGS-1)
and untrusted marking (UNTR-1). Each is `reference-profiles` with one seam patched."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import BrokenClient, pure, replaced, replaced_when

_VALIDATION = "mcp_host_conformance.reference_client.validation"


def _shallow(schema):
    """The schema as a top-level-only check sees it: required members and the declared type
    of each property, nothing nested, no enum, bounds or extra-member rule."""
    if not isinstance(schema, dict):
        return schema
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    return {
        "type": "object",
        "required": schema.get("required", []),
        "properties": {
            name: {"type": prop["type"]}
            for name, prop in properties.items()
            if isinstance(prop, dict) and isinstance(prop.get("type"), str | list)
        },
    }


@replaced(f"{_VALIDATION}.argument_problem")
@pure
def _top_level_only(original):
    def argument_problem(schema, arguments):
        return original(_shallow(schema), arguments)

    return argument_problem


def _bools_as_numbers(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, dict):
        return {k: _bools_as_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bools_as_numbers(v) for v in value]
    return value


@replaced(f"{_VALIDATION}.argument_problem")
@pure
def _bool_is_integer(original):
    def argument_problem(schema, arguments):
        # A check written with Python's isinstance(value, int): True passes as 1.
        return original(schema, _bools_as_numbers(arguments))

    return argument_problem


def _defaults_missing(original, self, offered, arguments) -> bool:
    schema = offered.tool.get("inputSchema") or {}
    return any(
        isinstance(prop, dict) and "default" in prop and name not in arguments
        for name, prop in (schema.get("properties") or {}).items()
    )


@replaced_when(
    "mcp_host_conformance.reference_client.turn.Conversation.check_arguments", _defaults_missing
)
def _fills_defaults(original):
    def check_arguments(self, offered, arguments):
        problem = original(self, offered, arguments)
        if problem is None:
            schema = offered.tool.get("inputSchema") or {}
            for name, prop in (schema.get("properties") or {}).items():
                if isinstance(prop, dict) and "default" in prop and name not in arguments:
                    arguments[name] = prop["default"]  # the call is sent with it
        return problem

    return check_arguments


_POLICY = "mcp_host_conformance.reference_client.policy.ProfilePolicy"


def _of_a_server(original, self, outcome, server) -> bool:
    return server is not None


@replaced_when(f"{_POLICY}.model_output", _of_a_server)
def _marks_after(original):
    from mcp_host_conformance.reference_client import results
    from mcp_host_conformance.reference_client.policy import UNTRUSTED_NOTE

    del original

    def model_output(self, outcome, server):
        # a server's output (`_of_a_server`): the marking appended to the output, then the
        # output limit applied to it all
        marked = results.Outcome(
            outcome.status, f"{outcome.output}\n{UNTRUSTED_NOTE.format(server=server)}"
        )
        return results.model_output(marked)

    return model_output


def _not_completed(original, self, outcome, server) -> bool:
    return outcome.status != "completed"


@replaced_when(f"{_POLICY}.model_output", _not_completed)
def _marks_completed_only(original):
    from mcp_host_conformance.reference_client import results

    del original

    def model_output(self, outcome, server):
        return results.model_output(outcome)  # unmarked: not completed (`_not_completed`)

    return model_output


CLIENTS = [
    BrokenClient(
        "validates-top-level-only",
        "Checks only the required members and each property's declared type: nested objects, "
        "arrays, enum, bounds, oneOf and additionalProperties go unchecked.",
        {"ARGS-1"},
        (_top_level_only,),
        base="profiles",
    ),
    BrokenClient(
        "bool-is-an-integer",
        "Validates as if true and false were the integers 1 and 0 (Python's isinstance).",
        {"ARGS-1"},
        (_bool_is_integer,),
        base="profiles",
    ),
    BrokenClient(
        "fills-schema-defaults",
        "Validates, then sends the arguments with the schema's defaults filled in.",
        # APR-5: the server receives other arguments than the model sent (monitor arguments-whole)
        {"ARGS-1", "APR-5"},
        (_fills_defaults,),
        base="profiles",
        target="ARGS-1",
    ),
    BrokenClient(
        "marks-untrusted-after-content",
        "Appends the untrusted marking after the result (and the 64 KiB cut can drop it).",
        {"UNTR-1"},
        (_marks_after,),
        base="profiles",
    ),
    BrokenClient(
        "marks-completed-only",
        "Marks completed results untrusted, not failed ones or those cut at 64 KiB.",
        {"UNTR-1"},
        (_marks_completed_only,),
        base="profiles",
    ),
]
