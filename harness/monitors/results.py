"""Monitors of what the model is told of a call's result: the server's text in order (RES-1),
its structured content when there is no text (RES-4), its error message (RES-5), binary data
kept out (RES-2), resource links listed and never opened (RES-3), at most 64 KiB of output
(RES-10); and, for the profiles, the marking (UNTR-1) and valid arguments only (ARGS-1).

Strategy: the result a mock sent for a `tools/call` is computed again from its spec and the
arguments it received (`mocks._rpc.call_tool_result`, what the mock itself runs), and tied
to the model's function call by the mock tool's marker and the arguments. Only the
substance is judged, never a status word (the catalog's decision on RES); and only where
the outcome cannot rightly be another: a server that answered at once, normally, with a
small result free of secrets and control characters, and an output that does not say the
call ended unknown (a call timeout on a starved machine must not read as a lost text).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from mcp_host_conformance.harness.cases.canaries import CANARY_PREFIX, REGISTRY
from mcp_host_conformance.harness.cases.observe import (
    MAY_HAVE_ACTED,
    NO_RETRY,
    output_text,
    stated_status,
)
from mcp_host_conformance.harness.cases.profile_support import untrusted_marking
from mcp_host_conformance.harness.cases.timeline import denies
from mcp_host_conformance.harness.monitors.observed import Called, Observed, Served
from mcp_host_conformance.harness.monitors.offered import MEGABYTE
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.harness.verdicts.safe_text import visible
from mcp_host_conformance.mocks._rpc import call_tool_result
from mcp_host_conformance.mocks.journal import Entry
from mcp_host_conformance.mocks.spec import Tool

KIB = 1024
OUTPUT_LIMIT = 64 * KIB
FRAMING_SLACK = KIB  # room for a status line or a marker around the output (RES-10)
JUDGED_RESULT = 48 * KIB
MESSAGE_LIMIT = 1024 * KIB  # larger results are RES-10's, not judged for their text here
# An output given this soon after its call reached the server came before any call timeout
# ended the call: the harness gives a host a second or more (Timeouts.call, scaled).
PROMPT_OUTPUT = 0.5


def _plainly_answered(served: Served, any_size: bool = False) -> bool:
    """The server answers tools/call at once, normally: no misbehaviour touches the call
    (`any_size`: but the answer's size may)."""
    bad = served.mock.spec.misbehaviour
    return not (
        bad.drop_call
        or "tools/call" in bad.stall
        or bad.delays.get("tools/call")
        or (bad.oversize_at == "tools/call" and not any_size)
        or bad.garbage
        or bad.garbage_at == "tools/call"
        or bad.call_http_status
        or bad.call_session_lost
        or bad.fail_at == "tools/call"
        or bad.poll_call not in (None, "", "deliver")
        or bad.reject_status
        or bad.accept_header
        or bad.change_tools_after_call
        or bad.exit_at == "tools/call"
        or bad.redirect_status
    )


def _first_outputs(observed: Observed) -> dict[str, tuple[Any, float]]:
    """call_id -> the first output the model received for it, and when."""
    found: dict[str, tuple[Any, float]] = {}
    for request in observed.requests:
        items = request.body.get("input")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found.setdefault(str(item.get("call_id")), (item.get("output"), request.time))
    return found


def _outputs(observed: Observed) -> dict[str, Any]:
    """call_id -> the first output the model received for it."""
    return {call_id: output for call_id, (output, _at) in _first_outputs(observed).items()}


def _decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def paired(observed: Observed) -> Iterator[tuple[Called, Served, Tool, Entry]]:
    """Each model call that reached its server, with the tool and the server's request, where
    that is certain: every call the model made to that tool with those arguments reached it
    (the same count on both sides: paired in order), and the server served one definition
    of that tool all along."""
    waiting: dict[tuple[int, str, str], list[Entry]] = {}
    for served, entry in observed.tool_calls():
        params = entry.params if isinstance(entry.params, dict) else {}
        arguments = json.dumps(params.get("arguments"), sort_keys=True)
        waiting.setdefault((id(served), str(params.get("name")), arguments), []).append(entry)
    asked: dict[tuple[int, str, str], list[Called]] = {}
    for call in observed.model_calls:
        if call.served is not None and call.tool is not None:
            arguments = json.dumps(_decoded(call.arguments), sort_keys=True)
            asked.setdefault((id(call.served), call.tool, arguments), []).append(call)
    for key, calls in asked.items():
        entries = waiting.get(key, [])
        target = calls[0].served
        assert target is not None
        tools = [t for t in target.tools() if t.name == key[1]]
        if len(entries) != len(calls) or len({json.dumps(t.definition()) for t in tools}) != 1:
            continue
        for call, entry in zip(calls, entries, strict=True):
            yield call, target, tools[0], entry


def _readable(output: Any) -> list[str]:
    """The output as text, and, when that text is JSON, its string values joined: a host may
    hand the model the server's text inside a JSON object."""
    text = output_text(output)
    found = [text]
    decoded = output if isinstance(output, dict | list) else _decoded(text)
    if isinstance(decoded, dict | list):
        leaves: list[str] = []

        def walk(value: Any, depth: int = 0) -> None:
            if depth > 32:
                return
            if isinstance(value, str):
                leaves.append(value)
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item, depth + 1)
            elif isinstance(value, list):
                for item in value:
                    walk(item, depth + 1)

        walk(decoded)
        found.append("\n".join(leaves))
    return found


def _in_order(pieces: list[str], texts: list[str]) -> bool:
    for text in texts:
        at = 0
        for piece in pieces:
            at = text.find(piece, at)
            if at == -1:
                break
            at += len(piece)
        else:
            return True
    return False


def _text_blocks(result: dict[str, Any]) -> list[str]:
    """The server's text blocks of a call result, in order (the empty ones left out)."""
    blocks = [b.get("text") for b in result.get("content", []) if b.get("type") == "text"]
    return [b for b in blocks if isinstance(b, str) and b]


def _judgeable(result: Any, pieces: list[str]) -> bool:
    """A small result whose text holds no secret and no control character (the host must
    remove or neutralize those: CRED-3, HARD-1)."""
    size = len(json.dumps(result, ensure_ascii=False).encode())
    return size <= JUDGED_RESULT and all(
        visible(p) == p and REGISTRY.redact(p) == p and CANARY_PREFIX not in p for p in pieces
    )


@monitor(
    "result-substance",
    "RES-1 RES-4 RES-5",
    "the output the model got for a call the server answered at once (or on the stream the "
    "host resumed, when the host says completed) holds the server's text blocks in order, "
    "else its structured content, or its error message",
)
def result_substance(self: Monitor, observed: Observed) -> Iterator[Finding]:
    outputs = _outputs(observed)
    reported: set[str] = set()
    for call, served, tool, entry in paired(observed):
        if not _plainly_answered(served) or call.call_id not in outputs:
            continue
        output = outputs[call.call_id]
        status = stated_status(output)
        if status in ("unknown", "denied"):
            continue
        if served.mock.spec.misbehaviour.poll_call and status != "completed":
            # the answer came on a resumed stream: a host that does not resume lost the
            # connection after sending the call, which is RES-7's to judge, not this one's
            continue
        params = entry.params if isinstance(entry.params, dict) else {}
        result = call_tool_result(tool, params.get("arguments") or {})
        texts = _readable(output)
        what = f"{served.label}/{tool.name}"
        if isinstance(result, tuple):
            rule, pieces, says = "RES-5", [result[1]], "the server's error message"
        else:
            pieces = _text_blocks(result)
            if result.get("isError"):
                rule, says = "RES-5", "the server's error message"
            elif pieces:
                rule, says = "RES-1", "the server's text blocks, in order"
            elif isinstance(result.get("structuredContent"), dict):
                structured = result["structuredContent"]
                rule, says = "RES-4", "the structured content"
                pieces = [str(v) for v in structured.values() if not isinstance(v, dict | list)]
            else:
                continue
        pieces = [p for p in pieces if p.strip()]
        if not _judgeable(result, pieces):
            continue
        held = (
            _in_order(pieces, texts)
            if rule == "RES-1"
            else any(all(p in text for p in pieces) for text in texts)
        )
        if not pieces or held or rule in reported:
            continue
        reported.add(rule)
        yield self.finding(
            rule,
            f"the model is given {says} for {what}",
            f"it got {visible(texts[0][:200])!r}; the server sent {visible(repr(pieces)[:200])}",
        )


def _unknowable(served: Served, tool: Tool) -> tuple[str, str] | None:
    """(rule, how) when every call this server receives ends without an answer the host can
    read, whatever the machine's speed: the catalog's RES-6 (no answer), RES-7 (the
    connection lost after the call was sent: reset, closed, a 5xx, garbage, the process
    gone, a refused resumption) and RES-8 (an answer over the message limit)."""
    bad = served.mock.spec.misbehaviour
    if "tools/call" in bad.stall or bad.drop_call == "stall":
        return "RES-6", "it never answers tools/call"
    if bad.drop_call in ("reset", "close"):
        return "RES-7", f"the connection is {'reset' if bad.drop_call == 'reset' else 'closed'}"
    if bad.call_http_status and bad.call_http_status >= 500:
        return "RES-7", f"it answers tools/call with HTTP {bad.call_http_status}"
    if bad.garbage_at == "tools/call":
        return "RES-7", "it answers tools/call with garbage"
    if bad.exit_at == "tools/call":
        return "RES-7", "it exits when the call arrives"
    if bad.poll_call == "refuse-resume":
        return "RES-7", "it refuses to resume the call's stream"
    # only a result is made oversized: an error answer (the tool's own, or "unknown tool" once
    # the tools changed) comes through whole
    oversized = bad.oversize_at == "tools/call" and bad.oversize_bytes > MESSAGE_LIMIT
    if oversized and tool.reply.jsonrpc_error is None and not bad.change_tools_after_call:
        return "RES-8", "its answer is over the 1 MiB message limit"
    return None


@monitor(
    "unknown-told-unknown",
    "RES-6 RES-7 RES-8 RES-9",
    "the output the model got for a call that reached a server which cannot answer it (no "
    "answer, the connection lost after sending, an answer over 1 MiB) says `unknown`; RES-9 "
    "when the person cancelled the call before its answer",
)
def unknown_told_unknown(self: Monitor, observed: Observed) -> Iterator[Finding]:
    outputs = _outputs(observed)
    reported: set[str] = set()
    cancels = [m.began for m in observed.of("cancel")]
    refused = any(denies(m.text) for m in observed.of("approval"))
    for call, served, tool, entry in paired(observed):
        why = _unknowable(served, tool)
        if why is None or call.call_id not in outputs:
            continue
        rule, how = why
        if rule == "RES-6" and any(t >= entry.time for t in cancels):
            rule, how = "RES-9", "cancelled by the person while it waited for its answer"
        said = stated_status(outputs[call.call_id])
        if said == "unknown" or rule in reported:
            continue
        if said == "denied" and refused:
            continue  # a refused call that was sent anyway: refusal-sends-nothing's (APR-2)
        reported.add(rule)
        yield self.finding(
            rule,
            f"a call sent to {served.label}/{tool.name} ends unknown ({how})",
            f"the model was told {said}" if said else "the output states no status",
        )


@monitor(
    "under-limit-answered",
    "RES-8",
    "a call whose server answered at once with a message over a megabyte and under 1 MiB is "
    "not told `unknown`: judged only where the output came back within half a second of the "
    "call reaching the server, before any call timeout could end it",
)
def under_limit_answered(self: Monitor, observed: Observed) -> Iterator[Finding]:
    outputs = _first_outputs(observed)
    for call, served, tool, entry in paired(observed):
        bad = served.mock.spec.misbehaviour
        size = bad.oversize_bytes
        if (
            bad.oversize_at != "tools/call"
            or not MEGABYTE < size <= MESSAGE_LIMIT - KIB
            or not _plainly_answered(served, any_size=True)
            or tool.reply.jsonrpc_error is not None  # not padded: only a result is
            or call.call_id not in outputs
            or outputs[call.call_id][1] - entry.time > PROMPT_OUTPUT
        ):
            continue
        if stated_status(outputs[call.call_id][0]) == "unknown":
            yield self.finding(
                "RES-8",
                f"{served.label}/{tool.name}'s answer of {size} B, under the 1 MiB limit, is "
                "the call's result",
                "the model was told unknown",
            )
            return


def _as_text(value: str) -> str | None:
    """The first line of base64 `value` decoded, when it is UTF-8 text long enough not to
    turn up by chance (a blob of a text type, as a file read whole is sent)."""
    try:
        text = base64.b64decode(value, validate=True).decode("utf-8")
    except ValueError:
        return None
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) >= 12 and line.isprintable() else None


@monitor(
    "unknown-says-may-have-acted",
    "RES-12",
    "every output that tells the model `unknown` also says the server may have acted and that "
    "the call must not be retried automatically",
)
def unknown_says_may_have_acted(self: Monitor, observed: Observed) -> Iterator[Finding]:
    # A rule about wording, so the wording is what is watched: wherever a host told the model
    # `unknown` (a case about any cause, a generated session), with RES-12's case's phrasings.
    for output in _outputs(observed).values():
        if stated_status(output) != "unknown":
            continue
        text = output_text(output)
        missing = [
            what
            for what, said in (
                ("that the server may have acted", MAY_HAVE_ACTED.search(text)),
                ("not to retry", NO_RETRY.search(text)),
            )
            if said is None
        ]
        if missing:
            yield self.finding(
                "RES-12",
                "an unknown output says the server may have acted and not to retry the call",
                f"the model was told unknown without saying {' or '.join(missing)}: "
                f"{visible(text[:200])!r}",
            )
            return


@monitor(
    "binary-kept-out",
    "RES-2",
    "no image, audio or blob data a server returned reached the model",
)
def binary_kept_out(self: Monitor, observed: Observed) -> Iterator[Finding]:
    if observed.model is None:
        return
    data = []
    for served in observed.served:
        for tool in served.tools():
            for block in tool.reply.content:
                inner = block.get("resource") if block.get("type") == "resource" else block
                value = (inner or {}).get("data") or (inner or {}).get("blob")
                if isinstance(value, str) and len(value) >= 8:
                    data.append((f"{served.label}/{tool.name}", value))
                    decoded = _as_text(value)
                    if decoded is not None:  # a blob of text, decoded by the host: still its data
                        data.append((f"{served.label}/{tool.name} (decoded)", decoded))
    if not data:
        return
    text = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in observed.requests)
    for what, value in data:
        if value in text:
            yield self.finding(
                "RES-2",
                "image, audio and binary data is marked as omitted, never sent to the model",
                f"the data {what} returned reached the model",
            )
            return


@monitor(
    "links-not-opened",
    "RES-3",
    "no server received resources/read, and no mock the host was not told of received a "
    "request for a page a resource link of a result points at",
)
def links_not_opened(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for served in observed.served:
        reads = served.requests("resources/read")
        if reads:
            uri = (reads[0].params or {}).get("uri") if isinstance(reads[0].params, dict) else None
            yield self.finding(
                "RES-3",
                "resource links are listed, not opened",
                f"{served.label} received resources/read for {str(uri)[:120]!r}",
            )
            return
    links = _linked_pages(observed)
    for served in observed.served:
        url = str(getattr(served.mock, "url", "") or "").rstrip("/")
        if served.names or not url:
            continue  # a configured server is contacted as one
        for link in links:
            if not link.startswith(url + "/"):
                continue
            path = urlsplit(link).path
            fetched = [e for e in served.entries if (e.path or "").split("?")[0] == path]
            if fetched:
                yield self.finding(
                    "RES-3",
                    "resource links are listed, not opened",
                    f"the page a resource link points at ({link[:120]}) was requested "
                    f"{len(fetched)} time(s)",
                )
                return


def _linked_pages(observed: Observed) -> set[str]:
    """The http(s) URIs of the resource links the servers' results hold."""
    found = set()
    for served in observed.served:
        for tool in served.tools():
            for block in getattr(tool.reply, "content", None) or []:
                uri = block.get("uri") if isinstance(block, dict) else None
                if block.get("type") == "resource_link" and isinstance(uri, str):
                    if uri.startswith(("http://", "https://")):
                        found.add(uri)
    return found


@monitor(
    "output-bounded",
    "RES-10",
    "no tool output the model received was over 64 KiB (with 1 KiB of framing)",
)
def output_bounded(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for call_id, output in _outputs(observed).items():
        size = len(output_text(output).encode())
        if size > OUTPUT_LIMIT + FRAMING_SLACK:
            yield self.finding(
                "RES-10",
                "the model receives at most 64 KiB of a result",
                f"the output for call {call_id} was {size} bytes",
            )
            return


def _first_text(tool: Tool, entry: Entry) -> str:
    """The first text block the server answered `entry` with, which the marking must precede
    (UNTR-1's case's reading); "" when the host had to change it (a secret, a control
    character, a result too large to judge) or it holds the marking's own words."""
    params = entry.params if isinstance(entry.params, dict) else {}
    result = call_tool_result(tool, params.get("arguments") or {})
    if not isinstance(result, dict):
        return ""
    first = next((b for b in _text_blocks(result) if b.strip()), "")
    if not first or not _judgeable(result, [first]) or "untrusted" in first.lower():
        return ""
    return first


@monitor(
    "results-marked-untrusted",
    "UNTR-1",
    "every output of a call that reached its server is marked untrusted, before the server's text",
    only=("untrusted-marking",),
)
def results_marked_untrusted(self: Monitor, observed: Observed) -> Iterator[Finding]:
    outputs = _outputs(observed)
    for call, served, tool, entry in paired(observed):
        output = outputs.get(call.call_id)
        answered = _plainly_answered(served) and call.call_id in outputs
        if answered and stated_status(output) not in ("unknown", "denied"):
            problem = untrusted_marking(output, _first_text(tool, entry))
            if problem:
                yield self.finding(
                    "UNTR-1",
                    f"the result of {served.label}/{tool.name} is marked untrusted",
                    problem,
                )
                return


def schema_accepts(schema: Any, arguments: Any) -> bool | None:
    """Whether `schema` (JSON Schema, 2020-12 unless it names another) accepts `arguments`;
    None for a schema the check cannot use."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        return bool(cls(schema).is_valid(arguments))
    except (SchemaError, RecursionError, ValueError, TypeError):
        return None


@monitor(
    "arguments-valid",
    "ARGS-1",
    "every tools/call carried arguments valid against the tool's input schema",
    only=("schema-validation",),
)
def arguments_valid(self: Monitor, observed: Observed) -> Iterator[Finding]:
    for served, entry in observed.tool_calls():
        name = served.tool_of(entry)
        tool = next((t for t in served.tools() if t.name == name), None)
        if tool is None or not isinstance(tool.input_schema, dict):
            continue
        params = entry.params if isinstance(entry.params, dict) else {}
        valid = schema_accepts(tool.definition().get("inputSchema"), params.get("arguments", {}))
        if valid is None:
            continue  # a schema the check cannot use: not a host's verdict
        if not valid:
            yield self.finding(
                "ARGS-1",
                "invalid arguments are never sent",
                f"{served.label}/{name} received arguments its schema refuses: "
                f"{visible(json.dumps(params.get('arguments'))[:160])}",
            )
            return
