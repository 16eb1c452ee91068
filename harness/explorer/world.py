"""One scenario run against the host: a fresh `Case` of its own (HOME, project, mocks, the
mock model), the scenario's steps taken through `Host` as a case would take them, and every
rule monitor checked after every step.

Strategy: the world judges nothing itself. What the host did is judged only by the rule
monitors (harness/monitors), the same that watch every case, so the explorer can never
disagree with the suite about a rule. Between steps a session may still be running: the
monitors then see `all_stopped` false, which keeps the ones that judge what is left after
a stop (STDIO-5) for the end. A step the host could not take (an adapter error, a bound
the harness gave up at, a tool the host kept from the model) is written down and the
scenario goes on: it is the monitors' record of what happened that counts, not whether a
step worked.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.cases.canaries import REGISTRY
from mcp_host_conformance.harness.cases.hostrun import (
    HarnessTimeout,
    Host,
    RefusedAtAdd,
    Running,
    Timeouts,
)
from mcp_host_conformance.harness.contract.adapter import (
    Adapter,
    AdapterError,
    Description,
    HttpServer,
)
from mcp_host_conformance.harness.explorer.arguments import call_arguments
from mcp_host_conformance.harness.explorer.scenario import (
    CallPlan,
    Scenario,
    ServerPlan,
    StepPlan,
)
from mcp_host_conformance.harness.explorer.servers import (
    FAILS_AT_CONNECT,
    LATE,
    input_schema,
    spec_of,
)
from mcp_host_conformance.harness.monitors.watch import watch
from mcp_host_conformance.harness.plugin.fixtures import Case, Lures
from mcp_host_conformance.harness.run.cleanup import RESOURCES
from mcp_host_conformance.harness.sandbox.dns_stub import REBIND_PREFIX, REBIND_SUFFIX
from mcp_host_conformance.harness.sandbox.network import (
    NAMES,
    PRIVATE_ADDRESSES,
    Network,
)
from mcp_host_conformance.harness.sandbox.network import observe as observe_network
from mcp_host_conformance.harness.sandbox.remote import RemoteListener, on_one_port
from mcp_host_conformance.harness.verdicts.outcomes import ConformanceFailure, Finding
from mcp_host_conformance.mocks.responses.script import Step
from mcp_host_conformance.mocks.spec import ServerSpec, Tool

__all__ = ["ANSWERS", "QUESTION", "Outcome", "Violation", "World", "answer_text"]

ANSWERS = {
    "empty": "",
    "spaces": "   ",
    "cyrillic-u": "\u0443",  # looks like a y
}
LOCALES = {
    "inherited": {},
    "C": {"LANG": "C", "LC_ALL": "C"},
    "tr_TR": {"LANG": "tr_TR.UTF-8", "LC_ALL": "tr_TR.UTF-8"},
}
# Where a plain-HTTP server of each `address` value listens (`localhost`: at 127.0.0.1,
# named so in its URL); a run's sealed network has them all.
ADDRESSES = {
    "127.0.0.1": "127.0.0.1",
    "localhost": "127.0.0.1",
    "127.0.0.2": "127.0.0.2",
    "[::1]": "::1",
}
QUESTION = "please look it up"
PLAIN_NAMES = ("docs", "notes", "files", "tickets")


def answer_text(value: str) -> str:
    """What the person types for a catalogue answer."""
    return ANSWERS.get(value, value)


@dataclass(frozen=True)
class Violation:
    """A monitor's finding and the step after which it was first seen (0-based; -1 while
    the servers were configured; len(steps) once every session had stopped)."""

    step: int
    finding: Finding

    @property
    def key(self) -> tuple[str, str]:
        return self.finding.rule, self.finding.monitor


@dataclass
class Outcome:
    violations: list[Violation] = field(default_factory=list)
    steps_done: int = 0
    errors: list[str] = field(default_factory=list)  # steps the host could not take
    problems: list[str] = field(default_factory=list)  # monitors that could not run
    seconds: float = 0.0

    def first(self, key: tuple[str, str] | None = None) -> Violation | None:
        return next((v for v in self.violations if key is None or v.key == key), None)


def _arguments(plan: CallPlan, scenario: Scenario) -> Any:
    server = scenario.server(plan.server)
    tool = next((t for t in server.tools if t.name == plan.tool), None) if server else None
    return call_arguments(plan.arguments, input_schema(tool.schema if tool else "default"))


def _script(step: StepPlan, names: dict[str, str], scenario: Scenario) -> list[Step]:
    calls = []
    for plan in step.calls:
        arguments = _arguments(plan, scenario)
        if plan.server is None:
            calls.append(Step.invented("mcp_nowhere_nothing", arguments))
        else:
            server = names.get(plan.server, plan.server)
            # a model calls what it was offered: a tool the host withheld or a server it
            # refused or gave up on leaves the call to another offered tool, not the step undone
            calls.append(
                Step.call(server=server, tool=plan.tool, arguments=arguments, fallback=True)
            )
    if not calls:
        return [Step.text("nothing to call")]
    if step.turn in ("calls-in-sequence", "keeps-calling"):
        return [*calls, Step.text("done")]
    if len(calls) == 1:
        return [calls[0], Step.text("done")]
    return [Step.calls(calls), Step.text("done")]


class World:
    """Runs scenarios against one host. `restarted` gives the host in another process of its
    own for a restart (None: the same adapter starts again)."""

    def __init__(
        self,
        adapter: Adapter,
        description: Description,
        timeouts: Timeouts,
        lures: Lures | None = None,
        restarted: Callable[[], Adapter] | None = None,
        grace: float = 1.0,
        scale: float = 1.0,
    ) -> None:
        self.adapter = adapter
        self.description = description
        self.timeouts = timeouts
        self.lures = lures
        self.restarted = restarted
        self.grace = grace
        self.scale = scale
        extra = {"oauth"} if getattr(description, "has_oauth", False) else set()
        self.profiles = frozenset(description.profiles) | frozenset(extra)

    @cached_property
    def network(self) -> Network:
        """The network the run sees: private addresses are given a host only when sealed."""
        return observe_network()

    def run(self, scenario: Scenario, first_only: bool = True) -> Outcome:
        """Run `scenario` on a case of its own; with `first_only`, stop at the first step
        after which a monitor saw a rule broken."""
        began = time.monotonic()
        outcome = Outcome()
        root = Path(tempfile.mkdtemp(prefix="mcphc-explore-", dir=RESOURCES.temp_root()))
        case = Case(root, self.lures)
        if self.lures is not None:
            self.lures.plant(
                case.project,
                self.description.project_config_files,
                self.adapter,
                self.timeouts.config_bound(),
            )
        previous_mask = os.umask(int(scenario.umask, 8))
        try:
            _Session(self, case, scenario, outcome).play(first_only)
        finally:
            os.umask(previous_mask)
            for problem in case.close():
                outcome.errors.append(f"cleaning up: {type(problem).__name__}: {problem}")
            outcome.seconds = time.monotonic() - began
        return outcome


class _Session:
    """The state of one scenario's run."""

    def __init__(self, world: World, case: Case, scenario: Scenario, outcome: Outcome) -> None:
        self.world = world
        self.case = case
        self.scenario = scenario
        self.outcome = outcome
        self.host: Host | None = None
        self.running: Running | None = None
        self.session_id: str | None = None
        self.seen: set[tuple[str, str]] = set()
        self.connect: float | None = None
        self.names: dict[str, str] = {}  # the scenario's server names as configured

    # ---- set-up ---------------------------------------------------------------------------

    def _configure(self) -> Host:
        from mcp_host_conformance.mocks.http_server import HttpMock
        from mcp_host_conformance.mocks.responses import MockResponses
        from mcp_host_conformance.mocks.stdio_server import StdioMock

        world, case = self.world, self.case
        model = MockResponses()
        model.start()
        case.mocks.append(model)
        case.model = model
        REGISTRY.add(model.api_key, "model API key")
        assert model.url is not None
        host = Host(
            adapter=world.adapter,
            home=case.home,
            project=case.project,
            model_url=model.url,
            model_key=model.api_key,
            timeouts=world.timeouts,
            model=model,
            profiles=frozenset(world.description.profiles),
            adds_as_they_are=self.scenario.first_sync == "as-it-is",
        )
        host.env.update(_locale(self.scenario.locale))
        case.hosts.append(host)
        sink = None
        if any(s.failure == "redirects" for s in self.scenario.servers):
            elsewhere = HttpMock(ServerSpec(name="elsewhere", tools=[Tool("query")]))
            case.mocks.append(elsewhere)
            elsewhere.start()
            sink = str(elsewhere.url)
        links = None
        if any(t.reply == "resource-link" for s in self.scenario.servers for t in s.tools):
            # what resource links point at: a mock no host is told of (RES-3's monitor)
            linked = HttpMock(ServerSpec(name="linked-pages"))
            case.mocks.append(linked)
            linked.start()
            links = str(linked.url).rstrip("/")
        meeting = self._barrier()
        parties = 0
        names = [s.name for s in self.scenario.servers]
        configured = self.scenario.configuration != "none-configured"
        for plan in self.scenario.servers if configured else ():
            secret = None
            if plan.credential != "none":
                special = plan.secret_shape != "plain"
                secret = case.secrets.new(f"{plan.name}-token", special=special)
            others = [n for n in names if n != plan.name]
            at = meeting.address if meeting and plan.failure not in FAILS_AT_CONNECT else None
            setup = spec_of(plan, secret, others, world.scale, sink, links, at)
            if plan.failure in ("initialize-stalls", *LATE) and meeting is None:
                # a stalled server costs this, not `wait`; a late one is late against it
                self.connect = world.timeouts.connect
            if plan.transport == "stdio":
                mock: Any = StdioMock(setup.spec, case.workdir("stdio"))
                case.stdio_mocks.append(mock)  # killed and reaped by the case, not closed
            else:
                mock = self._listening(plan, setup)
                if mock.ca_file:
                    RESOURCES.track_path(Path(mock.ca_file).parent)
            if self._add(host, plan, mock, setup) and at:
                parties += 1
        if self.scenario.configuration == "the-servers":
            self._private_lure(host)
        if self.scenario.configuration == "all-removed":
            # the host's configuration exists and holds no server when it first starts
            for name in list(self.names.values()):
                try:
                    host.remove(name)
                except (AdapterError, HarnessTimeout, ConformanceFailure) as exc:
                    self.outcome.errors.append(f"remove {name}: {_said(exc)}")
            self.names.clear()
            parties = 0
        if meeting is not None:
            # the servers the host has configured meet; none (all refused, or removed): no
            # barrier holds anything
            meeting.parties = parties
            if parties < 2:
                meeting.close()
        return host

    def _private_lure(self, host: Host) -> None:
        """A server configured at a URL that reaches a private address (PRIV-1), in HTTPS so
        no refusal is NET-1's: a listener there journals any connection. Only inside the
        run's sealed network, where the address is this machine's own; elsewhere a step the
        run could not take."""
        kind = self.scenario.private_address
        if kind == "none":
            return
        network = self.world.network
        private = PRIVATE_ADDRESSES[0]
        if (
            not network.isolated
            or private not in network.private_addresses
            or (kind == "a-rebinding-name" and not network.dns)
        ):
            why = network.reason or "its name server does not answer"
            self.outcome.errors.append(
                f"private address ({kind}): not in the sealed network: {why}"
            )
            return
        if kind == "a-rebinding-name":
            pair = on_one_port(private, str(network.remote_address), private=True)
            if pair is None:
                self.outcome.errors.append(f"private address ({kind}): no port free on both")
                return
            self.case.mocks.extend(pair)
            listener = pair[0]
            name = f"{REBIND_PREFIX}{secrets.token_hex(6)}{REBIND_SUFFIX}"
            url = listener.url(name, scheme="https")
        else:
            listener = RemoteListener(private, private=True)
            self.case.mocks.append(listener)
            named = next(n for n, a in NAMES.items() if a == private)
            url = listener.url(None if kind == "literal" else named, scheme="https")
        try:
            host.add(HttpServer(name="intranet", url=url))
        except AssertionError:  # the harness's bound: the host hangs
            raise
        except Exception as exc:  # noqa: BLE001 - refused at add: as good as at start
            self.outcome.errors.append(f"add intranet: refused: {_said(exc)}")

    def _listening(self, plan: ServerPlan, setup: Any) -> Any:
        """The server's HTTP mock, started at its scenario's address; at 127.0.0.1 when this
        machine has no such address (no IPv6 loopback, say): the machine's lack, written down,
        never a verdict on the host."""
        from mcp_host_conformance.mocks.http_server import HttpMock

        listens = "127.0.0.1" if setup.tls else ADDRESSES[plan.address]
        mock = HttpMock(setup.spec, tls=setup.tls, address=listens)
        try:
            mock.start()
        except RuntimeError as exc:
            if listens == "127.0.0.1":
                raise
            self.outcome.errors.append(
                f"{plan.name} served at 127.0.0.1, not {plan.address}: {_said(exc)}"
            )
            mock = HttpMock(setup.spec, tls=setup.tls)  # its URL, 127.0.0.1, is configured
            mock.start()
        self.case.mocks.append(mock)
        return mock

    def _barrier(self) -> Any:
        """The barrier the scenario's servers answer initialize at, or None. Not for a host
        that connects a server when it is added (`verified-add`): it contacts them one by one
        by design, before any start."""
        if self.scenario.connecting == "at-once" or len(self.scenario.servers) < 2:
            return None
        if "verified-add" in self.world.description.profiles:
            return None
        from mcp_host_conformance.mocks.barrier import Barrier

        meeting = Barrier(parties=len(self.scenario.servers)).start()
        self.case.mocks.append(meeting)
        return meeting

    def _add(self, host: Host, plan: ServerPlan, mock: Any, setup: Any) -> bool:
        """Configure a server; a host that refuses its name (a verified-add host's own rule
        for names) gets it under a plain name instead, so the scenario goes on. False if it
        is not configured at all."""
        name = plan.name
        # a server met as it is at its add may fail the first sync: the host's own refusal
        as_it_is = host.adds_as_they_are and host.syncs_at_add
        for attempt in (name, *(n for n in PLAIN_NAMES if n not in self.names.values())):
            try:
                if plan.transport == "stdio":
                    host.add_stdio(attempt, mock, args=setup.args, env=setup.env)
                else:
                    host.add_http(attempt, mock, headers=setup.headers, url=_url(plan, mock))
            except AssertionError:  # the harness's bound: the host hangs
                raise
            except Exception as exc:
                if not (isinstance(exc, RefusedAtAdd) or as_it_is):
                    raise
                host.bound.pop(attempt, None)  # not configured under that name after all
                host.bindings[:] = [b for b in host.bindings if b != (attempt, mock)]
                self.outcome.errors.append(f"add {attempt}: refused: {exc}")
                if attempt != name:
                    return False
                continue
            self.names[name] = attempt
            return True
        return False

    # ---- steps ----------------------------------------------------------------------------

    def play(self, first_only: bool) -> None:
        try:
            self.host = self._configure()
        except (AdapterError, HarnessTimeout, ConformanceFailure) as exc:
            self.outcome.errors.append(f"configuring: {_said(exc)}")
            return
        if self._check(-1, final=False) and first_only:
            return
        for index, step in enumerate(self.scenario.steps):
            try:
                self._take(step)
            except HarnessTimeout as exc:
                self.outcome.errors.append(f"step {index + 1} ({step.do}): {_said(exc)}")
                self.outcome.steps_done = index + 1
                break  # a host that hung: its session cannot take another step
            except (AdapterError, ConformanceFailure) as exc:
                self.outcome.errors.append(f"step {index + 1} ({step.do}): {_said(exc)}")
            self.outcome.steps_done = index + 1
            if self._check(index, final=False) and first_only:
                return
        for problem in self.case.stop_hosts():
            self.outcome.errors.append(f"stopping: {_said(problem)}")
        self._check(len(self.scenario.steps), final=True)

    def _start(self, host: Host, resume: str | None = None) -> None:
        overrides: dict[str, Any] = {"resume": resume} if resume else {}
        if self.connect is not None:
            overrides["connect_timeout"] = self.connect
        self.running = None
        # a pinning host's review after this start: no after the first, if the scenario says
        first = not any(h.runs for h in self.case.hosts)
        host.review_answer = first or self.scenario.tool_review == "approve-every-time"
        self.running = host.start(**overrides)

    def _stop(self) -> None:
        if self.running is not None and self.running.stopped is None:
            self.session_id = self.running.stop().session_id or self.session_id

    def _restarted_host(self) -> Host:
        assert self.host is not None
        if self.world.restarted is None:
            return self.host
        again = dataclasses.replace(self.host, adapter=self.world.restarted())
        self.case.hosts.append(again)
        return again

    def _take(self, step: StepPlan) -> None:
        host = self.host
        assert host is not None
        if step.do == "start":
            if self.running is None or self.running.stopped is not None:
                self._start(host)
        elif step.do == "stop":
            self._stop()
        elif step.do == "list":
            host.list()
        elif step.do in ("restart-resume", "restart-fresh", "remove"):
            self._stop()
            if step.do == "remove" and step.server in self.names:
                host.remove(self.names[step.server])
            resume = self.session_id if step.do != "restart-fresh" else None
            self.host = self._restarted_host()
            self._start(self.host, resume)
        elif step.do == "ask":
            if self.running is None or self.running.stopped is not None:
                self._start(host)
            assert self.running is not None and host.model is not None
            host.model.script(_script(step, self.names, self.scenario))
            answers = [answer_text(a) for a in step.answers]
            declined = step.acknowledgement != "accept"
            self.running.ask(QUESTION, approve=answers, acknowledge=not declined)

    # ---- the monitors -----------------------------------------------------------------------

    def _check(self, step: int, final: bool) -> bool:
        """Run every monitor; whether one saw a rule broken that was not seen before."""
        observed = self.case.observed(self.world.profiles, self.world.grace)
        if not final:
            observed.all_stopped = False  # sessions may run: what a stop leaves is judged last
        findings, problems = watch(observed)
        self.outcome.problems.extend(p for p in problems if p not in self.outcome.problems)
        new = False
        for finding in findings:
            key = (finding.rule, finding.monitor)
            if key not in self.seen:
                self.seen.add(key)
                self.outcome.violations.append(Violation(step, finding))
                new = True
        return new


def _url(plan: ServerPlan, mock: Any) -> str | None:
    """The URL a server is configured with: its mock's, with `localhost` for 127.0.0.1 when
    the scenario names it so."""
    if plan.transport == "http" and plan.address == "localhost" and mock.url:
        return str(mock.url).replace("//127.0.0.1:", "//localhost:", 1)
    return None


def _locale(value: str) -> dict[str, str]:
    return dict(LOCALES.get(value, {}))


def _said(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"
