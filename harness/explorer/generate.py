"""Scenarios from a seed: each dimension's least-visited values first.

Strategy: a value the explorer has not visited yet is worth more than another visit of a
common one, so most choices (`STEER` of them) take one of the values visited least so far
(this run's `Visits`, counting the scenario being made), the rest any value at random.
Within a few dozen scenarios every value of the catalogue has been visited, in
combinations no case lists; the same seed and the same code make the same scenarios.
Choices that depend on each other (a credential by header needs HTTP, seventeen calls need
tools to call) are made in an order that keeps every value reachable.

Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012): each scenario holds about half of
the dimensions that get in the way of others (`SWARM`: a failure, a slow answer, odd
arguments, a no, a schema the host refuses, a restart) at their plainest value, a different
half each time. A bug that shows only when a call gets through whole (approved, answered,
its result shown) is otherwise hidden by whichever of those a scenario draws; with every
dimension free in every scenario, a turn of seventeen calls all let through, or a result
with control characters from an approved call, was almost never made.

The same idea per server: a server hides in one way at most. Drawn freely, and steered to
the least-visited values, a value that keeps a whole server's tools from the model (`HIDES`:
a failure at connect or at `tools/list`, a count, a page count, a size or a name past a
limit) came in four servers of five, often several at once: a scenario whose every server
is hidden puts no call through to any, and a host that takes a schema over its limit shows
it only when the server otherwise connects. So after the first server half (`CLEAR`) draw
none and the others exactly one, the least visited, a failure at connect among them; the
first server fails freely but draws no limit-breaking value, and a scenario that holds the
failure (swarm testing, above) holds it for the first server only. A failure that shows at
a call (`FAILS_AT_CALL`) is never drawn beside a hiding value. A clear server still draws the
values at the limits' near side (128 tools, 16 pages, 63 KiB, a 15 KiB schema), which is
where a host that counts wrong shows it.

And the calls go where the values are: most go to an offered tool whose server and reply
the calls planned so far reached least (`_call`), so a failure, a timing or a reply that
shows only at a call is reached, not only drawn.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from mcp_host_conformance.harness.explorer.dimensions import Visits, dimension
from mcp_host_conformance.harness.explorer.scenario import (
    CallPlan,
    Scenario,
    ServerPlan,
    StepPlan,
    ToolPlan,
)
from mcp_host_conformance.harness.explorer.servers import FAILS_AT_CALL, FAILS_AT_CONNECT

__all__ = ["HIDES", "STEER", "Generator", "hiding"]

STEER = 0.8
PRIVATE = 0.3  # the share of scenarios whose host also has a server at a private address
CONFIGURED = 0.8  # the share of scenarios whose host starts with its servers configured
HEALTHY = 0.1  # the share of servers that do not fail, in a scenario that does not hold failure
CLEAR = 0.5  # of the servers that do not fail at connect, the share drawing no HIDES value
SWARM = 0.5  # the chance that a scenario holds each of SWARM_HELD's dimensions
# The dimensions a scenario may hold at their plainest value, and that value.
SWARM_HELD = {
    "failure": "none",
    "timing": "at-once",
    "tools-change": "never",
    "schema": "default",
    "arguments": "from-the-schema",
    "answer": "y",
    "session": "continues",
}
HTTP_ONLY = {
    "http-500-at-call",
    "http-404-at-call",
    "http-500-at-connect",
    "session-lost-at-call",
    "polled-call",
    "refused-resume",
    "rejects-401",
    "redirects",
    "untrusted-certificate",
    "certificate-for-another-host",
    "expired-certificate",
}
# The values that keep a whole server's tools from the model (by dimension): a server draws
# one of them at most.
HIDES = {
    # a server that fails at connect, or whose tools/list answer is over the message limit
    "failure": {*FAILS_AT_CONNECT, "over-1-mib-at-list"},
    "tool-count": {"129"},
    "pages": {"17"},
    "definitions": {"65-kib"},
    "schema": {"17-kib", "not-an-object"},
    "tool-name": {"65-characters"},
}
STDIO_ONLY = {"stdio-exits-at-call", "stderr-flood", "exits-at-once"}
PLAIN_TOOLS = ("query", "lookup", "read", "fetch", "write")
SERVER_NAMES = ("docs", "notes", "files", "tickets")
# the plain tools a server whose definitions are grown to a size has at least: the 65 KiB
# spread over them, about 8 KiB each, as a server of many medium tools has it
DEFINITION_TOOLS = 8
# A model that keeps calling asks for one call a reply, this many times, then answers in
# text: 16 calls run and eight more refused by a host that keeps TURN-1's limit.
KEEPS_CALLING = 24


class Generator:
    def __init__(self, seed: int, visits: Visits | None = None) -> None:
        self.rng = random.Random(seed)
        self.visits = visits if visits is not None else Visits()
        self._pending = Visits()
        self._held: frozenset[str] = frozenset()
        self._clear: frozenset[str] = frozenset()  # dimensions drawn without HIDES's values
        self._forced: dict[str, str] = {}  # the one value that hides the server being made
        # what the calls planned so far reach: a server's failure, timing and framing, a
        # tool's reply (`_exercises`)
        self.exercised = Visits()
        self._reaching = True  # whether the scenario's calls can reach its servers

    def pick(self, name: str, allowed: Sequence[str] | None = None, held: bool = True) -> str:
        forced = self._forced.pop(name, None)
        if forced is not None and (allowed is None or forced in allowed):
            self._pending[(name, forced)] += 1
            return forced
        if held and name in self._held:
            value = SWARM_HELD[name]
            self._pending[(name, value)] += 1
            return value
        hidden = HIDES.get(name, set()) if name in self._clear else set()
        values = [
            v
            for v in dimension(name).values
            if (allowed is None or v in allowed) and v not in hidden
        ]
        if self.rng.random() < STEER:
            counts = {v: self.visits.count(name, v) + self._pending.count(name, v) for v in values}
            least = min(counts.values())
            values = [v for v in values if counts[v] == least]
        value = self.rng.choice(values)
        self._pending[(name, value)] += 1
        return value

    def scenario(self) -> Scenario:
        self._pending = Visits()
        self._held = frozenset(n for n in SWARM_HELD if self.rng.random() < SWARM)
        count = int(self.pick("servers"))
        names = self._server_names(count)
        servers: list[ServerPlan] = []
        for index, (name, kind) in enumerate(names):
            servers.append(self._server(index, name, kind, [n for n, _ in names if n != name]))
        servers = self._share_tools(servers)
        # drawn before the calls: a host that starts with no servers configured reaches none
        configuration = self._configuration()
        self._reaching = configuration == "the-servers"
        steps = self._steps(servers)
        return Scenario(
            servers=tuple(servers),
            steps=tuple(steps),
            umask=self.pick("umask"),
            locale=self.pick("locale"),
            configuration=configuration,
            # one server has none to wait for: the world answers it at once
            connecting=self.pick("connecting", None if len(servers) > 1 else ("at-once",)),
            tool_review=self.pick("tool-review"),
            first_sync=self.pick("first-sync"),
            private_address=self._private_address(),
        )

    def _configuration(self) -> str:
        # A host with none of its servers configured is a scenario whose servers and calls
        # go unused: a few are worth a visit, not a share of every three.
        return self._now_and_then(
            "configuration", "the-servers", 1 - CONFIGURED, ("none-configured", "all-removed")
        )

    def _private_address(self) -> str:
        # a server the host must refuse, beside the scenario's own: a few scenarios in ten,
        # as a configuration with no servers, not one in every four
        return self._now_and_then(
            "private-address", "none", PRIVATE, ("literal", "a-name", "a-rebinding-name")
        )

    def _now_and_then(self, name: str, usual: str, share: float, others: Sequence[str]) -> str:
        """One of `others` in about `share` of the scenarios, else `usual`; a run that fell
        a whole scenario behind that share takes one of `others` now (by chance alone, seed
        2 made one host without its servers in 40 scenarios where 8 were due)."""
        seen = sum(self.visits.count(name, v) for v in dimension(name).values)
        due = (seen + 1) * share - (seen - self.visits.count(name, usual))
        if due < 1 and self.rng.random() >= share:
            self._pending[(name, usual)] += 1
            return usual
        return self.pick(name, others)

    # ---- servers ------------------------------------------------------------------------

    def _server_names(self, count: int) -> list[tuple[str, str]]:
        found = []
        for index in range(count):
            kind = self.pick("server-name")
            base = SERVER_NAMES[index]
            name = {
                "plain": base,
                "mixed-case-digits": f"{base.capitalize()}{index + 2}",
                "dashes-underscores": f"my-{base}_{index}",
                "long": f"{base}-{'x' * 40}-{index}",
            }[kind]
            found.append((name, kind))
        return found

    def _server(self, index: int, name: str, kind: str, others: list[str]) -> ServerPlan:
        # At most one way to hide a server at a time: a server that fails at connect, or one
        # over a limit, shows nothing of a second (a host that takes a schema over its limit
        # shows it only when the server connects), and a failure at a call shows only on a
        # server that is offered. So after the first, half the servers (`CLEAR`) show whole
        # and the others hide in exactly one way, the least visited of them all, a failure
        # at connect among them. The first server fails freely (a failure at connect takes a
        # scenario's only server, as it should) but draws no limit-breaking value: a
        # scenario of one server hidden by a limit ran no call at all.
        self._clear = frozenset(d for d in HIDES if d != "failure")
        showing = [v for v in dimension("failure").values if v not in HIDES["failure"]]
        if index > 0 and self.rng.random() >= CLEAR:
            self._forced = dict([self._least_visited_hiding()])
            # a server hidden by a limit: no failure at a call either, which it never shows
            quiet = [v for v in showing if v not in FAILS_AT_CALL]
            failure = self.pick("failure", None if "failure" in self._forced else quiet)
        elif self.rng.random() < HEALTHY:
            failure = "none"
            self._pending[("failure", "none")] += 1
        else:
            # a scenario that holds the failure holds it for its first server, which keeps
            # the scenario's calls whole; the others fail freely
            failure = self.pick("failure", None if index == 0 else showing, held=index == 0)
        # the failure first, the transport it needs after: of the failure's many values,
        # half need HTTP and a few stdio, and drawn within a transport drawn first, some
        # were left unvisited within forty scenarios
        transport = self.pick(
            "transport",
            ("http", "https")
            if failure in HTTP_ONLY
            else ("stdio",)
            if failure in STDIO_ONLY
            else None,
        )
        try:
            return self._server_drawn(index, name, kind, others, transport, failure)
        finally:
            self._clear, self._forced = frozenset(), {}

    def _least_visited_hiding(self) -> tuple[str, str]:
        pairs = [(d, v) for d, values in HIDES.items() for v in sorted(values)]
        counts = {p: self.visits.count(*p) + self._pending.count(*p) for p in pairs}
        least = min(counts.values())
        return self.rng.choice([p for p in pairs if counts[p] == least])

    def _server_drawn(
        self, index: int, name: str, kind: str, others: list[str], transport: str, failure: str
    ) -> ServerPlan:
        credential = self.pick(
            "credential", ("none", "env") if transport == "stdio" else ("none", "header")
        )
        calls_itself = self.pick(
            "calls-itself",
            None if others else ("its-configured-name", "another-name"),
        )
        tools = self._tools(index, others, secret=credential != "none")
        # 17 pages of 128 tools are 129 tools at least: over two limits, not one
        count_kind = self.pick(
            "tool-count", ("1", "several") if self._forced.get("pages") == "17" else None
        )
        filler = {"1": 0, "several": 0, "128": 128 - len(tools), "129": 129 - len(tools)}[
            count_kind
        ]
        if count_kind == "1":
            tools = tools[:1]
        elif count_kind == "several" and len(tools) == 1:
            filler = self.rng.randint(1, 4)
        # grown to a total size, the definitions are the plain tools' descriptions: a server
        # of one tool has none, one of several gets the few it takes
        definitions = self.pick("definitions", None if count_kind != "1" else ("as-planned",))
        if definitions != "as-planned":
            filler = max(filler, DEFINITION_TOOLS)
        total = len(tools) + filler
        page_size, filler = self._pages(total, filler)
        return ServerPlan(
            name=name,
            name_kind=kind,
            transport=transport,
            address=self.pick("address") if transport == "http" else "127.0.0.1",
            http_answers=self.pick("http-answers") if transport != "stdio" else "sse",
            credential=credential,
            secret_shape=self.pick("secret-shape") if credential != "none" else "plain",
            arguments=self.pick("stdio-arguments") if transport == "stdio" else "none",
            ending=self.pick("stdio-ending") if transport == "stdio" else "at-end-of-input",
            calls_itself=calls_itself,
            tools=tuple(tools),
            filler=filler,
            page_size=page_size,
            definitions=definitions,
            timing=self.pick("timing"),
            failure=failure,
            # a server of one tool has none to list later: `a-tool-appears` would show nothing
            tools_change=self.pick(
                "tools-change",
                None
                if len(tools) > 1
                else [v for v in dimension("tools-change").values if v != "a-tool-appears"],
            ),
        )

    def _pages(self, total: int, filler: int) -> tuple[int | None, int]:
        kind = self.pick("pages")
        if kind == "one":
            return None, filler
        if kind == "several":
            size = max(1, total // self.rng.randint(2, 5))
            if -(-total // size) < 2:  # one tool: a page of it and an empty one is not two
                filler += 1
                size = 1
            return size, filler
        pages = int(kind)
        size = max(1, total // pages)
        while -(-(total) // size) > pages:
            size += 1
        while -(-(total) // size) < pages:
            filler += 1
            total += 1
        return size, filler

    def _tools(self, index: int, others: list[str], secret: bool) -> list[ToolPlan]:
        # a server configured with no secret has none to echo: its tool would answer plain
        # text, a visit of `echoes-its-secret` that shows nothing
        replies = (
            None if secret else [v for v in dimension("reply").values if v != "echoes-its-secret"]
        )
        found: list[ToolPlan] = []
        for n in range(self.rng.randint(1, 3)):
            kind = self.pick(
                "tool-name",
                [v for v in dimension("tool-name").values if v != "shared-by-two-servers"],
            )
            plain = PLAIN_TOOLS[(index + n) % len(PLAIN_TOOLS)]
            name = {
                "plain": plain,
                "awkward": f"{plain}.v2 ({n})",
                "65-characters": ("t" * 64 + str(n))[:65],
                "an-exposed-name": f"mcp_{others[0] if others else 'docs'}_{plain}",
            }[kind]
            if any(t.name == name for t in found):
                name = f"{name}{n}"
            found.append(
                ToolPlan(
                    name=name,
                    name_kind=kind,
                    description=self.pick("description"),
                    schema=self.pick("schema"),
                    annotations=self.pick("annotations"),
                    reply=self.pick("reply", replies),
                )
            )
        return found

    def _share_tools(self, servers: list[ServerPlan]) -> list[ServerPlan]:
        """Some scenarios list one tool, defined identically, on two servers."""
        if len(servers) < 2 or self.rng.random() >= 0.3:
            return servers
        shared = servers[0].tools[0]
        second = servers[1]
        if shared.reply == "echoes-its-secret" and second.credential == "none":
            shared = replace(shared, reply="text")  # its definition is the same, not its answer
        tools = (shared, *(t for t in second.tools if t.name != shared.name))
        filler = second.filler
        # the server's count stays as drawn: a server of 128 tools given one more had 129,
        # over the limit, hiding a server that drew no value to hide it
        if len(tools) > len(second.tools):
            if filler:
                filler -= 1
            else:
                tools = tools[: len(second.tools)]
        servers[1] = replace(second, tools=tools, filler=filler)
        self._pending[("tool-name", "shared-by-two-servers")] += 1
        return servers

    # ---- steps --------------------------------------------------------------------------

    def _steps(self, servers: list[ServerPlan]) -> list[StepPlan]:
        steps = [StepPlan("start")]
        for _ in range(self.rng.randint(1, 4)):
            roll = self.rng.random()
            if roll < 0.7 or "session" in self._held:
                steps.append(self._ask(servers))
                continue
            session = self.pick(
                "session",
                (
                    "restarted-and-resumed",
                    "restarted-fresh",
                    "listed",
                    "server-removed-then-resumed",
                ),
            )
            if session == "listed":
                steps.append(StepPlan("list"))
            elif session == "restarted-and-resumed":
                steps.append(StepPlan("restart-resume"))
            elif session == "restarted-fresh":
                steps.append(StepPlan("restart-fresh"))
            else:
                steps.append(StepPlan("remove", server=self.rng.choice(servers).name))
            steps.append(self._ask(servers))
        if not any(s.do == "ask" for s in steps):
            steps.append(self._ask(servers))
        return steps[:12]

    def _ask(self, servers: list[ServerPlan]) -> StepPlan:
        turn = self.pick("model-turn")
        calls: list[CallPlan] = []
        if turn == "one-call":
            calls = [self._call(servers)]
        elif turn in ("parallel-calls", "calls-in-sequence"):
            calls = [self._call(servers) for _ in range(self.rng.randint(2, 3))]
        elif turn == "seventeen-calls":
            calls = [self._call(servers) for _ in range(17)]
        elif turn == "keeps-calling":
            # a model in a loop: the same one or two calls again and again, as models that
            # page through a tool or retry it do
            loop = [self._call(servers) for _ in range(self.rng.randint(1, 2))]
            calls = [loop[n % len(loop)] for n in range(KEEPS_CALLING)]
        elif turn == "the-same-call-twice":
            call = self._call(servers)
            calls = [call, call]
        elif turn == "a-tool-never-offered":
            calls = [CallPlan(None, None, self.pick("arguments"))]
        answers = self._answers(len(calls))
        return StepPlan(
            "ask",
            turn=turn,
            calls=tuple(calls),
            answers=tuple(answers),
            acknowledgement=self.pick("acknowledgement"),
        )

    def _answers(self, count: int) -> list[str]:
        # Drawn one by one, a yes about two times in three, every call of a long turn is let
        # through almost never (seventeen: about once in 1,500 turns): a person who says yes
        # to each is what shows a host's limits on what it lets through.
        if count > 1 and self.pick("answer-sequence") == "yes-to-every-call":
            answers = ["y"] * count
        else:
            answers = [self._answer() for _ in range(count)]
        self._pending[("answer", "y")] += answers.count("y")
        return answers

    def _answer(self) -> str:
        return "y" if self.rng.random() < 0.5 else self.pick("answer")

    def _call(self, servers: list[ServerPlan]) -> CallPlan:
        # Drawn over every tool alike, two calls in three went to a server hidden by a
        # failure at connect or a limit, and a failure, a reply or a timing that shows only
        # at a call was drawn and never reached (of the failures at a call, 2 to 4 of 11
        # within 20 scenarios): most calls (`STEER`) go to an offered tool whose server and
        # reply the planned calls have reached least; the rest to any tool, the model's
        # call of a tool the host did not offer among them.
        tools = [(s, t) for s in servers for t in s.tools]
        offered = [(s, t) for s, t in tools if not hiding(s)]
        if offered and self.rng.random() < STEER:
            reached = {
                (s.name, t.name): min(self.exercised.count(*p) for p in _exercises(s, t))
                for s, t in offered
            }
            least = min(reached.values())
            tools = [(s, t) for s, t in offered if reached[(s.name, t.name)] == least]
        server, tool = self.rng.choice(tools)
        arguments = self._arguments(tool)
        if self._reaching:
            self.exercised.add([*_exercises(server, tool), _with_schema(tool, arguments)])
        return CallPlan(server.name, tool.name, arguments)

    def _arguments(self, tool: ToolPlan) -> str:
        # Arguments are judged against the called tool's schema: an extra member is wrong
        # only where the schema is closed, a boolean passes for an integer only where one
        # is wanted. The pair is what a host branches on, so of the values the pairs with
        # this schema reached least, the least visited.
        if "arguments" in self._held:
            return self.pick("arguments")
        values = dimension("arguments").values
        reached = {v: self.exercised.count(*_with_schema(tool, v)) for v in values}
        least = min(reached.values())
        return self.pick("arguments", [v for v in values if reached[v] == least])


def hiding(server: ServerPlan) -> set[tuple[str, str]]:
    """The values of the server that keep its tools from the model (HIDES)."""
    drawn = set(Scenario(servers=(server,), steps=()).visits())
    return {(d, v) for d, values in HIDES.items() for v in values if (d, v) in drawn}


def _with_schema(tool: ToolPlan, arguments: str) -> tuple[str, str]:
    return f"arguments for {tool.schema}", arguments


def _exercises(server: ServerPlan, tool: ToolPlan) -> list[tuple[str, str]]:
    """The values a call of `tool` that reaches `server` shows."""
    framing = (
        ("transport", "stdio")
        if server.transport == "stdio"
        else ("http-answers", server.http_answers)
    )
    return [
        ("failure", server.failure),
        ("timing", server.timing),
        ("tools-change", server.tools_change),
        ("reply", tool.reply),
        framing,
    ]
