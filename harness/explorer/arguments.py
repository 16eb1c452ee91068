"""A call's catalogue arguments as the text or JSON the mock model sends.

Strategy: a model fills in the form it was given and gets it wrong in a few ways, so the
odd values start from what the mock model builds from the called tool's schema (its
required members, simple values) and add a member the schema does not list or give one a
type it does not allow. The schema is the catalogue's value for the called tool, not what
the host offered, so a scenario file replays the same arguments whatever the host does.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_host_conformance.mocks.responses.script import arguments_for_schema

__all__ = ["call_arguments"]

# The wrong type for a member, by the type its schema declares, in the order tried: a
# boolean where a number is wanted is the one a lax check takes for right (Python's bool is
# an int, JavaScript's Number(true) is 1), so a member that takes a number gets it first.
WRONG_TYPES: tuple[tuple[str, Any], ...] = (
    ("integer", True),
    ("number", True),
    ("string", 42),
    ("boolean", "true"),
)


def call_arguments(kind: str, schema: Any) -> Any:
    """What the model sends for the `arguments` value `kind` to a tool of input `schema`:
    None (the mock model builds them from the schema the host offered), a JSON value, or
    text sent as it is."""
    if kind == "over-2-kib":
        return {"text": "a" * 3000}
    if kind == "over-2-kib-multi-byte":  # 1,200 characters, 3,600 bytes of UTF-8
        return {"text": "€" * 1200}
    if kind == "not-json":
        return '{"q": unquoted'
    if kind == "an-extra-field":
        return {**arguments_for_schema(schema), "unexpected": "field"}
    if kind == "a-wrong-type":
        return _wrong_type(schema)
    return None


def _wrong_type(schema: Any) -> Any:
    arguments = arguments_for_schema(schema)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    members = properties.items() if isinstance(properties, dict) else ()
    for declared, wrong in WRONG_TYPES:
        for name, member in members:
            if isinstance(member, dict) and member.get("type") == declared:
                return {**arguments, name: wrong}
    # a schema that types no member: the object itself as a string of JSON, as a model that
    # encodes its arguments twice sends them
    return json.dumps(json.dumps(arguments))
