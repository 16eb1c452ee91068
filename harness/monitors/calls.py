"""Monitors of the calls a host sends: approved first, sent once, whole, at most 16 a turn,
each paired with one output; nothing called while a session reopens.

Strategy: calls are counted, not matched by what a prompt showed. The i-th `tools/call` any
server received (in time order) must have arrived after the person had answered i approval
prompts (APR-1), and after i answers that were not a refusal (APR-2): this holds for every
conforming host however it shows its prompt, batches its calls or names its tools. A call
is tied to the model's function call through the mock's marker, so "sent twice" means more
`tools/call` for a mock's tool than the model asked for (RETRY-1).
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

from mcp_host_conformance.harness.cases.confirmations import (
    ARGUMENTS_LIMIT,
    MARKER_SLACK,
    WARNING_CONTROL,
    WARNING_SENT,
    shown_size,
)
from mcp_host_conformance.harness.cases.observe import stated_status
from mcp_host_conformance.harness.cases.timeline import Moment, denies
from mcp_host_conformance.harness.contract.adapter import HttpServer
from mcp_host_conformance.harness.monitors.observed import Called, Observed, Served
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.monitors.results import schema_accepts
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.harness.verdicts.safe_text import visible
from mcp_host_conformance.mocks.journal import Entry
from mcp_host_conformance.mocks.spec import Misbehaviour

TURN_LIMIT = 16


def _arguments(entry: Entry) -> Any:
    params = entry.params if isinstance(entry.params, dict) else {}
    return params.get("arguments", {})


def _shown(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _approval_times(observed: Observed, counted: bool) -> list[float]:
    return sorted(m.ended for m in observed.of("approval") if not counted or not denies(m.text))


def _sent_and_asked(
    observed: Observed, served: Served, tool: str | None
) -> tuple[list[Entry], list[Called]]:
    """The tools/call of `tool` that `served` received, and the model's calls of it, each in
    order: the k-th sent is the model's k-th call of it, or one more than it asked for."""
    sent = [e for e in served.requests("tools/call") if served.tool_of(e) == tool]
    return sent, [c for c in observed.model_calls if c.served is served and c.tool == tool]


def _resent(observed: Observed) -> set[int]:
    """The id() of each tools/call a server received beyond the model's calls of its tool
    there: a resend (RETRY-1's, and APR-1's: no approval of its own), whose tool's
    annotations had nothing to do with it. None for a tool the model's calls could not be
    tied to (a name the host changed)."""
    found: set[int] = set()
    for served in observed.served:
        for tool in {served.tool_of(e) for e in served.requests("tools/call")}:
            sent, asked = _sent_and_asked(observed, served, tool)
            if asked:
                found.update(id(e) for e in sent[len(asked) :])
    return found


def _unapproved(observed: Observed, counted: bool) -> Iterator[tuple[int, Served, Entry, int]]:
    """(index, server, call, answers before it) of each call that arrived before enough
    answers (any answer; with `counted`, answers that were not a refusal)."""
    answers = _approval_times(observed, counted)
    for index, (served, entry) in enumerate(observed.tool_calls()):
        before = sum(1 for t in answers if t <= entry.time)
        if before < index + 1:
            yield index, served, entry, before


@monitor(
    "calls-wait-for-approval",
    "APR-1 APR-3",
    "the n-th tools/call any server received arrived after the person answered n approval "
    "prompts (APR-3 when the tool carries annotations)",
)
def calls_wait_for_approval(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for index, served, entry, before in _unapproved(observed, counted=False):
        yield from _without_a_prompt(
            self,
            served,
            entry,
            f"call number {index + 1} ({served.label}/{served.tool_of(entry)}) reached the "
            f"server after {before} approval prompt(s) had been answered",
            annotations=id(entry) not in _resent(observed),
        )
        return  # the first is enough: every later count is off by the same call


def _without_a_prompt(
    self: Monitor, served: Served, entry: Entry, why: str, annotations: bool = True
) -> Iterator[Finding]:
    """APR-1 for a call sent without its own approval, and APR-3 when its tool carries
    annotations (and they may be why: `annotations`)."""
    tool = served.tool_of(entry)
    yield self.finding(
        "APR-1",
        "every MCP call waits for its own approval: nothing reaches the server before it",
        why,
    )
    annotated = next((t for t in served.tools() if t.name == tool and t.annotations), None)
    if annotations and annotated is not None:
        yield self.finding(
            "APR-3",
            "annotations never skip the approval",
            f"{served.label}/{tool}, annotated {_shown(annotated.annotations)}, was called "
            "without one",
        )


def _asked_at(observed: Observed, served: Served, entry: Entry) -> float | None:
    """When the model asked for the call `entry` (the k-th call of its tool at `served` is
    the model's k-th call of it), or None when the model asked for fewer."""
    sent, asked = _sent_and_asked(observed, served, served.tool_of(entry))
    k = next((i for i, e in enumerate(sent) if e is entry), len(sent))
    return observed.requests[asked[k].request].time if k < len(asked) else None


@monitor(
    "refusal-sends-nothing",
    "APR-2 APR-1 APR-3",
    "the n-th tools/call arrived after n answers that were not a refusal (an empty answer, "
    "`n` or anything but yes denies); APR-2 when the last answer before it was a refusal of "
    "a call the model had asked for by then, APR-1 when it was a yes another call had "
    "already used or the model asked for the call only after it (APR-3 as well when its "
    "tool carries annotations)",
)
def refusal_sends_nothing(self: Monitor, observed: Observed) -> Iterator[Finding]:
    if next(_unapproved(observed, counted=False), None) is not None:
        return  # sent without any prompt: APR-1's finding, not a refusal ignored
    answers = sorted(observed.of("approval"), key=lambda m: m.ended)
    for index, served, entry, before in _unapproved(observed, counted=True):
        what = f"call number {index + 1} ({served.label}/{served.tool_of(entry)})"
        last = [m for m in answers if m.ended <= entry.time][-1:]
        if last and not denies(last[0].text):
            # A host that answered a refusal rightly and then let a later call ride on an
            # earlier yes (approval for the rest of a turn) sent no refused call.
            yield self.finding(
                "APR-1",
                "every MCP call waits for its own approval",
                f"{what} reached the server with only {before} approving answer(s) before it: "
                "the last answer before it was a yes another call had already used",
            )
            return
        asked = _asked_at(observed, served, entry)
        if last and asked is not None and asked > last[0].ended:
            # the model asked for it after the refusal: that refusal was another call's,
            # and this one was sent with no prompt of its own
            yield from _without_a_prompt(
                self,
                served,
                entry,
                f"{what} reached the server with no prompt answered since the model asked for "
                f"it (the last answer before it, a refusal, came earlier)",
            )
            return
        refused = [repr(m.text) for m in answers if denies(m.text)]
        yield self.finding(
            "APR-2",
            "a refused call is never sent",
            f"{what} reached the server with only {before} approving answer(s) before it, the "
            f"last answer before it a refusal (refusals given: {', '.join(refused[:5])})",
        )
        return


@monitor(
    "sent-once",
    "RETRY-1",
    "no server received more tools/call for a tool than the model asked for (a retry by the "
    "host or a library it uses, after a timeout, a dropped connection, a lost session)",
)
def sent_once(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # Counted per server: a call sent under another name than the one asked for (a name the
    # host mangled) is a wrong call, not a second one.
    asked = Counter(id(c.served) for c in observed.model_calls if c.served is not None)
    sent: Counter[int] = Counter()
    tools: dict[int, Counter[str]] = {}
    for served, entry in observed.tool_calls():
        sent[id(served)] += 1
        tools.setdefault(id(served), Counter())[str(served.tool_of(entry))] += 1
    for served in observed.served:
        key = id(served)
        if sent[key] > asked[key]:
            most = ", ".join(f"{t} {n}x" for t, n in tools[key].most_common(3))
            yield self.finding(
                "RETRY-1",
                "a call is never sent twice: one tools/call for each call the model made",
                f"{served.label} received {sent[key]} tools/call ({most}) for {asked[key]} "
                "call(s) by the model",
            )


def _decoded(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return None


@monitor(
    "arguments-whole",
    "APR-5",
    "each tools/call carried exactly the arguments of a call the model made to that tool",
)
def arguments_whole(self: Monitor, observed: Observed) -> Iterator[Finding]:
    wanted: dict[tuple[int, str], list[Any]] = {}
    for call in observed.model_calls:
        if call.served is not None:
            decoded = _decoded(call.arguments)
            if isinstance(decoded, dict):
                wanted.setdefault((id(call.served), str(call.tool)), []).append(decoded)
    for served, entry in observed.tool_calls():
        key = (id(served), str(served.tool_of(entry)))
        if key not in wanted:
            continue  # a call the model made with arguments that are no JSON object
        received = _arguments(entry)
        if received not in wanted[key]:
            yield self.finding(
                "APR-5",
                "the server receives the complete arguments the model sent",
                f"{served.label}/{key[1]} received {_shown(received)}; the model sent "
                f"{' or '.join(_shown(w) for w in wanted[key][:3])}",
            )


@monitor(
    "arguments-shown-cut",
    "APR-5",
    "no confirmation shows more than 2 KiB of UTF-8 of arguments (with room for a marker)",
)
def arguments_shown_cut(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # Only the side every host's presentation shares: a host may show the arguments in its
    # own form, or none, but whatever it shows stops after 2 KiB. Whether it marks the cut
    # and where it starts is the case's to judge, with arguments made for it.
    for confirmation in _confirmations(observed):
        size = shown_size(confirmation.arguments)
        if size > ARGUMENTS_LIMIT + MARKER_SLACK:
            yield self.finding(
                "APR-5",
                "arguments shown are cut off after 2 KiB",
                f"a confirmation of {visible(confirmation.server)}/"
                f"{visible(confirmation.tool)} showed {size} bytes of arguments",
            )
            return


@monitor(
    "sixteen-a-turn",
    "TURN-1",
    "while one question's turn ran, the servers together received at most 16 tools/call",
)
def sixteen_a_turn(self: Monitor, observed: Observed) -> Iterator[Finding]:
    calls = [entry.time for _, entry in observed.tool_calls()]
    for turn in observed.of("ask"):
        inside = sum(1 for t in calls if turn.began <= t <= turn.ended)
        if inside > TURN_LIMIT:
            yield self.finding(
                "TURN-1",
                f"no more than {TURN_LIMIT} MCP calls in one turn",
                f"{inside} tools/call reached the servers during the turn of {turn.text!r}",
            )


# Misbehaviours that leave every tools/call reaching the server and answered at once: how a
# stdio server ends, what it writes to stderr, a barrier at initialize (a server that did
# not get past it offers nothing to call).
_HARMLESS = {"stderr_flood", "spawn_child", "ignore_sigterm", "daemonize", "linger", "barrier"}
_PLAIN = Misbehaviour()


def _answers_every_call(served: Served) -> bool:
    bad = served.mock.spec.misbehaviour
    return all(
        getattr(bad, f.name) == getattr(_PLAIN, f.name)
        for f in fields(Misbehaviour)
        if f.name not in _HARMLESS
    )


def _valid_arguments(served: Served, called: Called) -> bool:
    tool = next((t for t in served.tools() if t.name == called.tool), None)
    try:
        arguments = json.loads(called.arguments)
    except ValueError:
        return False
    if tool is None or not isinstance(arguments, dict):
        return False
    return schema_accepts(tool.definition().get("inputSchema"), arguments) is True


def _certain(called: Called) -> bool:
    """A call nothing but the turn's limit may keep from its server: a tool the host
    offered, of a server that answers every call at once and never changes its tools, with
    arguments its schema accepts."""
    served = called.served
    return (
        served is not None
        and called.tool is not None
        and _answers_every_call(served)
        and _valid_arguments(served, called)
    )


def _turn_calls(observed: Observed, turn: Moment) -> list[Called]:
    return [
        call
        for request in observed.requests
        if turn.began <= request.time <= turn.ended
        for call in request.calls
    ]


def _session_began(observed: Observed, turn: Moment) -> float:
    starts = [m.began for m in observed.of("start") if m.run == turn.run and m.began <= turn.began]
    return max(starts, default=turn.began)


@monitor(
    "sixteen-let-through",
    "TURN-1",
    "in a turn where the person answered every confirmation with a yes, each of the model's "
    "first 16 calls reached its server when it was of a tool the host offered and had called "
    "in that session, on a server that answers every call, with arguments its schema accepts",
)
def sixteen_let_through(self: Monitor, observed: Observed) -> Iterator[Finding]:
    calls = list(observed.tool_calls())
    answers = observed.of("approval")
    cancels = observed.of("cancel")
    for turn in observed.of("ask"):
        if not turn.whole or any(c.began <= turn.ended and c.ended >= turn.began for c in cancels):
            continue  # a turn the harness cut short, or one cancelled: not the limit's doing
        asked = _turn_calls(observed, turn)[:TURN_LIMIT]
        if not asked or not all(_certain(c) for c in asked):
            continue
        if any(denies(a.text) for a in answers if turn.began <= a.began <= turn.ended):
            continue
        # a tool called in this session is one nothing of the session (a token, a review, a
        # refusal by its text) keeps from its server: only the limit may
        began = _session_began(observed, turn)
        called = {(id(s), s.tool_of(e)) for s, e in calls if began <= e.time <= turn.ended}
        if not all((id(c.served), c.tool) in called for c in asked):
            continue
        reached = sum(1 for _s, e in calls if turn.began <= e.time <= turn.ended)
        if reached < len(asked):
            yield self.finding(
                "TURN-1",
                f"every call counts toward the limit of {TURN_LIMIT}: up to it, calls run",
                f"the model asked for {len(asked)} calls{' or more' * (len(asked) == TURN_LIMIT)}"
                f" in the turn of {turn.text!r}, each of a tool the host had called in that "
                f"session, the person approved every one asked about, and {reached} tools/call "
                "reached the servers",
            )


# The model requests, each answered with calls, a host may still send in a turn once its
# 16th call ran (the reference sends one, asking the model to finish without tools): more
# is a host that leaves ending the turn to the model.
AFTER_THE_LIMIT = 4


@monitor(
    "turn-ended-at-the-limit",
    "TURN-1",
    f"once 16 calls of a turn had reached the servers, the host sent at most "
    f"{AFTER_THE_LIMIT} more model requests in that turn while the model kept asking for calls",
)
def turn_ended_at_the_limit(self: Monitor, observed: Observed) -> Iterator[Finding]:
    calls = [entry.time for _, entry in observed.tool_calls()]
    for turn in observed.of("ask"):
        inside = [t for t in calls if turn.began <= t <= turn.ended]
        if len(inside) < TURN_LIMIT:
            continue
        limit_reached = inside[TURN_LIMIT - 1]
        after = [r for r in observed.requests if limit_reached < r.time <= turn.ended and r.calls]
        if len(after) > AFTER_THE_LIMIT:
            yield self.finding(
                "TURN-1",
                "the host ends the turn once the limit is reached",
                f"after the {TURN_LIMIT}th call of the turn of {turn.text!r} the host sent "
                f"{len(after)} more model requests, each answered with calls, and stopped "
                "only when the model did",
            )


@monitor(
    "nothing-called-on-reopen",
    "SESS-2",
    "while a session was being reopened (a start with a session to resume), no server "
    "received a tools/call",
)
def nothing_called_on_reopen(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for start in observed.of("start"):
        if not start.text.startswith("resume"):
            continue
        inside = [
            f"{s.label}/{s.tool_of(e)}"
            for s, e in observed.tool_calls()
            if start.began <= e.time <= start.ended
        ]
        if inside:
            yield self.finding(
                "SESS-2",
                "nothing is called again while a session reopens",
                f"tools/call while reopening: {', '.join(inside[:5])}",
            )


def _call_outputs(body: dict[str, Any]) -> list[Any]:
    items = body.get("input")
    return [
        i.get("output")
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


def _paired_outputs(body: dict[str, Any]) -> list[tuple[str, Any]]:
    items = body.get("input")
    return [
        (str(i.get("call_id")), i.get("output"))
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


def _outputs(body: dict[str, Any]) -> Counter[str]:
    items = body.get("input")
    return Counter(
        str(i.get("call_id"))
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    )


@monitor(
    "one-output-per-call",
    "RES-11",
    "a request that carries an output for some of a reply's calls carries one for each of "
    "them, and no call's output twice",
)
def one_output_per_call(self: Monitor, observed: Observed) -> Iterator[Finding]:
    requests = observed.requests
    for request in requests:
        outputs = _outputs(request.body)
        twice = [cid for cid, n in outputs.items() if n > 1]
        if twice:
            yield self.finding(
                "RES-11",
                "exactly one paired output for each function call",
                f"model request {request.index + 1} carries {len(twice)} call(s) with several "
                f"outputs ({', '.join(twice[:3])})",
            )
    for request in requests:
        ids = [c.call_id for c in request.calls]
        if not ids:
            continue
        later = next(
            (r for r in requests[request.index + 1 :] if set(ids) & set(_outputs(r.body))),
            None,
        )
        if later is None:
            continue
        missing = [cid for cid in ids if cid not in _outputs(later.body)]
        if missing:
            yield self.finding(
                "RES-11",
                "every function call gets its paired output in the next request, whatever "
                "its status",
                f"model request {later.index + 1} carries outputs for some calls of reply "
                f"{request.index + 1} but none for {', '.join(missing[:3])}",
            )


def _uncertain(served: Served) -> bool:
    """Every call to it ends without an answer, whatever the machine's speed: the connection
    dropped after the request was read, a stall, or an answer over the message limit."""
    bad = served.mock.spec.misbehaviour
    return bool(
        bad.drop_call
        or "tools/call" in bad.stall
        or (bad.oversize_at == "tools/call" and bad.oversize_bytes > 1024 * 1024)
    )


@monitor(
    "acknowledged-before-next-question",
    "RETRY-2",
    "after a question in which a call ended without an answer (dropped, stalled, oversized), "
    "the session's next question reached the model only after the person accepted an "
    "acknowledgement",
)
def acknowledged_before_next(self: Monitor, observed: Observed) -> Iterator[Finding]:
    asks = observed.of("ask")
    uncertain = [e.time for s, e in observed.tool_calls() if _uncertain(s)]
    for ask in asks:
        if not any(ask.began <= t <= ask.ended for t in uncertain):
            continue
        following = next((a for a in asks if a.run == ask.run and a.began > ask.ended), None)
        if following is None:
            continue
        # Only where the host itself told the model the outcome of a call made in this very
        # question is unknown (a request replays the conversation: an unknown of an earlier
        # question is no news): a host that called it failed broke RES-6/7/8 (their
        # cases), and had no reason to ask for an acknowledgement.
        made = {
            c.call_id
            for r in observed.requests
            if ask.began <= r.time <= ask.ended
            for c in r.calls
        }
        told_unknown = any(
            stated_status(output) == "unknown"
            for r in observed.requests
            if ask.began <= r.time <= following.ended
            for call_id, output in _paired_outputs(r.body)
            if call_id in made
        )
        if not told_unknown:
            continue
        sent = [r for r in observed.requests if following.began <= r.time <= following.ended]
        accepted = [
            m.ended
            for m in observed.of("acknowledgement")
            if m.accepted and following.began <= m.ended <= following.ended
        ]
        if sent and not any(t <= sent[0].time for t in accepted):
            yield self.finding(
                "RETRY-2",
                "after an unknown result the next question waits for an acknowledgement",
                f"the question {following.text!r} reached the model without one accepted "
                f"first ({len(observed.of('acknowledgement'))} acknowledgement prompt(s) in all)",
            )
            return


@monitor(
    "declined-keeps-question",
    "RETRY-3",
    "a question whose acknowledgement the person declined never reached the model, and the "
    "session's next question (not declined) did",
)
def declined_keeps_question(self: Monitor, observed: Observed) -> Iterator[Finding]:
    asks = observed.of("ask")
    answers = observed.of("acknowledgement")
    for ask in asks:
        given = [m for m in answers if ask.began <= m.ended <= ask.ended]
        if not given or any(m.accepted for m in given):
            continue
        sent = [r for r in observed.requests if ask.began <= r.time <= ask.ended]
        if sent:
            yield self.finding(
                "RETRY-3",
                "declining the acknowledgement keeps the question unsent",
                f"the question {ask.text!r} reached the model after the person declined",
            )
            return
        following = next((a for a in asks if a.run == ask.run and a.began > ask.ended), None)
        if following is None:
            continue
        declined_again = any(
            not m.accepted for m in answers if following.began <= m.ended <= following.ended
        )
        reached = any(following.began <= r.time <= following.ended for r in observed.requests)
        if not declined_again and not reached:
            yield self.finding(
                "RETRY-3",
                "after a declined acknowledgement the session stays usable: the next "
                "question reaches the model",
                f"the next question {following.text!r} never reached the model",
            )
            return


def _plain(name: str) -> bool:
    return name.isprintable() and not any(unicodedata.category(c) == "Cf" for c in name)


def _confirmations(observed: Observed) -> list[Any]:
    seen: dict[int, Any] = {}
    for host in observed.hosts:
        for confirmation in getattr(host, "confirmations", []):
            seen.setdefault(id(confirmation), confirmation)
    return list(seen.values())


@monitor(
    "confirmation-names-the-call",
    "APR-4",
    "every confirmation names a configured server, that server's destination (its URL or "
    "command) and one of its own tool names, with the warning that the arguments go to the "
    "server and the client cannot control what it does with them",
)
def confirmation_names_the_call(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for confirmation in _confirmations(observed):
        # a name configured twice (removed, then added again for another mock) stands for all
        configs = [c for c in observed.configured if c.name == confirmation.server]
        tools = {
            t.name for s in observed.served if confirmation.server in s.names for t in s.tools()
        }
        problem = None
        if not configs:
            problem = f"Server {visible(confirmation.server)!r} is no configured server's name"
        elif not all(_plain(t) for t in tools):
            continue  # a name of control characters is shown neutralized: HARD-1's to judge
        elif tools and confirmation.tool not in tools:  # no tools known: no mock behind it
            problem = (
                f"Tool {visible(confirmation.tool)!r} is not one of {confirmation.server}'s own "
                "tool names"
            )
        else:
            destinations = [c.url if isinstance(c, HttpServer) else c.command for c in configs]
            if not any(d in confirmation.destination for d in destinations):
                problem = (
                    f"Destination {visible(confirmation.destination)!r} does not show "
                    f"{destinations[0]!r}"
                )
            elif not (
                WARNING_SENT.search(confirmation.warning)
                and WARNING_CONTROL.search(confirmation.warning)
            ):
                problem = (
                    f"the warning {visible(confirmation.warning[:160])!r} does not say the "
                    "arguments go to the server and the client cannot control what it does"
                )
        if problem is not None:
            yield self.finding(
                "APR-4",
                "a confirmation names the server, its destination and the server's own tool "
                "name, with the warning",
                problem,
            )
            return
