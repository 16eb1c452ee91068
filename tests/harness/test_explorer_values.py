"""Catalogue values that reach a monitor: a scenario holding the value, replayed through the
command as a host author replays a file, is broken by a host that mishandles it and kept by
the reference host.

Each scenario is the plainest that holds one value (the shrinker's own output for it), so a
change to the world or to a monitor that no longer lets the value show fails here, not only
in the generalization measure (tests/test_explorer_zoo.py, docs/explorer.md).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mcp_host_conformance.harness.explorer.scenario import (
    CallPlan,
    Scenario,
    ServerPlan,
    StepPlan,
    ToolPlan,
    to_json,
)
from tests.harness.explorer_replay import replay

ASK = StepPlan("ask", calls=(CallPlan("docs", "query"),), answers=("y",))


def _one_tool(reply: str, **server: str) -> Scenario:
    plan = replace(ServerPlan("docs", tools=(ToolPlan("query", reply=reply),)), **server)
    return Scenario(servers=(plan,), steps=(StepPlan("start"), ASK))


def _held_at_connect(*servers: ServerPlan) -> Scenario:
    """`servers` that each answer initialize only once all are contacted; a turn that calls
    nothing (what reaches the model is what they offered)."""
    return Scenario(
        servers=servers,
        steps=(StepPlan("start"), StepPlan("ask", turn="no-call")),
        connecting="once-every-server-is-contacted",
    )


def _changes_then_restarts(
    change: str, review: str = "approve-every-time", transport: str = "http"
) -> Scenario:
    """A server whose tools change after the first call; the host started again (a pinning
    host lists the change at its next start) and its tools called once more. Over stdio,
    the next start is a new process, which lists the first definitions again."""
    both = StepPlan("ask", calls=(CallPlan("docs", "query"), CallPlan("docs", "later")))
    both = replace(both, answers=("y", "y"))
    return Scenario(
        servers=(
            ServerPlan(
                "docs",
                transport=transport,
                tools=(ToolPlan("query"), ToolPlan("later")),
                tools_change=change,
            ),
        ),
        steps=(StepPlan("start"), both, StepPlan("restart-fresh"), both),
        tool_review=review,
    )


# value -> (scenario, a host that mishandles it, the rule its monitor then sees broken)
def _keeps_calling(turns: int = 1) -> Scenario:
    """A model that keeps calling one tool, one call a reply, 24 times a turn; the person
    says yes to each."""
    calls = (CallPlan("docs", "query"),) * 24
    turn = StepPlan("ask", turn="keeps-calling", calls=calls, answers=("y",) * 24)
    return Scenario(servers=(ServerPlan("docs"),), steps=(StepPlan("start"), *[turn] * turns))


def _beside_a_healthy(failure: str, first: bool = False) -> Scenario:
    """A server failing so beside a healthy one, whose tool is called; `first`: the failing
    one configured first."""
    servers = (ServerPlan("docs"), ServerPlan("notes", failure=failure))
    if first:
        servers = servers[::-1]
    return Scenario(servers=servers, steps=(StepPlan("start"), ASK))


VALUES = {
    "configuration none-configured": (
        Scenario(
            servers=(ServerPlan("docs"),),
            steps=(StepPlan("start"), StepPlan("ask", turn="no-call")),
            configuration="none-configured",
        ),
        "project-config-when-home-empty",
        "CFG-2",
    ),
    "configuration all-removed": (
        Scenario(
            servers=(ServerPlan("docs"),),
            steps=(StepPlan("start"), StepPlan("ask", turn="no-call")),
            configuration="all-removed",
        ),
        "project-config-when-home-empty",
        "CFG-2",
    ),
    "arguments over-2-kib-multi-byte": (
        Scenario(
            servers=(ServerPlan("docs"),),
            steps=(
                StepPlan("start"),
                replace(ASK, calls=(CallPlan("docs", "query", "over-2-kib-multi-byte"),)),
            ),
        ),
        "cuts-arguments-by-characters",
        "APR-5",
    ),
    "failure polled-call": (
        _one_tool("text", failure="polled-call"),
        "result-lost-on-resume",
        "RES-1",
    ),
    "connecting once-every-server-is-contacted": (
        _held_at_connect(ServerPlan("docs"), ServerPlan("notes", transport="stdio")),
        "connects-in-series",
        "DISC-2",
    ),
    "connecting, stdio servers": (
        _held_at_connect(
            ServerPlan("docs", transport="stdio"), ServerPlan("notes", transport="stdio")
        ),
        "connects-stdio-in-series",
        "DISC-2",
    ),
    "failure http-500-at-connect": (
        Scenario(
            servers=(ServerPlan("docs", failure="http-500-at-connect"), ServerPlan("notes")),
            steps=(StepPlan("start"), replace(ASK, calls=(CallPlan("notes", "query"),))),
        ),
        "drops-all-servers-on-5xx",
        "DISC-4",
    ),
    "failure certificate-for-another-host": (
        _one_tool("text", transport="https", failure="certificate-for-another-host"),
        "skips-hostname-check",
        "NET-2",
    ),
    "failure expired-certificate": (
        _one_tool("text", transport="https", failure="expired-certificate"),
        "ignores-certificate-expiry",
        "NET-2",
    ),
    "failure rejects-401": (
        _one_tool("text", credential="header", failure="rejects-401"),
        "no-oauth-hint",
        "CRED-4",
    ),
    "reply resource-link": (_one_tool("resource-link"), "fetches-link-urls", "RES-3"),
    "reply non-ascii-text over SSE": (
        _one_tool("non-ascii-text"),
        "sse-data-as-latin1",
        "RES-1",
    ),
    "reply non-ascii-text over stdio": (
        _one_tool("non-ascii-text", transport="stdio"),
        "stdio-lines-as-latin1",
        "RES-1",
    ),
    "reply resource-blob": (_one_tool("resource-blob"), "decodes-text-blobs", "RES-2"),
    "failure session-lost-at-call": (
        _one_tool("text", failure="session-lost-at-call"),
        "resends-call-after-lost-session",
        "RETRY-1",
    ),
    "address 127.0.0.2": (
        _one_tool("text", address="127.0.0.2"),
        "loopback-is-127-0-0-1-only",
        "NET-1",
    ),
    "address [::1]": (_one_tool("text", address="[::1]"), "loopback-is-127-0-0-1-only", "NET-1"),
    "credential env, two stdio servers with one each": (
        Scenario(
            servers=(
                ServerPlan("docs", transport="stdio", credential="env"),
                ServerPlan("notes", transport="stdio", credential="env"),
            ),
            steps=(StepPlan("start"), StepPlan("ask", turn="no-call")),
        ),
        "env-to-every-stdio-server",
        "CRED-2",
    ),
    "tool-name awkward": (
        Scenario(
            servers=(ServerPlan("docs", tools=(ToolPlan("query.v2 (0)", name_kind="awkward"),)),),
            steps=(StepPlan("start"), StepPlan("ask", turn="no-call")),
        ),
        "drops-hash-suffix",
        "EXP-2",
    ),
    "stdio-ending spawns-a-child": (
        _one_tool("text", transport="stdio", ending="spawns-a-child"),
        "forgets-to-reap",
        "STDIO-5",
    ),
    "stdio-ending ignores-sigterm": (
        _one_tool("text", transport="stdio", ending="ignores-sigterm"),
        "never-escalates-to-sigkill",
        "STDIO-5",
    ),
    "tools-change after-the-first-call": (
        _changes_then_restarts("after-the-first-call"),
        "follows-changed-tools",
        "PIN-1",
    ),
    "tools-change its-schema-after-the-first-call": (
        _changes_then_restarts("its-schema-after-the-first-call"),
        "pins-description-only",
        "PIN-1",
    ),
    "tools-change its-annotations-after-the-first-call": (
        _changes_then_restarts("its-annotations-after-the-first-call"),
        "pins-without-annotations",
        "PIN-1",
    ),
    "tools-change a-tool-appears": (
        _changes_then_restarts("a-tool-appears"),
        "trusts-later-tools",
        "PIN-2",
    ),
    "failure under-1-mib-at-list": (
        _one_tool("text", failure="under-1-mib-at-list"),
        "megabyte-limit",
        "NET-4",
    ),
    "failure under-1-mib-at-call over stdio": (
        _one_tool("text", transport="stdio", failure="under-1-mib-at-call"),
        "megabyte-limit",
        "RES-8",
    ),
    # within the limit each, over it together: a host that counts it over all its servers
    "definitions 63-kib, beside another server": (
        Scenario(
            servers=(
                ServerPlan("docs", filler=8, definitions="63-kib"),
                ServerPlan("notes", tools=(ToolPlan("query", description="8-kib"),)),
            ),
            steps=(StepPlan("start"), replace(ASK, calls=(CallPlan("notes", "query"),))),
        ),
        "limits-definitions-across-servers",
        "DISC-9",
    ),
    "definitions 65-kib": (
        replace(
            _one_tool("text"),
            servers=(ServerPlan("docs", filler=8, definitions="65-kib"),),
        ),
        "no-definitions-limit",
        "DISC-10",
    ),
    "tools-change its-schema-reordered-after-the-first-call": (
        _changes_then_restarts("its-schema-reordered-after-the-first-call"),
        "pins-in-listed-order",
        "PIN-1",
    ),
    # a verified-add host meets the server as it is when it is added: its sync fails
    "first-sync as-it-is": (
        replace(
            Scenario(
                servers=(
                    ServerPlan("docs", credential="header", failure="rejects-401"),
                    ServerPlan("notes"),
                ),
                steps=(StepPlan("start"), replace(ASK, calls=(CallPlan("notes", "query"),))),
            ),
            first_sync="as-it-is",
        ),
        "saves-before-first-sync",
        "SYNC-1",
    ),
    # beside a healthy server, one whose discovery answers come after the connect timeout
    "failure initialize-late": (
        _beside_a_healthy("initialize-late"),
        "ignores-connect-timeout",
        "DISC-3",
    ),
    "failure discovery-late": (
        _beside_a_healthy("discovery-late"),
        "timeout-per-request",
        "DISC-3",
    ),
    # a server that answers too late has failed: the healthy one configured after it works
    "failure initialize-late before a healthy server": (
        _beside_a_healthy("initialize-late", first=True),
        "stops-at-first-failure",
        "DISC-4",
    ),
    # a host that drops every server when one fails keeps out servers that list 150 tools
    # together: DISC-4's, not a tool limit counted over them all (it offers none at all)
    "failure http-500-at-connect beside 150 tools": (
        Scenario(
            servers=(
                ServerPlan("docs", filler=99),
                ServerPlan("notes", filler=49),
                ServerPlan("files", failure="http-500-at-connect"),
            ),
            steps=(StepPlan("start"), ASK),
        ),
        "drops-all-servers-on-5xx",
        "DISC-4",
    ),
    # TURN-1's limit from both sides: up to 16 calls run, then the host ends the turn
    "model-turn keeps-calling": (_keeps_calling(), "stops-at-15-calls", "TURN-1"),
    "model-turn keeps-calling, a second turn": (_keeps_calling(2), "limit-per-session", "TURN-1"),
    "model-turn keeps-calling, past the limit": (
        _keeps_calling(),
        "keeps-asking-after-limit",
        "TURN-1",
    ),
    "stdio-ending daemonizes": (
        _one_tool("text", transport="stdio", ending="daemonizes"),
        "signals-only-live-leaders",
        "STDIO-5",
    ),
}


def _replay(
    client: str, scenario: Scenario | None, tmp_path: Path, client_path: Path | None = None
) -> tuple[int, dict]:
    """Replay `scenario` (None: every scenario file in tmp_path/scenarios) against `client`."""
    path, report = tmp_path / f"{client}.json", tmp_path / f"{client}-report.json"
    if scenario is None:
        path = tmp_path / "scenarios"
    else:
        path.write_text(json.dumps(to_json(scenario)), "utf-8")
    done = replay(client, path, tmp_path, report, client_path)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-2000:]
    return done.returncode, json.loads(report.read_text("utf-8"))


def _failed(report: dict) -> set[str]:
    return {rule for rule, r in report["requirements"].items() if r["outcome"] == "failed"}


@pytest.mark.parametrize("value", sorted(VALUES))
def test_a_host_that_mishandles_the_value_is_seen(value: str, tmp_path: Path) -> None:
    scenario, client, rule = VALUES[value]
    status, report = _replay(client, scenario, tmp_path)
    assert rule in _failed(report), (client, _failed(report))
    assert status != 0


# What a pinning host's person does after the first start changes what a kept rule looks
# like: the changed and the new tool stay disabled (refused at the review), or are approved.
PINNING = [
    _changes_then_restarts(change, review)
    for change in (
        "after-the-first-call",
        "its-schema-after-the-first-call",
        "its-annotations-after-the-first-call",
        "its-schema-reordered-after-the-first-call",
        "a-tool-appears",
    )
    for review in ("approve-every-time", "approve-at-the-first-start-only")
] + [_changes_then_restarts("its-annotations-after-the-first-call", transport="stdio")]


@pytest.mark.parametrize("client", ["reference", "reference-profiles"])
def test_the_reference_hosts_keep_every_rule_in_them(client: str, tmp_path: Path) -> None:
    """All of them in one replay of their folder, as a host author replays what a run wrote."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    scenarios = [VALUES[value][0] for value in sorted(VALUES)] + PINNING
    for n, scenario in enumerate(scenarios):
        (folder / f"{n:02d}.json").write_text(json.dumps(to_json(scenario)), "utf-8")
    status, report = _replay(client, None, tmp_path)
    assert status == 0 and not _failed(report), _failed(report)
    (case,) = [c for c in report["cases"] if c["id"].startswith("test_explorer::")]
    assert case["outcome"] == "passed"
    assert case["figures"]["explorer: scenario files replayed"] == len(scenarios)


@pytest.mark.parametrize(
    "client, failed", [("marks-untrusted-after-content", {"UNTR-1"}), ("reference-profiles", set())]
)
def test_a_call_of_a_tool_not_offered_calls_an_offered_one(
    client: str, failed: set[str], tmp_path: Path
) -> None:
    """The generated model calls only what it was offered: its call of the tool of a server
    that fails at initialize (never offered) goes to the tool the other server offers, whose
    result a host can then mishandle (here, marked untrusted after the content), instead of
    the turn being lost."""
    failing = ServerPlan("notes", tools=(ToolPlan("look"),), failure="initialize-error")
    scenario = Scenario(
        servers=(failing, ServerPlan("docs", tools=(ToolPlan("query", reply="text"),))),
        steps=(StepPlan("start"), replace(ASK, calls=(CallPlan("notes", "look"),))),
    )
    status, report = _replay(client, scenario, tmp_path)
    assert _failed(report) == failed
    assert (status != 0) == bool(failed)


# The reference host refusing private addresses, and claiming no other profile: it refuses
# them at start, not when a server is added (it does not sync at add, `verified-add`).
PRIVATE_ONLY = """
import dataclasses
from mcp_host_conformance.reference_client.adapter import ReferenceProfilesAdapter

class Adapter(ReferenceProfilesAdapter):
    def describe(self):
        described = super().describe()
        return dataclasses.replace(described, profiles=frozenset({"private-address-refusal"}))

    def _prepare(self, home):
        with self._lock:
            if home in self._prepared:
                return
            self._prepared.add(home)
        super(ReferenceProfilesAdapter, self)._cli(
            home, ["profiles", "enable", "private-address-refusal"]
        )
"""


@pytest.mark.parametrize("address", ["127.0.0.2", "[::1]", "localhost"])
def test_a_host_refusing_private_addresses_may_refuse_loopback_beyond_its_allowance(
    address: str, tmp_path: Path
) -> None:
    """NET-1's loopback monitor leaves a `private-address-refusal` host its refusal of
    127.0.0.2 (PRIV-1's, beyond the harness's allowance of 127.0.0.1 and ::1), which it makes
    at start, and still judges it on the loopback forms it was allowed."""
    (tmp_path / "private_only.py").write_text(PRIVATE_ONLY, "utf-8")
    scenario = _one_tool("text", address=address)
    status, report = _replay("private_only:Adapter", scenario, tmp_path, client_path=tmp_path)
    assert status == 0 and not _failed(report), _failed(report)


# An in-process adapter whose run has no [::1] to listen at: the world's address for it is
# one this machine does not have (TEST-NET-1, RFC 5737).
NO_IPV6_LOOPBACK = """
from mcp_host_conformance.harness.explorer import world
world.ADDRESSES["[::1]"] = "192.0.2.99"
from mcp_host_conformance.reference_client.adapter import ReferenceAdapter as Adapter
"""


def test_an_address_the_machine_lacks_is_served_at_127_0_0_1_and_blames_nobody(
    tmp_path: Path,
) -> None:
    (tmp_path / "no_ipv6.py").write_text(NO_IPV6_LOOPBACK, "utf-8")
    scenario = _one_tool("text", address="[::1]")
    status, report = _replay("no_ipv6:Adapter", scenario, tmp_path, client_path=tmp_path)
    assert status == 0 and not _failed(report), _failed(report)
    (case,) = [c for c in report["cases"] if c["id"].startswith("test_explorer::")]
    assert case["outcome"] == "passed"
    errors = case["figures"]["explorer: steps the host could not take"]
    assert "served at 127.0.0.1, not [::1]" in str(errors)


def test_a_limit_misapplied_at_a_barrier_is_not_charged_to_connecting(tmp_path: Path) -> None:
    """Two servers over the definitions limit only together, each answering initialize once
    both are contacted: a host that counts the limit over all its servers keeps one out, as a
    host that connects them one by one would. Not told apart, neither is charged (DISC-2's
    monitor stays silent where a misapplied limit explains it as well)."""
    scenario = Scenario(
        servers=(
            ServerPlan("docs", filler=8, definitions="63-kib"),
            ServerPlan("notes", tools=(ToolPlan("query", description="8-kib"),)),
        ),
        steps=(StepPlan("start"), StepPlan("ask", turn="no-call")),
        connecting="once-every-server-is-contacted",
    )
    status, report = _replay("limits-definitions-across-servers", scenario, tmp_path)
    assert status == 0 and not _failed(report), _failed(report)


def test_a_server_over_a_limit_once_its_tools_changed_is_not_judged_healthy(
    tmp_path: Path,
) -> None:
    """128 tools of 63 KiB in all, each schema one argument wider after the first call: the
    next start lists more than 64 KiB, and a conforming host refuses the server. Beside a
    server that failed, DISC-4's monitor once took it for a healthy one kept out (found by
    the explorer at 200 scenarios, seed 4)."""
    scenario = Scenario(
        servers=(
            ServerPlan(
                "docs",
                filler=127,
                definitions="63-kib",
                tools_change="its-schema-after-the-first-call",
            ),
            ServerPlan("notes", failure="http-500-at-connect"),
        ),
        steps=(
            StepPlan("start"),
            ASK,
            StepPlan("restart-fresh"),
            StepPlan("ask", turn="no-call"),
        ),
    )
    status, report = _replay("reference", scenario, tmp_path)
    assert status == 0 and not _failed(report), _failed(report)


@pytest.mark.parametrize(
    "client, failure, failed, kept",
    [
        # sent with no prompt of its own in a turn after one whose call the person refused
        ("skips-approval-readonly", "none", {"APR-1", "APR-3"}, {"APR-2"}),
        # the refused call itself, sent in the next turn
        ("sends-denied-call-later", "none", {"APR-2"}, set()),
        # and ending unknown there: the model was rightly told `denied`
        ("sends-denied-call-later", "http-500-at-call", {"APR-2"}, {"RES-7"}),
    ],
)
def test_a_refusal_is_charged_only_for_a_call_asked_for_before_it(
    client: str, failure: str, failed: set[str], kept: set[str], tmp_path: Path
) -> None:
    """A refusal given before the model asked for a call was another call's: a call sent
    after it without a prompt of its own is APR-1's (and APR-3's for an annotated tool),
    where the count of answers alone charged APR-2. A refused call sent anyway is APR-2's,
    not a result misreported (RES-7 was charged as well)."""
    tools = (ToolPlan("query"), ToolPlan("lookup", annotations="read-only"))
    refused = StepPlan("ask", calls=(CallPlan("docs", "query"),), answers=("n",))
    later = StepPlan("ask", calls=(CallPlan("docs", "lookup"),), answers=("y",))
    scenario = Scenario(
        servers=(ServerPlan("docs", tools=tools, failure=failure),),
        steps=(StepPlan("start"), refused, later),
    )
    _status, report = _replay(client, scenario, tmp_path)
    assert failed <= _failed(report) and not kept & _failed(report), _failed(report)


def test_a_call_sent_again_is_not_charged_to_its_tool_s_annotations(tmp_path: Path) -> None:
    """A host that sends an approved call of a read-only tool again after its session was
    lost sends it with no approval of its own (RETRY-1, APR-1); its annotations are not
    why (APR-3 was charged as well)."""
    tools = (ToolPlan("query", annotations="read-only"),)
    server = ServerPlan("docs", tools=tools, failure="session-lost-at-call")
    scenario = Scenario(servers=(server,), steps=(StepPlan("start"), ASK))
    _status, report = _replay("resends-call-after-lost-session", scenario, tmp_path)
    failed = _failed(report)
    assert {"RETRY-1", "APR-1"} <= failed and "APR-3" not in failed, failed
