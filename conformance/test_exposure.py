"""EXP: what the model receives.

Strategy: everything here is read from the mock model's journal, the request bodies the
client actually sent. A tool is found by its `[MCP server S, tool T]` label (EXP-4), so the
naming rules (EXP-1, EXP-2) are checked against the names the client chose for known
(server, tool) pairs. Names are a property over all inputs, so EXP-2 also runs on
hypothesis-generated tool names, one client start per example, kept to a few examples.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.observe import (
    builtin_tools,
    mcp_functions,
    model_requests,
    offered_for,
    offered_function,
)
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def spec(name: str, tools: list[Tool]) -> ServerSpec:
    return ServerSpec(name=name, tools=tools)


def tool(name: str, description: str = "", schema: Any = None) -> Tool:
    kwargs: dict[str, Any] = {"reply": Reply.text("ok")}
    if schema is not None:
        kwargs["input_schema"] = schema
    return Tool(name, description or f"The {name} tool.", **kwargs)


def offered_after_start(host, model, ids: str) -> dict[str, Any]:
    """Start the client, ask one question, stop; the body of the (last) model request."""
    before = len(model_requests(model))
    running = host.start()
    model.script([Step.text("ok")])
    turn = running.ask("hello")
    running.stop()
    bodies = model_requests(model)
    check(
        len(bodies) > before,
        ids=ids,
        expected="the question sent to the model",
        actual=f"no model request (question_sent={turn.question_sent})",
    )
    return bodies[-1]


def names_offered(
    model: Any, body: dict[str, Any], pairs: list[tuple[str, str]]
) -> dict[tuple[str, str], str | None]:
    """The name each (server, tool) is offered under (found by its marker), None if absent."""
    found = {}
    for server, name in pairs:
        offered = offered_for(body, model, server, name)
        found[(server, name)] = None if offered is None else str(offered.get("name"))
    return found


def naive_replacement(server: str, name: str) -> str:
    """The guessed replacement EXP-2 forbids: bad characters swapped for `_`, cut at 64."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp_{server}_{name}")[:64]


def check_all_names(body: dict[str, Any]) -> None:
    names = [str(t.get("name")) for t in mcp_functions(body)]
    bad = [n for n in names if not NAME_PATTERN.match(n) or not n.startswith("mcp_")]
    check(
        not bad,
        ids="EXP-2",
        expected=(
            "every offered MCP function name matches ^[A-Za-z0-9_-]{1,64}$ and starts with mcp_"
        ),
        actual=f"names breaking it: {bad}",
    )
    every = [
        str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict) and "name" in t
    ]
    dupes = sorted({n for n in every if every.count(n) > 1})
    check(
        not dupes,
        ids="EXP-2",
        expected="every offered name unique in the request",
        actual=f"duplicates: {dupes}",
    )


@pytest.mark.requirements("EXP-1")
def test_valid_names_are_mcp_server_tool(host, http_mock, model):
    """Each discovered tool is offered as a function named `mcp_<server>_<tool>` whenever
    that string matches `^[A-Za-z0-9_-]{1,64}$` and is unique in the request."""
    pairs = [("docs", "query"), ("docs", "read-file"), ("Repo-2", "List_Items")]
    host.add_http("docs", http_mock(spec("docs", [tool("query"), tool("read-file")])))
    host.add_http("Repo-2", http_mock(spec("Repo-2", [tool("List_Items")])))
    body = offered_after_start(host, model, "EXP-1")
    found = names_offered(model, body, pairs)
    wrong = {f"{s}/{t}": n for (s, t), n in found.items() if n != f"mcp_{s}_{t}"}
    check(
        not wrong,
        ids="EXP-1",
        expected="names " + ", ".join(f"mcp_{s}_{t}" for s, t in pairs),
        actual=f"offered instead: {wrong}",
    )


AWKWARD = ["read.file", "héllo", "a b", "x" * 70, "query", "dup:1", "dup;1"]


@pytest.mark.requirements("EXP-2")
def test_awkward_names_are_valid_unique_and_stable(host, http_mock, model):
    """Otherwise (disallowed characters, longer than 64, or a collision) the name gets a short
    hash suffix instead of a guessed replacement; every offered name matches the pattern, is
    unique, starts with `mcp_`, and is the same on every start with the same configuration."""
    host.add_http("docs", http_mock(spec("docs", [tool(n) for n in AWKWARD])))
    host.add_http("a_b", http_mock(spec("a_b", [tool("c")])))
    host.add_http("a", http_mock(spec("a", [tool("b_c")])))
    pairs = [("docs", n) for n in AWKWARD] + [("a_b", "c"), ("a", "b_c")]

    first = offered_after_start(host, model, "EXP-2")
    second = offered_after_start(host, model, "EXP-2")
    check_all_names(first)
    names = names_offered(model, first, pairs)
    missing = [f"{s}/{t}" for (s, t), n in names.items() if n is None]
    check(
        not missing,
        ids="EXP-2",
        expected="every discovered tool offered",
        actual=f"not offered: {missing}",
    )
    guessed = {
        f"{s}/{t}": n
        for (s, t), n in names.items()
        if not NAME_PATTERN.match(f"mcp_{s}_{t}") and n == naive_replacement(s, t)
    }
    check(
        not guessed,
        ids="EXP-2",
        expected=(
            "names with disallowed characters or over 64 long get a hash suffix, "
            "not a guessed replacement"
        ),
        actual=f"guessed replacements: {guessed}",
    )
    clash = (names[("a_b", "c")], names[("a", "b_c")])
    check(
        clash[0] != clash[1] and all(n != "mcp_a_b_c" for n in clash),
        ids="EXP-2",
        expected=(
            "server a_b tool c and server a tool b_c get distinct hash-suffixed names, "
            "neither mcp_a_b_c"
        ),
        actual=f"names {clash}",
    )
    again = names_offered(model, second, pairs)
    changed = {
        f"{s}/{t}": (names[(s, t)], again[(s, t)])
        for s, t in pairs
        if names[(s, t)] != again[(s, t)]
    }
    check(
        not changed,
        ids="EXP-2",
        expected="the same names on a second start",
        actual=f"changed: {changed}",
    )


tool_names = st.lists(
    st.text(alphabet=st.sampled_from("abcXYZ019_-.: /é"), min_size=1, max_size=70),
    min_size=1,
    max_size=4,
    unique=True,
)


@pytest.mark.requirements("EXP-2")
# No shrinking (nor example database): every example starts the host, and the first failing
# one says enough; shrinking would start it dozens of times more.
@settings(
    max_examples=8,
    deadline=None,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=tool_names)
def test_generated_names_are_valid_and_unique(host, http_mock, model, names):
    """Every offered name matches `^[A-Za-z0-9_-]{1,64}$`, is unique, starts with `mcp_`; a
    name that is already valid and unique is kept as `mcp_<server>_<tool>` (EXP-1)."""
    server = "gen"
    mock = http_mock(spec(server, [tool(n) for n in names]))
    if server in host.servers:
        host.remove(server)
    host.add_http(server, mock)
    body = offered_after_start(host, model, "EXP-2")
    check_all_names(body)
    found = names_offered(model, body, [(server, n) for n in names])
    missing = [n for (_, n), exposed in found.items() if exposed is None]
    check(
        not missing,
        ids="EXP-2",
        expected="every generated tool offered",
        actual=f"not offered: {missing!r}",
    )
    kept = {
        n: e
        for (_, n), e in found.items()
        if NAME_PATTERN.match(f"mcp_{server}_{n}") and e != f"mcp_{server}_{n}"
    }
    check(
        not kept,
        ids="EXP-1",
        expected="valid names kept as mcp_gen_<tool>",
        actual=f"renamed: {kept!r}",
    )


def impostor(generated: str, server: str) -> str | None:
    """The tool name whose plain `mcp_<server>_<tool>` is exactly `generated`, if there is one."""
    head = f"mcp_{server}_"
    return (
        generated[len(head) :]
        if generated.startswith(head) and len(generated) > len(head)
        else None
    )


@pytest.mark.requirements("EXP-2")
def test_a_generated_name_taken_by_a_plain_one_stays_unique(host, http_mock, model):
    """Every offered name is unique in the request, even when another tool's plain
    `mcp_<server>_<tool>` is exactly the name generated for an awkward one (twice over: the
    replacement name taken too)."""
    # Whatever scheme the client uses, a server can name a tool after the name the client
    # generated last time; the client must still offer distinct names, and in bounded time.
    awkward, crafted = "b c", []
    for round_ in range(3):
        if "a" in host.servers:
            host.remove("a")
        host.add_http("a", http_mock(spec("a", [tool(awkward), *map(tool, crafted)])))
        body = offered_after_start(host, model, "EXP-2")
        check_all_names(body)
        generated = names_offered(model, body, [("a", awkward)])[("a", awkward)]
        check(
            generated is not None,
            ids="EXP-2",
            expected=f"tool {awkward!r} offered (start {round_ + 1})",
            actual="not offered",
        )
        taken = impostor(generated, "a")
        if taken is None or taken in crafted:
            return  # the client's names cannot be imitated by a plain name on this server
        crafted.append(taken)


SCHEMAS = {
    "plain": {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "the query"}},
        "required": ["q"],
    },
    "empty": {"type": "object"},
    "nested": {
        "type": "object",
        "properties": {
            "filter": {"$ref": "#/$defs/filter"},
            "n": {"type": "integer", "minimum": 1},
        },
        "$defs": {
            "filter": {"type": "object", "additionalProperties": {"type": ["string", "null"]}}
        },
        "additionalProperties": False,
        "x-vendor": {"é": [1, 2.5, None, True]},
    },
}


@pytest.mark.requirements("EXP-3")
def test_parameters_are_the_input_schema_exactly(host, http_mock, model):
    """The function's `parameters` equal the server's `inputSchema` exactly,
    and `strict` is false."""
    docs = http_mock(spec("docs", [tool(n, schema=s) for n, s in SCHEMAS.items()]))
    host.add_http("docs", docs)
    body = offered_after_start(host, model, "EXP-3")
    for name in SCHEMAS:
        served = docs.spec.tool(name).definition()["inputSchema"]  # as served (marker included)
        offered = offered_function(body, docs, name) or {}
        check(
            offered.get("parameters") == served,
            ids="EXP-3",
            expected=f"parameters of docs/{name} equal to its inputSchema {served}",
            actual=f"parameters {offered.get('parameters')}",
        )
        check(
            offered.get("strict") is False,
            ids="EXP-3",
            expected=f"docs/{name} offered with strict: false",
            actual=f"strict: {offered.get('strict', '<absent>')!r}",
        )


@pytest.mark.requirements("EXP-4")
def test_description_is_labelled_and_marks_results_untrusted(host, http_mock, model):
    """The description starts with `[MCP server SERVER, tool TOOL]`, contains the server's
    description text, and a note that arguments go to that server and that results are
    untrusted external data (the note contains the word `untrusted`)."""
    text = "Searches the documentation index for a phrase."
    host.add_http("docs", http_mock(spec("docs", [tool("query", text)])))
    body = offered_after_start(host, model, "EXP-4")
    offered = offered_for(body, model, "docs", "query") or {}
    description = str(offered.get("description", ""))
    check(
        description.startswith("[MCP server docs, tool query]"),
        ids="EXP-4",
        expected="a function whose description starts with [MCP server docs, tool query]",
        actual=f"the function for docs/query has the description {description[:120]!r}"
        if offered
        else "no function offered for docs/query",
    )
    check(
        text in description and "untrusted" in description.lower(),
        ids="EXP-4",
        expected="the server's description text and a note with the word 'untrusted'",
        actual=f"description {description!r}",
    )


@pytest.mark.requirements("EXP-5")
def test_mcp_tools_offered_beside_builtins_in_every_request(host, http_mock, model):
    """MCP tools are offered beside the client's built-in tools in every model request of
    a session."""
    docs = http_mock(spec("docs", [tool("query")]))
    host.add_http("docs", docs)
    running = host.start()
    model.script([Step.call(server="docs", tool="query", arguments={}), Step.text("one")])
    running.ask("first")
    model.script([Step.text("two")])
    running.ask("second")

    bodies = model_requests(model)
    check(
        len(bodies) >= 3,
        ids="EXP-5",
        expected="three model requests (call, result, second question)",
        actual=f"{len(bodies)}",
    )
    without = [i for i, b in enumerate(bodies) if offered_function(b, docs, "query") is None]
    check(
        not without,
        ids="EXP-5",
        expected="docs/query offered in every request",
        actual=f"missing in requests {without}",
    )
    builtins = [
        sorted(str(t.get("name") or t.get("type")) for t in builtin_tools(b)) for b in bodies
    ]
    check(
        all(b == builtins[0] for b in builtins),
        ids="EXP-5",
        expected="the same built-in tools beside the MCP tools in every request",
        actual=f"built-in tools per request: {builtins}",
    )


@pytest.mark.requirements("EXP-6")
def test_standing_instructions_are_reported(host, http_mock, model, record_property):
    """INFO: the standing instructions sent to the model say that MCP tool descriptions and
    results are data, never instructions or authorization."""
    host.add_http("docs", http_mock(spec("docs", [tool("query")])))
    body = offered_after_start(host, model, "EXP-6")
    instructions = body.get("instructions")
    if not isinstance(instructions, str):
        system = [
            i
            for i in body.get("input", [])
            if isinstance(i, dict) and i.get("role") in ("system", "developer")
        ]
        instructions = " ".join(str(i.get("content")) for i in system)
    record_property("instructions", instructions[:2000])
    lowered = instructions.lower()
    record_property(
        "mentions_data_not_instructions", "data" in lowered and "instruction" in lowered
    )
