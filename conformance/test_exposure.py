"""EXP: what the model receives.

Strategy: everything here is read from the mock model's journal, the request bodies the
client actually sent. A tool is found by its mock's marker, so the naming and labelling
rules (EXP-1, EXP-2, EXP-4) are checked against the names and labels the client chose for
known (server, tool) pairs. Names are checked at their bounds (a plain name of exactly 64
characters is kept, 65 is not), against every guessed replacement a host could make
instead of a hash suffix (disallowed characters replaced by `_` or `-`, dropped,
transliterated, lower-cased, cut, with a counter), with the pattern matched whole (a `$`
lets a trailing newline through), on hypothesis-generated names (derandomized, with the
boundary examples tried on every run), and across a restarted host process
(`harness.fresh_process`): a name hashed with a per-process hash changes there. Schemas
are compared as JSON values, types included (`false` is not `0`, a 2^53 + 1 integer is not
a float). EXP-5's built-in tools are those the host offers with no MCP server at all; a
host with none cannot show the rule, which is then reported not observable, never passed.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.cases.exposed_names import guessed, is_valid
from mcp_host_conformance.harness.cases.observe import (
    builtin_tools,
    mcp_functions,
    model_requests,
    offered_for,
    offered_function,
    same_json,
)
from mcp_host_conformance.harness.run.fresh_process import restarted
from mcp_host_conformance.harness.verdicts.outcomes import check, not_observable
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool


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


def check_all_names(body: dict[str, Any]) -> None:
    names = [str(t.get("name")) for t in mcp_functions(body)]
    bad = [n for n in names if not is_valid(n) or not n.startswith("mcp_")]
    check(
        not bad,
        ids="EXP-2",
        expected=(
            "every offered MCP function name matches ^[A-Za-z0-9_-]{1,64}$ (whole, no trailing "
            "newline) and starts with mcp_"
        ),
        actual=f"names breaking it: {bad!r}",
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


def check_hashed_not_guessed(names: dict[tuple[str, str], str | None]) -> None:
    found = {
        f"{s}/{t!r}": n
        for (s, t), n in names.items()
        if n is not None and not is_valid(f"mcp_{s}_{t}") and guessed(n, s, t)
    }
    check(
        not found,
        ids="EXP-2",
        expected=(
            "names with disallowed characters or over 64 long get a hash suffix, not a guessed "
            "replacement (characters replaced, dropped or transliterated, the name cut, a counter)"
        ),
        actual=f"guessed replacements: {found}",
    )


# ---- EXP-1 -----------------------------------------------------------------------------------

AT_64 = "t" * 55  # mcp_docs_ + 55 = 64 characters: valid, kept


@pytest.mark.mcphc_requirements("EXP-1")
def test_valid_names_are_mcp_server_tool(host, http_mock, model):
    """Each discovered tool is offered as a function named `mcp_<server>_<tool>` whenever
    that string matches `^[A-Za-z0-9_-]{1,64}$` and is unique in the request (also at
    exactly 64 characters)."""
    # A verified-add host saves only lowercase server names (SYNC-2): its mixed-case server is
    # lowercase, its tool still mixed-case.
    repo = "repo-2" if host.syncs_at_add else "Repo-2"
    pairs = [("docs", "query"), ("docs", "read-file"), ("docs", AT_64), (repo, "List_Items")]
    host.add_http("docs", http_mock(spec("docs", [tool("query"), tool("read-file"), tool(AT_64)])))
    host.add_http(repo, http_mock(spec(repo, [tool("List_Items")])))
    body = offered_after_start(host, model, "EXP-1")
    found = names_offered(model, body, pairs)
    wrong = {f"{s}/{t}": n for (s, t), n in found.items() if n != f"mcp_{s}_{t}"}
    check(
        not wrong,
        ids="EXP-1",
        expected="names " + ", ".join(f"mcp_{s}_{t}" for s, t in pairs),
        actual=f"offered instead: {wrong}",
    )


# ---- EXP-2 -----------------------------------------------------------------------------------

AWKWARD = [
    "read.file",
    "héllo",
    "a b",
    "x" * 70,
    "t" * 56,  # mcp_docs_ + 56 = 65 characters
    "query",
    "dup:1",
    "dup;1",
    "Quer.y",
    "query\n",
]


@pytest.mark.mcphc_requirements("EXP-2")
def test_awkward_names_are_valid_unique_and_stable(host, http_mock, model, pytestconfig):
    """Otherwise (disallowed characters, longer than 64, or a collision) the name gets a short
    hash suffix instead of a guessed replacement; every offered name matches the pattern, is
    unique, starts with `mcp_`, and is the same on every start with the same configuration:
    a second start, and a start in a new host process."""
    host.add_http("docs", http_mock(spec("docs", [tool(n) for n in AWKWARD])))
    pairs = [("docs", n) for n in AWKWARD]
    # Servers `a_b` and `a` collide only through a name a verified-add host refuses to save
    # (SYNC-2: lowercase letters, digits and `-`): for it the collision cannot arise.
    collide = not host.syncs_at_add
    if collide:
        host.add_http("a_b", http_mock(spec("a_b", [tool("c")])))
        host.add_http("a", http_mock(spec("a", [tool("b_c")])))
        pairs += [("a_b", "c"), ("a", "b_c")]

    first = offered_after_start(host, model, "EXP-2")
    second = offered_after_start(host, model, "EXP-2")
    with restarted(host, pytestconfig) as fresh:
        third = offered_after_start(fresh, model, "EXP-2")
    check_all_names(first)
    names = names_offered(model, first, pairs)
    missing = [f"{s}/{t!r}" for (s, t), n in names.items() if n is None]
    check(
        not missing,
        ids="EXP-2",
        expected="every discovered tool offered",
        actual=f"not offered: {missing}",
    )
    check_hashed_not_guessed(names)
    clash = (names[("a_b", "c")], names[("a", "b_c")]) if collide else ("x", "y")
    check(
        clash[0] != clash[1] and all(n != "mcp_a_b_c" for n in clash),
        ids="EXP-2",
        expected=(
            "server a_b tool c and server a tool b_c get distinct hash-suffixed names, "
            "neither mcp_a_b_c"
        ),
        actual=f"names {clash}",
    )
    for body, when in ((second, "a second start"), (third, "a start in a new host process")):
        again = names_offered(model, body, pairs)
        changed = {
            f"{s}/{t!r}": (names[(s, t)], again[(s, t)])
            for s, t in pairs
            if names[(s, t)] != again[(s, t)]
        }
        check(
            not changed,
            ids="EXP-2",
            expected=f"the same names on {when}",
            actual=f"changed: {changed}",
        )


tool_names = st.lists(
    st.text(alphabet=st.sampled_from("abcXYZ019_-.: /é\n"), min_size=1, max_size=70),
    min_size=1,
    max_size=4,
    unique=True,
)


@pytest.mark.mcphc_requirements("EXP-2")
# No shrinking (nor example database): every example starts the host, and the first failing
# one says enough; shrinking would start it dozens of times more.
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=tool_names)
@example(names=["n" * 56, "m" * 57])  # mcp_gen_ + 56 = 64 (kept), + 57 = 65 (hashed)
@example(names=["a.b", "a b", "a_b", "a-b"])  # guesses that collide with each other
@example(names=["query\n", "query"])  # a trailing newline: `$` would accept it
@example(names=["é" * 20, "e" * 20, "x" * 55 + "."])  # transliteration; 64 with a bad one
def test_generated_names_are_valid_and_unique(host, http_mock, model, names):
    """Every offered name matches `^[A-Za-z0-9_-]{1,64}$`, is unique, starts with `mcp_`; a
    name with a disallowed character or over 64 characters gets a hash suffix, not a guess;
    a name that is already valid and unique is kept as `mcp_<server>_<tool>` (EXP-1)."""
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
    check_hashed_not_guessed(found)
    kept = {
        n: e
        for (_, n), e in found.items()
        if is_valid(f"mcp_{server}_{n}") and e != f"mcp_{server}_{n}"
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


@pytest.mark.mcphc_requirements("EXP-2")
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


# ---- EXP-3 -----------------------------------------------------------------------------------

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
    "keywords": {  # what "compatibility" clean-ups of schemas remove or rewrite
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "when": {
                "type": "string",
                "format": "date-time",
                "default": "2025-01-01T00:00:00Z",
                "examples": ["2025-01-01T00:00:00Z"],
            },
            "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$", "minLength": 3},
            "big": {"type": "integer", "maximum": 9007199254740993},  # 2^53 + 1
            "ratio": {"type": "number", "multipleOf": 0.1},
            "flag": {"type": "boolean", "default": False},
            "count": {"type": "integer", "default": 0},
            "ünï": {"type": "string", "description": "çlé 📎"},
        },
        "required": ["when"],
    },
}


@pytest.mark.mcphc_requirements("EXP-3")
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
            same_json(offered.get("parameters"), served),
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


# ---- EXP-4 -----------------------------------------------------------------------------------

LONG_TEXT = "Löng désçription of a tool, with € and 📎 in it. " * 60  # ~2,900 characters


@pytest.mark.mcphc_requirements("EXP-4")
def test_description_is_labelled_and_marks_results_untrusted(host, http_mock, stdio_mock, model):
    """The description starts with `[MCP server SERVER, tool TOOL]`, contains the server's
    description text, and a note that arguments go to that server and that results are
    untrusted external data (the note contains the word `untrusted`): for every tool, with
    the server's own tool name (not the exposed one) and its whole description, however
    long."""
    texts = {
        ("docs", "query"): "Searches the documentation index for a phrase.",
        ("docs", "read.file"): "Reads a file; its name needs a hash suffix.",
        ("docs", "long"): LONG_TEXT.strip(),
        ("local", "run"): "Runs a local command — ausgeführt, ✓.",  # multi-byte over stdio too
    }
    host.add_http(
        "docs",
        http_mock(spec("docs", [tool(t, text) for (s, t), text in texts.items() if s == "docs"])),
    )
    host.add_stdio("local", stdio_mock(spec("local", [tool("run", texts[("local", "run")])])))
    body = offered_after_start(host, model, "EXP-4")
    problems = []
    for (server, name), text in texts.items():
        offered = offered_for(body, model, server, name)
        if offered is None:
            problems.append(f"{server}/{name}: not offered")
            continue
        description = str(offered.get("description", ""))
        label = f"[MCP server {server}, tool {name}]"
        if not description.startswith(label):
            problems.append(f"{server}/{name}: starts {description[:80]!r}, not {label!r}")
        if text not in description:
            problems.append(
                f"{server}/{name}: the server's description ({len(text)} characters) is not in "
                f"it whole ({len(description)} characters offered)"
            )
        if "untrusted" not in description.lower():
            problems.append(f"{server}/{name}: no note with the word 'untrusted'")
    check(
        not problems,
        ids="EXP-4",
        expected=(
            "each description: the label with the server's own tool name, the server's whole "
            "text, and the note with 'untrusted'"
        ),
        actual="; ".join(problems),
    )


# ---- EXP-5 -----------------------------------------------------------------------------------


def builtin_names(body: dict[str, Any]) -> list[str]:
    return sorted(str(t.get("name") or t.get("type")) for t in builtin_tools(body))


@pytest.mark.mcphc_requirements("EXP-5")
def test_mcp_tools_offered_beside_builtins_in_every_request(host, http_mock, stdio_mock, model):
    """MCP tools are offered beside the client's built-in tools in every model request of
    a session: the built-ins the host offers with no MCP server, and every MCP tool, in each
    request of three turns (a call's result, a denied call, a question after them)."""
    alone = builtin_names(offered_after_start(host, model, "EXP-5"))
    if not alone:
        not_observable(
            "the host offers no built-in tools (with no MCP server configured), so whether MCP "
            "tools are offered beside them cannot be seen"
        )
    docs = http_mock(spec("docs", [tool("query")]))
    local = stdio_mock(spec("local", [tool("run")]))
    host.add_http("docs", docs)
    host.add_stdio("local", local)
    before = len(model_requests(model))
    running = host.start()
    both = [Step.call(server="docs", tool="query"), Step.call(server="local", tool="run")]
    model.script([Step.calls(both), Step.text("one")])
    running.ask("first")
    model.script([Step.call(server="docs", tool="query"), Step.text("two")])
    running.ask("second", approve="n")
    model.script([Step.text("three")])
    running.ask("third")

    bodies = model_requests(model)[before:]
    # A host may end its turn at a refusal (the denied result then rides with the third
    # question): four requests at least, whatever it does.
    check(
        len(bodies) >= 4,
        ids="EXP-5",
        expected="at least four model requests (call, results, call, third question)",
        actual=f"{len(bodies)}",
    )
    without = [
        f"request {i + 1}: {name}"
        for i, b in enumerate(bodies)
        for name, mock, t in (("docs/query", docs, "query"), ("local/run", local, "run"))
        if offered_function(b, mock, t) is None
    ]
    check(
        not without,
        ids="EXP-5",
        expected="every MCP tool offered in every request of the session",
        actual=f"missing: {without}",
    )
    builtins = [builtin_names(b) for b in bodies]
    check(
        all(b == alone for b in builtins),
        ids="EXP-5",
        expected=(
            f"the host's built-in tools {alone} (as offered with no MCP server) in every request"
        ),
        actual=f"built-in tools per request: {builtins}",
    )


# ---- EXP-6 -----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("EXP-6")
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


# ---- what real servers send -----------------------------------------------------------------

# A definition as Pydantic-based servers (FastMCP and others) write it: a title beside the name,
# an output schema, icons, _meta, annotations, and an input schema with $defs and $ref.
FULL_DEFINITION = Tool(
    "lookup",
    "Looks a record up by its key.",
    input_schema={
        "$defs": {
            "Key": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "kind": {"enum": ["a", "b"]}},
                "required": ["id"],
                "title": "Key",
            }
        },
        "type": "object",
        "properties": {"key": {"$ref": "#/$defs/Key"}, "limit": {"default": 5, "type": "integer"}},
        "required": ["key"],
        "title": "lookupArguments",
    },
    annotations={"readOnlyHint": True, "title": "Lookup (by annotation)"},
    title="Record lookup",
    output_schema={"type": "object", "properties": {"found": {"type": "boolean"}}},
    icons=[{"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml"}],
    meta={"com.example/version": "3"},
    reply=Reply.text("found"),
)
SERVER_INFO = {"name": "Acme Knowledge Base", "title": "Acme KB", "version": "7.1.0"}


@pytest.mark.mcphc_requirements("EXP-3")
def test_parameters_are_the_input_schema_whatever_else_the_definition_holds(
    host, http_mock, stdio_mock, model
):
    """The function's `parameters` equal the server's `inputSchema` exactly, `$defs` and `$ref`
    kept (not resolved, not inlined), and neither the output schema nor anything else of the
    definition in them; over HTTP and stdio."""
    docs = http_mock(ServerSpec(name="docs", tools=[FULL_DEFINITION], server_info=SERVER_INFO))
    local = stdio_mock(ServerSpec(name="local", tools=[FULL_DEFINITION], server_info=SERVER_INFO))
    host.add_http("docs", docs)
    host.add_stdio("local", local)
    body = offered_after_start(host, model, "EXP-3")
    for mock, name in ((docs, "docs"), (local, "local")):
        served = mock.spec.tool("lookup").definition()["inputSchema"]
        offered = offered_function(body, mock, "lookup") or {}
        check(
            same_json(offered.get("parameters"), served),
            ids="EXP-3",
            expected=f"parameters of {name}/lookup equal its inputSchema, $defs and $ref kept",
            actual=f"parameters {offered.get('parameters')}",
        )


@pytest.mark.mcphc_requirements("EXP-1", "EXP-4")
def test_names_and_labels_come_from_the_configuration_not_the_server(host, http_mock, model):
    """The function is named `mcp_<server>_<tool>` and labelled `[MCP server SERVER, tool
    TOOL]` with the name the server is configured under and the tool's own name, whatever
    the server calls itself (serverInfo) or titles the tool; the description holds the tool's
    description, not its title."""
    docs = http_mock(ServerSpec(name="docs", tools=[FULL_DEFINITION], server_info=SERVER_INFO))
    host.add_http("docs", docs)
    body = offered_after_start(host, model, "EXP-1")
    offered = offered_function(body, docs, "lookup") or {}
    check(
        offered.get("name") == "mcp_docs_lookup",
        ids="EXP-1",
        expected="the function named mcp_docs_lookup (configured name, the tool's own name)",
        actual=f"named {offered.get('name')!r}",
    )
    description = str(offered.get("description") or "")
    check(
        description.startswith("[MCP server docs, tool lookup]")
        and FULL_DEFINITION.description in description,
        ids="EXP-4",
        expected="the label [MCP server docs, tool lookup] and the tool's description",
        actual=f"description {description[:160]!r}",
    )


@pytest.mark.mcphc_requirements("EXP-1", "EXP-2")
def test_identical_definitions_on_two_servers_are_both_offered_apart(host, http_mock, model):
    """Two servers that serve the same tool, defined the same way (the same name, description
    and schema, and the same name for themselves, as two instances of one server have): both
    are offered, each under its own valid and unique name."""
    same = [Tool("search", "Searches the index.", reply=Reply.text("found it"))]
    first = http_mock(ServerSpec(name="index", tools=same, server_info=SERVER_INFO))
    second = http_mock(ServerSpec(name="index", tools=same, server_info=SERVER_INFO))
    host.add_http("east", first)
    host.add_http("west", second)
    body = offered_after_start(host, model, "EXP-1")
    names = [str((offered_function(body, m, "search") or {}).get("name")) for m in (first, second)]
    check(
        names == ["mcp_east_search", "mcp_west_search"],
        ids="EXP-1",
        expected="both offered, as mcp_east_search and mcp_west_search",
        actual=f"offered as {names}",
    )
    offered = [str(f.get("name")) for f in mcp_functions(body)]
    check(
        len(offered) == len(set(offered)) and all(is_valid(n) for n in offered),
        ids="EXP-2",
        expected="every offered name valid and unique",
        actual=f"offered {offered}",
    )
