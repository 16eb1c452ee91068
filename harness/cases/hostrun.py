"""Driving the client under test for one case, without ever hanging the suite.

Strategy: a case talks to the client only through `Host` (configure, start) and `Running`
(statuses, ask, cancel, stop), which call the adapter and record everything the user saw
(every `text`, status line, confirmation and acknowledgement prompt) so that secrets can
be searched for afterwards (CRED-3), and every path the client reported writing. Every
adapter call runs in a worker thread under a generous bound (`bounded`): a client that
hangs fails its case with a clear message instead of stalling the run. Approval and
acknowledgement answers are policies (a fixed answer, a list consumed in order, or a
callable), recorded as they are given.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from mcp_host_conformance.harness.cases.mock_contract import (
    HttpServerMock,
    MarkedMock,
    ModelService,
    StdioServerMock,
)
from mcp_host_conformance.harness.cases.observe import is_model_request
from mcp_host_conformance.harness.cases.timeline import Timeline
from mcp_host_conformance.harness.contract.adapter import (
    QUESTION_ANSWER,
    Adapter,
    AdapterError,
    ClientSession,
    Confirmation,
    HttpServer,
    PendingTool,
    ServerConfig,
    ServerStatus,
    Shown,
    StartOptions,
    StdioServer,
    Stopped,
    ToolReview,
    Turn,
    takes_questions,
)
from mcp_host_conformance.harness.verdicts.outcomes import PreconditionFailure, check, precondition

__all__ = [
    "LOOPBACK_ALLOWANCE",
    "Acknowledgement",
    "Approval",
    "HarnessTimeout",
    "Host",
    "QuestionAnswer",
    "RefusedAtAdd",
    "Running",
    "Timeouts",
    "ToolApproval",
    "bounded",
]

# The addresses the harness's own mocks listen on, allowed to a host that claims
# private-address-refusal (PRIV-1: "the harness passes its own loopback allowance").
LOOPBACK_ALLOWANCE = ("127.0.0.1", "::1")
PINNING = "pinning"
FLAGGING = "instruction-flagging"
VERIFIED_ADD = "verified-add"
PRIVATE_REFUSAL = "private-address-refusal"


class RefusedAtAdd(Exception):
    """A host that claims verified-add refused to save a server because its first sync
    failed (SYNC-1). A case that expects refusals catches it (it is an Exception); one that
    needs the server configured does not, and the plugin reports that case not applicable to
    such a host, with this message."""


T = TypeVar("T")


class HarnessTimeout(AssertionError):
    """An adapter call did not return within the harness's bound: the client hangs."""


class _Outcome(Generic[T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: T
        self.error: BaseException | None = None


def bounded(what: str, call: Callable[[], T], bound: float) -> T:
    """Run `call` in a daemon thread; its result, its exception,
    or HarnessTimeout after `bound` s."""
    outcome: _Outcome[T] = _Outcome()

    def run() -> None:
        try:
            outcome.value = call()
        except BaseException as exc:  # handed to the caller's thread as is
            outcome.error = exc
        finally:
            outcome.done.set()

    threading.Thread(target=run, name=f"adapter {what}", daemon=True).start()
    if not outcome.done.wait(bound):
        raise HarnessTimeout(
            f"the client did not return from {what} within {bound:.1f} s (the harness's bound); "
            "it hangs (on a slow machine, raise --timeout-scale: "
            "`mcp-host-conformance run --timeout-scale 3`)"
        )
    if outcome.error is not None:
        raise outcome.error
    return outcome.value


@dataclass(frozen=True)
class Timeouts:
    """The scaled timeouts passed to the client, and the harness's own bounds."""

    # The connect timeout of a case about connect times (DISC-3: a stalled server given up on
    # in time); every other start gets `wait` (Host.options), since a loaded machine must not
    # turn a slow local connect into a verdict (seen: 1.5 s passed beside another suite run).
    connect: float = 1.5
    call: float = 1.0  # StartOptions.call_timeout
    wait: float = 5.0  # bound of a journal wait for something that should happen soon
    grace: float = 0.3  # how long to watch for something that must NOT happen (e.g. a retry)
    scale: float = 1.0

    @classmethod
    def scaled(cls, scale: float) -> Timeouts:
        return cls(
            connect=1.5 * scale, call=1.0 * scale, wait=5.0 * scale, grace=0.3 * scale, scale=scale
        )

    def start_bound(self, connect: float) -> float:
        return 2 * connect + 20 * self.scale

    def ask_bound(self, connect: float, call: float) -> float:
        return 4 * call + connect + 30 * self.scale

    def config_bound(self) -> float:
        return 15 * self.scale


# What the person answers at each approval prompt: one answer for all ("y", "n", "" or any
# text), a list consumed in order, or a callable of the confirmation.
Approval = str | Sequence[str] | Callable[[Confirmation], str]
# What the person answers at each acknowledgement prompt, likewise.
Acknowledgement = bool | Sequence[bool] | Callable[[str], bool]
# What the person answers for each tool in a tool review (profile pinning), likewise.
ToolApproval = bool | Sequence[bool] | Callable[[PendingTool], bool]
# What the person answers each free-form question the host itself asks, likewise.
QuestionAnswer = str | Sequence[str] | Callable[[str], str]


def _approver(answer: Approval) -> Callable[[Confirmation], str]:
    if callable(answer):
        return answer
    if isinstance(answer, str):
        return lambda _confirmation: answer
    queue = list(answer)  # consumed in order, then Enter ("")
    return lambda _confirmation: queue.pop(0) if queue else ""


def _questioner(answer: QuestionAnswer) -> Callable[[str], str]:
    if callable(answer):
        return answer
    if isinstance(answer, str):
        return lambda _question: answer
    queue = list(answer)  # consumed in order, then the default answer
    return lambda _question: queue.pop(0) if queue else QUESTION_ANSWER


def _tool_approver(answer: ToolApproval) -> Callable[[PendingTool], bool]:
    if callable(answer):
        return answer
    if isinstance(answer, bool):
        return lambda _tool: answer
    queue = list(answer)  # consumed in order, then not approved
    return lambda _tool: queue.pop(0) if queue else False


def _acknowledger(answer: Acknowledgement) -> Callable[[str], bool]:
    if callable(answer):
        return answer
    if isinstance(answer, bool):
        return lambda _prompt: answer
    queue = list(answer)  # consumed in order, then declined
    return lambda _prompt: queue.pop(0) if queue else False


class Running:
    """A started client: its status lines, and the questions asked of it."""

    def __init__(
        self, host: Host, session: ClientSession, options: StartOptions, elapsed: float
    ) -> None:
        self.host = host
        self.session = session
        self.options = options
        self.elapsed = elapsed  # seconds start() took (DISC-2, DISC-11)
        self.statuses: tuple[ServerStatus, ...] = tuple(session.statuses)
        self.text: str = session.text or ""
        self.turns: list[Turn] = []
        self.stopped: Stopped | None = None
        self.number = len(host.runs)  # this session's number in the case (Moment.run)
        host._saw(
            self.text, *(s.line for s in self.statuses), *(s.reason or "" for s in self.statuses)
        )

    def status(self, name: str) -> ServerStatus | None:
        """The status record of server `name`, or None if the client reported none."""
        return next((s for s in self.statuses if s.name == name), None)

    def ask(
        self,
        question: str,
        approve: Approval = "y",
        acknowledge: Acknowledgement = True,
        bound: float | None = None,
        offer_rule: str | None = None,
        may_withhold: bool = False,
        answer_question: QuestionAnswer = QUESTION_ANSWER,
    ) -> Turn:
        """One turn. `approve`: "y" / "n" / "" / a list of answers in order ("" once used up) /
        a callable(Confirmation) -> str. `acknowledge`: True / False / a list /
        a callable(str) -> bool. `answer_question`: what the person types at a free-form
        question the host itself asks (a host whose session takes `on_question`): a text, a
        list in order (then QUESTION_ANSWER), or a callable(str) -> str. A scripted call of
        a tool the host offered no function for ends the turn with a precondition failure of
        EXP-5, or, when `offer_rule` names the case's own requirement whose rule is that the
        tool is offered, a failure of it.
        `may_withhold`: the case allows the host to keep the tool from the model (a tool
        disabled until approved, PIN): not offering it is then one way of not calling it, and
        the case's own checks on what the server received decide."""
        approver = _approver(approve)
        acknowledger = _acknowledger(acknowledge)

        def on_confirmation(confirmation: Confirmation) -> str:
            self.host.confirmations.append(confirmation)
            self.host._saw(confirmation.text, confirmation.arguments, confirmation.warning)
            answer = approver(confirmation)
            self.host.moments.answered("approval", self.number, answer)
            return answer

        def on_acknowledgement(prompt: str) -> bool:
            self.host.acknowledgements.append(prompt)
            self.host._saw(prompt)
            accepted = bool(acknowledger(prompt))
            self.host.moments.answered("acknowledgement", self.number, prompt, accepted)
            return accepted

        questioner = _questioner(answer_question)

        def on_question(text: str) -> str:
            self.host.questions.append(text)
            self.host._saw(text)
            return str(questioner(text))

        def ask_host() -> Turn:
            ask: Callable[..., Turn] = self.session.ask  # `on_question` is optional
            if takes_questions(ask):
                return ask(question, on_confirmation, on_acknowledgement, on_question=on_question)
            return self.session.ask(question, on_confirmation, on_acknowledgement)

        limit = bound or self.host.timeouts.ask_bound(*self.host.bounded_timeouts(self.options))
        unmatched_before = len(self._unmatched_calls())
        configuration = self.host.config_digest()
        began = time.time()
        try:
            with self.host.moments.step("ask", self.number, question):
                turn = bounded("ask()", ask_host, limit)
        except Exception:
            self._tools_refused_since(began)  # the turn failed because of what was offered?
            raise
        self._tools_refused_since(began)
        self.turns.append(turn)
        changed = sorted(
            str(p) for p, d in self.host.config_digest().items() if configuration.get(p) != d
        )
        self.host.config_changes.extend((question, path) for path in changed)
        self.host._saw(
            turn.text, turn.answer, *(c.output for c in turn.calls), *turn.acknowledgements
        )
        not_offered = [] if may_withhold else self._unmatched_calls()[unmatched_before:]
        # A tool the model calls but the host never offered: its own outcome. A precondition
        # of the case (EXP-5's rule, not the case's), unless the case says that offering the
        # tool is its very rule (a healthy server beside failed ones, DISC-4).
        (check if offer_rule else precondition)(
            not not_offered,
            ids=offer_rule or "EXP-5",
            expected="a function offered for every MCP tool the (scripted) model calls",
            actual="; ".join([*not_offered, *self._unavailable()]),
        )
        return turn

    def _unavailable(self) -> list[str]:
        """What the host said at start about each server it left unavailable: why a tool was
        not offered, when the host knows (a start that failed under load shows here)."""
        return [
            f"the host said of {s.name}: {s.line or s.reason or 'unavailable'}"
            for s in self.statuses
            if not s.connected
        ]

    def _tools_refused_since(self, began: float) -> None:
        """A model request of this turn that the real service would refuse for a tool it
        offers (a name outside the pattern, parameters that are no object): the host cannot
        hold a conversation, so nothing the case checks can be judged. That is EXP-2's (the
        name) or EXP-3's (the parameters) rule, named as the precondition, never the case's."""
        model = self.host.model
        if model is None:
            return
        for entry in model.journal.entries(kind="http"):
            refused = entry.extra.get("refused")
            if entry.time < began or not is_model_request(entry) or not isinstance(refused, dict):
                continue
            param = str(refused.get("param") or "")
            if not param.startswith("tools"):
                continue
            precondition(
                False,
                ids="EXP-2" if param.endswith(".name") else "EXP-3",
                expected="tools the model service accepts (as the real one would)",
                actual=f"the model service refused the request: {refused.get('message')}",
            )

    def _unmatched_calls(self) -> list[str]:
        """Why each scripted call the mock model could not make so far (the host offered no
        function for that tool), as the model service journalled them."""
        model = self.host.model
        if model is None:
            return []
        return [
            str(problem)
            for entry in model.journal.entries(kind="event")
            if entry.extra.get("event") == "unmatched-call"
            for problem in entry.extra.get("problems") or ()
        ]

    def cancel(self) -> None:
        with self.host.moments.step("cancel", self.number):
            bounded("cancel()", self.session.cancel, self.host.timeouts.config_bound())

    @property
    def can_review(self) -> bool:
        return callable(getattr(self.session, "review_tools", None))

    def review(self, approve: ToolApproval = True) -> ToolReview:
        """The host's tool review (profiles pinning, instruction-flagging): every pending tool
        shown to the person, answered by `approve` (True / False / a list in order, then
        False / a callable(PendingTool) -> bool). AdapterError if the host has none."""
        review = getattr(self.session, "review_tools", None)
        if not callable(review):
            raise AdapterError(
                "the host claims a profile with a tool review (pinning or instruction-flagging) "
                "but its session has no review_tools"
            )
        approver = _tool_approver(approve)

        def on_tool(pending: PendingTool) -> bool:
            self.host._saw(pending.text)
            answer = bool(approver(pending))
            self.host.tool_answers.append((time.time(), pending, answer))
            return answer

        limit = self.host.timeouts.ask_bound(*self.host.bounded_timeouts(self.options))
        with self.host.moments.step("review", self.number):
            shown: ToolReview = bounded("review_tools()", lambda: review(on_tool), limit)
        self.host.reviews.append(shown)
        self.host._saw(shown.text, *(t.text for t in shown.tools))
        return shown

    def stop(self) -> Stopped:
        """End the client the way its user would; idempotent."""
        if self.stopped is None:
            with self.host.moments.step("stop", self.number):
                stopped = bounded(
                    "stop()",
                    self.session.stop,
                    self.host.timeouts.start_bound(self.host.bounded_timeouts(self.options)[0]),
                )
            self.stopped = stopped
            self.host.session_files.extend(stopped.session_files)
            self.host._saw(stopped.text)
        return self.stopped


@dataclass
class Host:
    """The client under test in one case: its HOME, project dir, model and what it showed."""

    adapter: Adapter = field(repr=False)
    home: Path
    project: Path
    model_url: str
    model_key: str = field(repr=False)  # a secret: never in a repr, so never in a report
    timeouts: Timeouts
    seen: list[str] = field(default_factory=list)  # every piece of text the user saw, in order
    confirmations: list[Confirmation] = field(default_factory=list)
    acknowledgements: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)  # the host's own questions, as shown
    config_paths: list[Path] = field(default_factory=list)  # paths add_server reported writing
    session_files: list[Path] = field(default_factory=list)
    servers: dict[str, ServerConfig] = field(default_factory=dict)
    runs: list[Running] = field(default_factory=list)
    ca_file: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # extra environment for every start
    # the mock model: told which configured name each mock has, so a scripted call
    # `Step.call(server=NAME, tool=T)` finds that mock's tool by its marker
    model: ModelService | None = None
    # The optional profiles the host claims, and those the running case is about (its
    # `profile` markers): a case about a profile drives that profile itself; any other case
    # gets what a person using such a host would do before chatting (see `start` and `add`).
    profiles: frozenset[str] = frozenset()
    case_profiles: frozenset[str] = frozenset()
    # a verified-add host meets each server as it is when it is added, in a case not about
    # the profile too (the explorer's `first-sync` as-it-is): no healthy stand-in
    adds_as_they_are: bool = False
    reviews: list[ToolReview] = field(default_factory=list)
    # each tool a review showed, with when and how the person answered (True: approved): a
    # monitor tells which definition an approval covered by the time it was given
    tool_answers: list[tuple[float, PendingTool, bool]] = field(default_factory=list)
    # what the person answers in the review after each start of a pinning host, in a case
    # not about pinning (the explorer's `tool-review` says no after the first start)
    review_answer: bool = True
    # what the harness did and when (monitors order journal entries by it), and which mock
    # each configured name stands for
    moments: Timeline = field(default_factory=Timeline)
    bound: dict[str, MarkedMock] = field(default_factory=dict)
    # every (name, mock) ever bound, in order: a name removed and added again for another
    # mock stands for both (what a case did before the change stays the first one's)
    bindings: list[tuple[str, MarkedMock]] = field(default_factory=list)
    listings: list[str] = field(default_factory=list)  # what each list_servers() showed
    configured: list[ServerConfig] = field(default_factory=list)  # every add, removed too
    # (question, path) of each configuration file whose bytes changed during a question
    config_changes: list[tuple[str, str]] = field(default_factory=list)
    # each configuration file as it was after each add and remove: (path, its mode, its
    # directory's mode, its first MiB): private only at the end is not private
    config_states: list[tuple[Path, int, int, bytes]] = field(default_factory=list)
    # The host's declared default timeouts (connect, call): the harness's bounds on a start
    # that passes none (the host then uses its own), never a verdict.
    defaults: tuple[float, float] = (10.0, 30.0)
    _allowed: bool = False

    def bounded_timeouts(self, options: StartOptions) -> tuple[float, float]:
        """The (connect, call) timeouts to bound a start's operations by: those passed, or
        for a start that passes none (the host's own defaults, unknown to the harness) the
        larger of the declared default and the catalog's."""
        connect = options.connect_timeout
        call = options.call_timeout
        return (
            connect if connect is not None else max(self.defaults[0], 10.0),
            call if call is not None else max(self.defaults[1], 30.0),
        )

    def _config_state(self) -> None:
        for path in dict.fromkeys(self.config_paths):
            try:
                with open(path, "rb") as f:
                    data = f.read(1024 * 1024)
                state = (path, os.stat(path).st_mode, os.stat(path.parent).st_mode, data)
            except OSError:
                continue
            self.config_states.append(state)

    def config_digest(self) -> dict[Path, str]:
        """A digest of each configuration file the host reported writing ("" if gone)."""
        found = {}
        for path in dict.fromkeys(self.config_paths):
            try:
                found[path] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                found[path] = ""
        return found

    def _saw(self, *texts: str | None) -> None:
        self.seen.extend(t for t in texts if t)

    def user_text(self) -> str:
        """Everything the user saw so far, joined by newlines."""
        return "\n".join(self.seen)

    # configuration -------------------------------------------------------------------------
    def allow_loopback(self) -> None:
        """Give a host that claims private-address-refusal the harness's loopback allowance
        (once per case, before anything else): its mocks listen there."""
        if self._allowed or PRIVATE_REFUSAL not in self.profiles:
            return
        self._allowed = True
        allow = getattr(self.adapter, "allow_addresses", None)
        if not callable(allow):
            raise AdapterError(
                "the host claims private-address-refusal but its adapter has no "
                "allow_addresses (the harness's loopback allowance cannot be given)"
            )
        shown = bounded(
            "allow_addresses()",
            lambda: allow(self.home, LOOPBACK_ALLOWANCE),
            self.timeouts.config_bound(),
        )
        self._saw(shown.text)

    @property
    def syncs_at_add(self) -> bool:
        return VERIFIED_ADD in self.profiles

    @property
    def _stands_in_at_add(self) -> bool:
        """Whether an add meets a healthy stand-in of the server (see `_healthy_for_add`)."""
        return (
            self.syncs_at_add
            and VERIFIED_ADD not in self.case_profiles
            and not self.adds_as_they_are
        )

    def _for_add(self, server: ServerConfig) -> ServerConfig:
        if not self.syncs_at_add:
            return server
        # The first sync's bound is the harness's generous `wait`, not the scaled connect
        # timeout: how long a sync at add may take is not what any case checks, and a slow
        # machine must not turn a healthy server's add into a refusal.
        if isinstance(server, HttpServer):
            return replace(
                server,
                connect_timeout=server.connect_timeout or self.timeouts.wait,
                ca_file=server.ca_file or self.ca_file,
            )
        return replace(server, connect_timeout=server.connect_timeout or self.timeouts.wait)

    def add(self, server: ServerConfig) -> Shown:
        self.allow_loopback()
        server = self._for_add(server)
        try:
            with self.moments.step("add", text=server.name):
                shown = bounded(
                    f"add_server({server.name!r})",
                    lambda: self.adapter.add_server(self.home, server),
                    self.timeouts.config_bound(),
                )
        except AssertionError:  # the harness's own bound: the client hangs
            raise
        except Exception as exc:
            if self._stands_in_at_add:
                raise RefusedAtAdd(
                    f"the host claims verified-add and did not save server {server.name!r}, "
                    f"whose first sync failed ({str(exc)[:300]}); this case needs it configured"
                ) from exc
            raise
        self.servers[server.name] = server
        self.configured.append(server)
        self.config_paths.extend(Path(p) for p in shown.paths)
        self._config_state()
        self._saw(shown.text)
        return shown

    def add_http(
        self,
        name: str,
        mock: HttpServerMock,
        headers: dict[str, str] | None = None,
        url: str | None = None,
    ) -> Shown:
        """Configure an HttpMock (its URL, or `url`); a TLS mock's CA becomes the CA to trust."""
        if mock.ca_file is not None:
            self.ca_file = Path(mock.ca_file)
        address = url or mock.url
        if address is None:
            raise ValueError(f"add_http({name!r}): the mock is not started (it has no URL)")
        self.bind(name, mock)
        with self._healthy_for_add(mock):
            shown = self.add(HttpServer(name=name, url=address, headers=dict(headers or {})))
        self._after_sync(mock)
        return shown

    def _healthy_for_add(self, mock: Any) -> AbstractContextManager[None]:
        # A host that syncs at add (verified-add) refuses to save a server that misbehaves:
        # in a case not about that profile, the server is healthy while it is added and
        # misbehaves from then on, as a server that broke after it was configured would.
        healthy = getattr(mock, "healthy", None)
        if self._stands_in_at_add and callable(healthy):
            made: AbstractContextManager[None] = healthy()
            return made
        return nullcontext()

    def _after_sync(self, mock: Any) -> None:
        # A verified-add host has just connected to the mock for its first sync (SYNC-1's to
        # judge). Other cases count what the mock received from the start of the session on,
        # as they do for a host that connects only at start: the add's requests are cleared.
        if self._stands_in_at_add:
            journal = getattr(mock, "journal", None)
            if journal is not None:
                journal.clear()

    def bind(self, name: str, mock: MarkedMock) -> None:
        """Tell the mock model that the server configured as `name` is `mock` (so a scripted
        `Step.call(server=name, ...)` finds its tools); `add_http`/`add_stdio` do it."""
        # anything with a command or URL may stand in for a mock; only marked ones are bound
        if getattr(mock, "marker_token", None):
            self.bound[name] = mock
            self.bindings.append((name, mock))
            if self.model is not None:
                self.model.bind(name, mock)

    def add_stdio(
        self,
        name: str,
        mock: StdioServerMock,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> Shown:
        """Configure a StdioMock (or anything with a `command` argv list)."""
        command = list(mock.command)
        self.bind(name, mock)
        with self._healthy_for_add(mock):
            shown = self.add(
                StdioServer(
                    name=name,
                    command=command[0],
                    args=(*command[1:], *args),
                    env=dict(env or {}),
                )
            )
        self._after_sync(mock)
        return shown

    def remove(self, name: str) -> Shown:
        self.allow_loopback()
        with self.moments.step("remove", text=name):
            shown = bounded(
                f"remove_server({name!r})",
                lambda: self.adapter.remove_server(self.home, name),
                self.timeouts.config_bound(),
            )
        self.servers.pop(name, None)
        self._config_state()
        self._saw(shown.text)
        return shown

    def list(self) -> Shown:  # noqa: A003 - the configuration command's name
        with self.moments.step("list"):
            shown = bounded(
                "list_servers()",
                lambda: self.adapter.list_servers(self.home),
                self.timeouts.config_bound(),
            )
        self._saw(shown.text)
        self.listings.append(shown.text or "")
        return shown

    # running --------------------------------------------------------------------------------
    def options(self, **overrides: Any) -> StartOptions:  # StartOptions' own field types
        options = StartOptions(
            home=self.home,
            cwd=self.project,
            model_url=self.model_url,
            model_key=self.model_key,
            connect_timeout=self.timeouts.wait,  # unhurried: see Timeouts.connect
            call_timeout=self.timeouts.call,
            ca_file=self.ca_file,
            env=dict(self.env),
        )
        return replace(options, **overrides)

    def start(self, **overrides: Any) -> Running:
        """Start the client (StartOptions fields may be overridden, e.g. resume=,
        connect_timeout=timeouts.connect for a case about connect times; the default is the
        unhurried `timeouts.wait`; None for a timeout leaves the host its own default). A
        host that claims pinning has every new or changed tool disabled until a person
        approves it: in a case that is not about pinning (or flagging), the person approves
        every tool right after the start, as a user of such
        a host would before chatting (or refuses every one: `review_answer`)."""
        self.allow_loopback()
        options = self.options(**overrides)
        began = time.monotonic()
        resumed = f"resume {options.resume}" if options.resume else ""
        with self.moments.step("start", len(self.runs), resumed):
            session = bounded(
                "start()",
                lambda: self.adapter.start(options),
                self.timeouts.start_bound(self.bounded_timeouts(options)[0]),
            )
        running = Running(self, session, options, time.monotonic() - began)
        self.runs.append(running)
        if PINNING in self.profiles and not ({PINNING, FLAGGING} & self.case_profiles):
            running.review(self.review_answer)
        return running

    def start_again(self, **overrides: Any) -> Running:
        """`start` again, with the servers the host's last session connected, as a case's own
        device (a second session for what one leaves undone), not its rule's subject: a host
        that then fails to start has not connected its configured servers at start, DISC-1's
        failure, and the case cannot judge its own rule (a precondition naming DISC-1)."""
        try:
            return self.start(**overrides)
        except (AdapterError, HarnessTimeout) as exc:
            raise PreconditionFailure(
                "DISC-1",
                "the host starts again with the servers its last session connected",
                f"its next start failed: {' '.join(str(exc).split())[:500]}",
            ) from None

    def stop_all(self) -> builtins.list[BaseException]:  # `list` is the method above
        """Stop every client still running (teardown); the problems met, never raised, but
        for an interruption (Ctrl-C, SIGTERM), raised once every client was stopped: the run
        stops, and no monitor reads a half-stopped case as the host's doing."""
        problems: builtins.list[BaseException] = []
        for running in self.runs:
            if running.stopped is None:
                try:
                    running.stop()
                except BaseException as exc:  # noqa: BLE001 - teardown reports, never masks the case
                    problems.append(exc)
        for problem in problems:
            if isinstance(problem, KeyboardInterrupt):
                raise problem
        return problems
