"""The scenario explorer's parts: scenario files, the generator, the shrinker."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.cases.timeline import approves
from mcp_host_conformance.harness.explorer.arguments import call_arguments
from mcp_host_conformance.harness.explorer.dimensions import DIMENSIONS, Visits
from mcp_host_conformance.harness.explorer.generate import Generator, hiding
from mcp_host_conformance.harness.explorer.scenario import (
    MAX_FILE,
    CallPlan,
    Scenario,
    ScenarioError,
    ServerPlan,
    StepPlan,
    ToolPlan,
    load,
    to_json,
)
from mcp_host_conformance.harness.explorer.servers import FAILS_AT_CALL, input_schema, spec_of
from mcp_host_conformance.harness.explorer.shrink import candidates, shrink
from mcp_host_conformance.harness.monitors.stdio import FLOOD_SEEN


def _scenarios(seed: int, count: int) -> list[Scenario]:
    generator = Generator(seed)
    made = []
    for _ in range(count):
        scenario = generator.scenario()
        generator.visits.add(scenario.visits())
        made.append(scenario)
    return made


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_value_of_the_catalogue_is_reached_within_forty_scenarios(seed):
    visits = Visits()
    for scenario in _scenarios(seed, 40):
        visits.add(scenario.visits())
    assert visits.unvisited() == []


def test_every_call_of_a_long_turn_may_be_answered_yes():
    """TURN-1's monitor sees a host let more than 16 calls through only when the person
    approved them all: drawn one by one, seventeen yeses come about once in 1,500 turns."""
    asks = [
        step
        for seed in (1, 2, 3)
        for scenario in _scenarios(seed, 40)
        for step in scenario.steps
        if step.do == "ask" and step.turn == "seventeen-calls"
    ]
    yes_to_all = [step for step in asks if step.answers == ("y",) * 17]
    assert yes_to_all
    visited = Scenario(servers=(ServerPlan("docs"),), steps=(yes_to_all[0],)).visits()
    assert ("answer-sequence", "yes-to-every-call") in set(visited)


def test_a_server_hides_in_one_way_at_most():
    """A failure at connect or a limit keeps a server's tools from the model; a second way
    shows nothing more, and a failure at a call shows only on a server that is offered."""
    for seed in (1, 2, 3):
        for scenario in _scenarios(seed, 40):
            for index, server in enumerate(scenario.servers):
                ways = hiding(server)
                assert len(ways) <= 1, ways
                if server.failure in FAILS_AT_CALL or index == 0:
                    assert {d for d, _ in ways} <= {"failure"}, ways


@pytest.mark.parametrize("filler", [127, 0])
def test_a_tool_shared_by_two_servers_keeps_the_second_server_s_count(filler):
    """A server of 128 tools given the first server's tool had 129, over the limit; one of
    a single tool got a second."""
    first = ServerPlan("docs", tools=(ToolPlan("query"),))
    second = ServerPlan("notes", tools=(ToolPlan("lookup"),), filler=filler)
    generator = Generator(1)
    generator.rng.random = lambda: 0.0  # always share
    _first, shared = generator._share_tools([first, second])
    assert ToolPlan("query") in shared.tools
    assert shared.tool_count == second.tool_count


def test_a_value_is_drawn_only_where_it_can_show():
    """A tool that echoes its secret on a server with none answers plain text; a tool that
    appears later on a server of one tool has none to appear; servers that answer
    initialize once all are contacted, alone, wait for nobody: each a visit that shows
    nothing."""
    scenarios = [s for seed in (1, 2, 3) for s in _scenarios(seed, 40)]
    servers = [server for scenario in scenarios for server in scenario.servers]
    echoing = [s for s in servers if any(t.reply == "echoes-its-secret" for t in s.tools)]
    appearing = [s for s in servers if s.tools_change == "a-tool-appears"]
    waiting = [s for s in scenarios if s.connecting == "once-every-server-is-contacted"]
    assert echoing and appearing and waiting
    assert all(server.credential != "none" for server in echoing)
    assert all(len(server.tools) > 1 for server in appearing)
    assert all(len(scenario.servers) > 1 for scenario in waiting)


def _approved_offered_calls(scenario: Scenario) -> list[tuple[ServerPlan, ToolPlan, str]]:
    """The calls the person approves of a tool of an offered server: (server, tool, arguments)."""
    if scenario.configuration != "the-servers":
        return []
    found = []
    for step in scenario.steps:
        for call, answer in zip(step.calls, step.answers, strict=False):
            server = scenario.server(call.server)
            if server is not None and not hiding(server) and approves(answer):
                tool = next(t for t in server.tools if t.name == call.tool)
                found.append((server, tool, call.arguments))
    return found


def test_a_call_s_arguments_are_drawn_with_the_called_tool_s_schema():
    """An extra member is wrong only where a schema is closed, a boolean passes for an
    integer only where one is wanted: drawn alone, the arguments met 170 of the (schema,
    arguments) pairs in the approved calls of seeds 1 to 10's first 20 scenarios; drawn with
    the schema, 197."""
    pairs = 0
    for seed in range(1, 11):
        pairs += len(
            {
                (tool.schema, arguments)
                for scenario in _scenarios(seed, 20)
                for _server, tool, arguments in _approved_offered_calls(scenario)
            }
        )
    assert pairs >= 185


def _reached_at_a_call(scenario: Scenario) -> set[str]:
    """The failures at a call that a call the person approves, with arguments its schema
    may accept, brings to an offered server."""
    return {
        server.failure
        for server, _tool, arguments in _approved_offered_calls(scenario)
        if server.failure in FAILS_AT_CALL and arguments not in ("a-wrong-type", "not-json")
    }


def test_the_calls_reach_the_failures_that_show_only_at_a_call():
    """Drawn over every tool alike, two calls in three went to a server hidden by a failure
    at connect or a limit: of the failures at a call, the first 20 scenarios of seeds 1 to
    10 brought 42 of 110 (11 values a seed) to a call; calls steered to the offered tools
    their planned calls reached least bring 69."""
    reached = 0
    for seed in range(1, 11):
        found: set[str] = set()
        for scenario in _scenarios(seed, 20):
            found |= _reached_at_a_call(scenario)
        reached += len(found)
    assert reached >= 60


def test_the_same_seed_makes_the_same_scenarios():
    assert _scenarios(7, 10) == _scenarios(7, 10)
    assert _scenarios(7, 10) != _scenarios(8, 10)


def test_a_scenario_file_reads_back_as_the_scenario():
    for scenario in _scenarios(4, 30):
        text = json.dumps(to_json(scenario, seed=4))
        again, about = load(text)
        assert again == scenario
        assert about == {"seed": 4}


def test_every_generated_server_makes_a_mock_spec():
    for scenario in _scenarios(5, 30):
        names = [s.name for s in scenario.servers]
        for server in scenario.servers:
            secret = "mcphc-canary-x" if server.credential != "none" else None
            setup = spec_of(server, secret, [n for n in names if n != server.name])
            # a tool that appears after the first call is listed only then
            appears = server.tools_change == "a-tool-appears" and len(server.tools) > 1
            assert len(setup.spec.tools) == server.tool_count - appears
            if server.credential == "header":
                assert setup.headers["Authorization"] == "Bearer mcphc-canary-x"


def test_a_stdio_server_that_exits_at_once_writes_to_stderr_first():
    """What STDIO-4's monitor looks for in what the user saw: with no stderr a host that
    shows a failed server's stderr shows nothing wrong."""
    plan = ServerPlan("notes", transport="stdio", failure="exits-at-once")
    bad = spec_of(plan, None, []).spec.misbehaviour
    assert bad.exit_at_once is not None
    assert bad.stderr_flood >= len(FLOOD_SEEN)


@pytest.mark.parametrize(
    "schema, kind, valid",
    [
        ("closed-with-a-default", "from-the-schema", True),
        ("closed-with-a-default", "an-extra-field", False),
        ("closed-with-a-default", "a-wrong-type", False),
        ("nested-with-ref", "a-wrong-type", False),
        ("15-kib", "a-wrong-type", False),
        ("default", "an-extra-field", True),  # a schema that says nothing of extra members
        ("default", "a-wrong-type", False),
    ],
)
def test_odd_arguments_are_what_the_called_tool_s_schema_refuses(schema, kind, valid):
    """ARGS-1's monitor sees a host send invalid arguments only when the model made some."""
    from jsonschema import Draft202012Validator

    from mcp_host_conformance.mocks.responses.script import arguments_for_schema

    tool_schema = input_schema(schema)
    sent = call_arguments(kind, tool_schema)
    if sent is None:
        sent = arguments_for_schema(tool_schema)
    elif isinstance(sent, str):
        sent = json.loads(sent)  # as the host reads the model's arguments text
    assert Draft202012Validator(tool_schema).is_valid(sent) is valid


def test_a_wrong_type_is_a_boolean_where_a_number_is_wanted():
    """The wrong type a lax check (Python's isinstance) takes for an integer."""
    assert call_arguments("a-wrong-type", input_schema("closed-with-a-default")) == {
        "q": "test",
        "limit": True,
    }


GOOD = to_json(
    Scenario(
        servers=(ServerPlan("docs"),),
        steps=(StepPlan("start"), StepPlan("ask", calls=(CallPlan("docs", "query"),))),
    )
)


def _bad(path: list, value) -> str:
    data = json.loads(json.dumps(GOOD))
    at = data
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not JSON"),
        ("[]", "not a scenario file"),
        (json.dumps({**GOOD, "format": "other/1"}), "not a scenario file"),
        (_bad(["scenario", "servers"], []), "at least one server"),
        (_bad(["scenario", "servers", 0, "failure"], "meltdown"), "is not one of"),
        (_bad(["scenario", "servers", 0, "name"], "a\nb"), "printable name"),
        (_bad(["scenario", "servers", 0, "filler"], 10**9), "whole number"),
        (_bad(["scenario", "steps", 1, "calls", 0, "server"], "elsewhere"), "not a server"),
        (_bad(["scenario", "steps", 1, "do"], "explode"), "'do' is one of"),
        (_bad(["scenario", "steps"], [{"do": "start"}] * 50), "at most"),
        (_bad(["scenario", "steps", 1, "answers"], ["perhaps"]), "catalogue's answers"),
        (" " * (MAX_FILE + 1), "at most"),
        ("[" * 100000, "not JSON"),
    ],
)
def test_a_bad_scenario_file_is_one_line_saying_why(text, message):
    with pytest.raises(ScenarioError) as caught:
        load(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.sampled_from(["servers", "steps", "umask", "locale", "x"]), JSON))
@settings(max_examples=200)
def test_any_json_is_a_scenario_or_a_scenario_error(scenario):
    try:
        load(json.dumps({"format": GOOD["format"], "scenario": scenario}))
    except ScenarioError:
        pass


def _scenario() -> Scenario:
    return Scenario(
        servers=(
            ServerPlan("docs", tools=(ToolPlan("query"), ToolPlan("read", reply="image"))),
            ServerPlan("notes", transport="stdio", failure="reset-after-call", timing="slow"),
            ServerPlan("files", credential="header", filler=20, page_size=3),
        ),
        steps=(
            StepPlan("start"),
            StepPlan(
                "ask",
                turn="parallel-calls",
                calls=(CallPlan("docs", "query"), CallPlan("notes", "query")),
                answers=("y", "n"),
            ),
            StepPlan("list"),
            StepPlan("ask", calls=(CallPlan("files", "query", "over-2-kib"),), answers=("yes",)),
            StepPlan("restart-resume"),
        ),
        umask="077",
        locale="C",
    )


def test_shrinking_keeps_what_shows_it_and_drops_the_rest():
    def shows(s: Scenario) -> bool:  # "a reset after a call that was made"
        return any(
            server.failure == "reset-after-call"
            and any(c.server == server.name for step in s.steps for c in step.calls)
            for server in s.servers
        )

    shortest, runs = shrink(_scenario(), shows, runs=500)
    assert shows(shortest)
    assert [s.name for s in shortest.servers] == ["notes"]
    assert shortest.servers[0].timing == "at-once"
    assert [(st.do, len(st.calls)) for st in shortest.steps] == [("ask", 1)]
    assert (shortest.umask, shortest.locale) == ("022", "inherited")
    assert 0 < runs < 500


def test_shrinking_stops_at_its_budget_of_runs():
    calls = []

    def shows(s: Scenario) -> bool:
        calls.append(s)
        return True

    shortest, runs = shrink(_scenario(), shows, runs=3)
    assert runs == 3 == len(calls)


def test_every_candidate_is_a_valid_scenario():
    for candidate in candidates(_scenario()):
        assert load(json.dumps(to_json(candidate)))[0] == candidate
    assert replace(_scenario()) == _scenario()


def test_docs_explorer_holds_the_catalogue_table():
    import importlib.util
    from pathlib import Path

    root = Path(__file__).parents[2]
    spec = importlib.util.spec_from_file_location(
        "explorer_table", root / "scripts" / "explorer_table.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    doc = (root / "docs" / "explorer.md").read_text("utf-8")
    assert script.table() in doc
    assert all(f"`{d.name}`" in doc for d in DIMENSIONS)


def test_a_scenario_file_says_what_its_own_scenario_showed(tmp_path):
    """The file holds the shortest scenario, and what the monitor said of that one (its
    servers, its counts), not of the longer scenario the violation was first seen in."""
    from types import SimpleNamespace

    from mcp_host_conformance.harness.explorer.explore import Budget, explore
    from mcp_host_conformance.harness.explorer.world import Outcome, Violation
    from mcp_host_conformance.harness.verdicts.outcomes import Finding

    class World:  # every scenario with a server shows the violation, naming its servers
        timeouts = SimpleNamespace(scale=1.0)

        def run(self, scenario):
            names = ", ".join(s.name for s in scenario.servers)
            finding = Finding("CFG-3", "config-private", "private", f"servers {names}")
            return Outcome(violations=[Violation(0, finding)])

    result = explore(World(), 3, Budget(scenarios=1), out_dir=tmp_path)
    (found,) = result.found
    shown = json.loads(found.path.read_text())
    names = ", ".join(s.name for s in found.shortest.servers)
    assert shown["shows"]["actual"] == f"servers {names}"
    assert found.finding.actual.startswith("servers ")  # the first sighting, as it was


def test_the_failures_that_wait_at_no_barrier_are_failures_of_the_catalogue():
    """A value renamed or removed in the catalogue must not leave a stale name here, where
    it would make a server that fails at connect hold the others at the barrier."""
    from mcp_host_conformance.harness.explorer.dimensions import dimension
    from mcp_host_conformance.harness.explorer.servers import FAILS_AT_CONNECT

    assert FAILS_AT_CONNECT <= set(dimension("failure").values)
