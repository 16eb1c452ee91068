"""ARGS: arguments checked against the input schema (optional profile `schema-validation`).

The model calls one tool fifteen times in one turn: twelve calls whose arguments break its
schema in the ways a hand-written check gets wrong (a nested object's type, required member
and extra member, the nested object defined through `$ref` and `$defs`, an array item,
`enum`, `minimum`, `oneOf`, `additionalProperties: false`, an integer given as 1.5 or as
`true`), and three valid ones (nested, Unicode, `null` where `oneOf` allows it). The
server's journal must hold exactly the three valid calls, each with its arguments as the
model wrote them (as JSON: no member added, dropped or converted, so a host that fills in
schema defaults or coerces types is caught too), and the model must be told `failed` for
each invalid one.
"""

from __future__ import annotations

import json

import pytest

from mcp_host_conformance.harness.cases.observe import (
    call_outputs,
    output_text,
    status_contradiction,
)
from mcp_host_conformance.harness.cases.profile_support import call_arguments
from mcp_host_conformance.harness.verdicts.outcomes import check, precondition
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

pytestmark = pytest.mark.mcphc_profile("schema-validation")

# The nested object is a `$ref` to `$defs`, as Pydantic-based servers (FastMCP and others)
# write every model: a check that does not follow references lets its breaks through.
SCHEMA = {
    "$defs": {
        "Filter": {
            "type": "object",
            "properties": {"tag": {"type": "string"}},
            "required": ["tag"],
            "additionalProperties": False,
            "title": "Filter",
        }
    },
    "type": "object",
    "properties": {
        "q": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1},
        "mode": {"enum": ["fast", "deep"], "default": "fast"},
        "filter": {"$ref": "#/$defs/Filter"},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "target": {"oneOf": [{"type": "string", "pattern": "^https://"}, {"type": "null"}]},
    },
    "required": ["q"],
    "additionalProperties": False,
}

INVALID = {
    "top-level type": {"q": 5},
    "required member": {"limit": 2},
    "enum": {"q": "enum", "mode": "slow"},
    "additionalProperties": {"q": "extra", "extra": 1},
    "nested type": {"q": "nested-type", "filter": {"tag": 7}},
    "nested required": {"q": "nested-required", "filter": {}},
    "nested additionalProperties": {"q": "nested-extra", "filter": {"tag": "a", "x": 1}},
    "array item": {"q": "array-item", "ids": [1, "two"]},
    "minimum": {"q": "minimum", "limit": 0},
    "oneOf": {"q": "one-of", "target": "http://plain.example.invalid"},
    "integer as 1.5": {"q": "fraction", "limit": 1.5},
    "integer as true": {"q": "boolean", "limit": True},
}
VALID = [
    {"q": "plain"},
    {
        "q": "nested ✓ ünïcode",
        "limit": 3,
        "mode": "deep",
        "filter": {"tag": "t"},
        "ids": [1, 2],
        "target": "https://x.example.invalid/a",
    },
    {"q": "null-target", "target": None, "ids": []},
]


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@pytest.mark.mcphc_requirements("ARGS-1")
def test_invalid_arguments_are_never_sent(host, http_mock, model):
    """Arguments are checked against the tool's input schema before sending; invalid arguments
    are never sent and give `failed`. **Decision:** valid arguments are sent unchanged."""
    docs = http_mock(
        ServerSpec(tools=[Tool("search", "Searches.", SCHEMA, reply=Reply.text("found"))])
    )
    host.add_http("docs", docs)
    running = host.start()
    calls = [*INVALID.values(), *VALID]
    model.script(
        [
            Step.calls([Step.call(server="docs", tool="search", arguments=a) for a in calls]),
            Step.text("done"),
        ]
    )
    turn = running.ask("search in every way")

    pairs = call_outputs(model)
    precondition(
        len(pairs) == len(calls) and all(len(outputs) == 1 for _call, outputs in pairs),
        ids="RES-11",
        expected=f"{len(calls)} calls, each with one paired output in the next model request",
        actual=f"{len(pairs)} calls; outputs per call {[len(o) for _c, o in pairs]}",
    )
    received = [_json(a) for a in call_arguments(docs.journal, "search")]
    sent_invalid = [label for label, a in INVALID.items() if _json(a) in received]
    check(
        not sent_invalid,
        ids="ARGS-1",
        expected="no call whose arguments break the schema reaches the server",
        actual=f"sent although invalid: {sent_invalid}",
    )
    # A status is presentation: the model need not be told one in words, but what it is
    # told, and what the person is shown, must not say the invalid calls did anything else.
    not_failed = {
        label: problem
        for label, (_call, outputs) in zip(INVALID, pairs, strict=False)
        if (problem := status_contradiction(outputs[0], "failed"))
    }
    shown = sorted(c.status for c in turn.calls)
    wanted = sorted(["failed"] * len(INVALID) + ["completed"] * len(VALID))
    check(
        not not_failed and shown == wanted,
        ids="ARGS-1",
        expected=(
            "every call with invalid arguments failed: no other status told the model, "
            f"{len(INVALID)} failed shown to the person (and {len(VALID)} completed)"
        ),
        actual=f"told the model: {not_failed}; shown: {shown}",
    )
    expected = [_json(a) for a in VALID]
    check(
        received == expected,
        ids="ARGS-1",
        expected="exactly the three valid calls reach the server, each with its arguments "
        "unchanged (as JSON)",
        actual=f"the server received {received}",
    )
    valid_outputs = [outputs[0] for _call, outputs in pairs[len(INVALID) :]]
    check(
        not any(status_contradiction(o, "completed") for o in valid_outputs),
        ids="ARGS-1",
        expected="the valid calls complete (no other status told the model)",
        actual=f"outputs {[output_text(o)[:80] for o in valid_outputs]}",
    )
