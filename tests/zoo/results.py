"""Broken clients for RES: mapping a call's outcome to a result status."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    Seam,
    constant,
    pure,
    replaced,
    replaced_after,
    replaced_when,
    same_until,
)
from mcp_host_conformance.zoo.turn import RUN_CALL, ended
from mcp_host_conformance.zoo.variants import _no_status_to_the_model

_OUTCOME = "mcp_host_conformance.reference_client.turn.outcome_of_call"
_RESULTS = "mcp_host_conformance.reference_client.results"


@replaced("mcp_host_conformance.reference_client.results.render_content")
@pure
def _reversed_blocks(original):
    def render(result):
        content = result.get("content") if isinstance(result, dict) else None
        if isinstance(content, list):
            result = {**result, "content": list(reversed(content))}
        return original(result)

    return render


@replaced("mcp_host_conformance.reference_client.results.block_text")
@pure
def _image_data(original):
    def block_text(block):
        if (
            isinstance(block, dict)
            and block.get("type") in ("image", "audio")
            and isinstance(block.get("data"), str)
        ):
            return f"[{block['type']} {block.get('mimeType', '')}] {block['data']}", False
        return original(block)

    return block_text


def _near_output_limit(outcome, text) -> bool:
    """A text of 60,000 bytes or more was limited: any output limit from there up (or none)
    gives a shorter one as the reference's 64 KiB does (`read_file` limits what it read)."""
    return outcome[0] == "raise" or len(text.encode("utf-8", "surrogatepass")) >= 60_000


def _output_limit(value: int):
    return same_until(f"{_RESULTS}.limited_text", _near_output_limit)(
        constant(f"{_RESULTS}.OUTPUT_LIMIT", value)
    )


def _links_in(outcome, *args, **kwargs) -> bool:
    kind, result = outcome
    content = result.get("content") if kind == "return" and isinstance(result, dict) else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "resource_link" for block in content
    )


@replaced_after("mcp_host_conformance.reference_client.rpc.RpcSession.call_tool", _links_in)
def _open_links(original):
    from mcp_host_conformance.reference_client.transports import McpError

    async def call_tool(outcome, self, name, arguments):
        _, result = outcome
        for block in result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "resource_link":
                try:
                    await self._request("resources/read", {"uri": block.get("uri")})
                except McpError:
                    pass
        return result

    return call_tool


@replaced("mcp_host_conformance.reference_client.results.render_content")
@pure
def _no_structured(original):
    def render(result):
        if isinstance(result, dict):
            result = {k: v for k, v in result.items() if k != "structuredContent"}
        return original(result)

    return render


@replaced("mcp_host_conformance.reference_client.results.from_call_result")
@pure
def _error_completed(original):
    def from_call_result(result):
        if isinstance(result, dict) and result.get("isError") is True:
            result = {**result, "isError": False}
        return original(result)

    return from_call_result


@replaced("mcp_host_conformance.reference_client.turn.timed_out_outcome")
@pure
def _timeout_failed(original):
    from mcp_host_conformance.reference_client import results

    del original
    return lambda call_timeout: results.Outcome(
        results.FAILED, f"No answer within {call_timeout:g} s."
    )


def _erring(kind_test):
    """An `outcome_of_call` that differs only for a call that ended in an error `kind_test`
    is true of (a cancelled one raises in either)."""

    def differs(original, call) -> bool:
        return not call.cancelled() and call.exception() is not None and kind_test(call.exception())

    return differs


def _failed_on(kind_test):
    @replaced_when(_OUTCOME, _erring(kind_test))
    def make(original):
        from mcp_host_conformance.reference_client import results

        del original

        def outcome_of(call):  # an error `kind_test` is true of (`_erring`)
            return results.Outcome(results.FAILED, f"The call failed: {call.exception()}.")

        return outcome_of

    return make


def _dropped(error) -> bool:
    from mcp_host_conformance.reference_client.transports import MessageTooLarge, TransportError

    return isinstance(error, TransportError) and not isinstance(error, MessageTooLarge)


def _oversized(error) -> bool:
    from mcp_host_conformance.reference_client.transports import MessageTooLarge

    return isinstance(error, MessageTooLarge)


@replaced("mcp_host_conformance.reference_client.turn.cancelled_outcome")
@pure
def _cancel_failed(original):
    from mcp_host_conformance.reference_client import results

    del original
    return lambda: results.Outcome(results.FAILED, "The user cancelled the call.")


def _an_output(original, self, item) -> bool:
    return item.get("type") == "function_call_output"


@replaced_when("mcp_host_conformance.reference_client.turn.Conversation.record", _an_output)
def _outputs_twice(original):
    def record(self, item):  # a call's output (`_an_output`)
        original(self, item)
        original(self, item)

    return record


@replaced("mcp_host_conformance.reference_client.results.unknown")
@pure
def _terse_unknown(original):
    from mcp_host_conformance.reference_client import results

    del original
    return lambda reason: results.Outcome(
        results.UNKNOWN, f"The outcome of this call is unknown: {reason}."
    )


def _as_latin1(only_what=None):
    """A parse_json that decodes the bytes it is given as latin-1 (for `what` = only_what)."""

    @pure
    def make(original):
        def parse_json(data, what="message"):
            if isinstance(data, bytes) and (only_what is None or what == only_what):
                data = data.decode("latin-1")
            return original(data, what)

        return parse_json

    return make


@replaced("mcp_host_conformance.reference_client.results.render_content")
@pure
def _prefer_structured(original):
    import json

    def render(result):
        structured = result.get("structuredContent") if isinstance(result, dict) else None
        if structured is not None:  # "the structured form is the better one"
            return json.dumps(structured, ensure_ascii=False)
        return original(result)

    return render


@replaced("mcp_host_conformance.reference_client.results.block_text")
@pure
def _decode_text_blobs(original):
    import base64

    def block_text(block):
        resource = block.get("resource") if isinstance(block, dict) else None
        if (
            isinstance(resource, dict)
            and isinstance(resource.get("blob"), str)
            and str(resource.get("mimeType", "")).startswith("text/")
        ):
            try:
                text = base64.b64decode(resource["blob"]).decode("utf-8")
            except ValueError:
                return original(block)
            return f"[resource {resource.get('uri')}]\n{text}", True
        return original(block)

    return block_text


def _a_link(original, block) -> bool:
    return isinstance(block, dict) and block.get("type") == "resource_link"


@replaced_when("mcp_host_conformance.reference_client.results.block_text", _a_link)
def _fetch_link_urls(original):
    import urllib.request
    from pathlib import Path
    from urllib.parse import urlsplit

    def block_text(block):
        text, is_text = original(block)
        uri = str(block.get("uri", ""))  # a resource link (`_a_link`)
        try:  # "links are more useful opened"
            if uri.startswith(("http://", "https://")):
                with urllib.request.urlopen(uri, timeout=2) as response:  # noqa: S310
                    text += "\n" + response.read(4096).decode("utf-8", "replace")
            elif uri.startswith("file://"):
                text += "\n" + Path(urlsplit(uri).path).read_text()[:4096]
        except (OSError, ValueError):
            pass
        return text, is_text

    return block_text


@replaced("mcp_host_conformance.reference_client.results.from_call_result")
@pure
def _error_without_text_completed(original):
    def from_call_result(result):
        if isinstance(result, dict) and result.get("isError") is True and not result.get("content"):
            result = {**result, "isError": False}  # "an error needs a message"
        return original(result)

    return from_call_result


@replaced("mcp_host_conformance.reference_client.transports.stdio.same_id")
@pure
def _stdio_answers_have_results(original):
    def same_id(message, request_id):
        # "a response is the line with our id and a result": error responses never match
        return original(message, request_id) and "error" not in message

    return same_id


def _connect_timeout_shorter(outcome, *args, **options) -> bool:
    """The engine's connect timeout is the shorter one (or either is left to its default): a
    call that ends in time for the reference may run out of the connect timeout."""
    connect, call = options.get("connect_timeout"), options.get("call_timeout")
    return connect is None or call is None or connect < call


def _ran_out_of_time(outcome, conversation, *args, **kwargs) -> bool:
    """A call ended at the call timeout (or raised). Before that, with a connect timeout at
    least as long, every call ends as and when the reference's does."""
    from mcp_host_conformance.reference_client import turn

    kind, answer = outcome
    return kind == "raise" or answer == turn.timed_out_outcome(conversation.call_timeout)


@same_until("mcp_host_conformance.reference_client.turn.Conversation.send_call", _ran_out_of_time)
@same_until(
    "mcp_host_conformance.reference_client.engine.HostEngine.__init__", _connect_timeout_shorter
)
@replaced("mcp_host_conformance.reference_client.engine.HostEngine.__init__")
def _call_timeout_is_connect_timeout(original):
    def init(self, servers, **options):
        options["call_timeout"] = options.get("connect_timeout", 10.0)
        original(self, servers, **options)

    return init


@replaced("mcp_host_conformance.reference_client.transports.http.status_error")
@pure
def _server_error_refused(original):
    from mcp_host_conformance.reference_client.transports import TransportError

    def status_error(status):
        if status >= 500:  # "the server failed: it did nothing"
            return TransportError(f"the server failed (HTTP {status})", maybe_acted=False)
        return original(status)

    return status_error


def _failed_on_message(*words):
    @replaced_when(_OUTCOME, _erring(lambda error: any(w in str(error) for w in words)))
    def make(original):
        from mcp_host_conformance.reference_client import results

        del original

        def outcome_of_call(call):  # an error whose text holds one of `words`
            return results.Outcome(results.FAILED, f"The call failed: {call.exception()}.")

        return outcome_of_call

    return make


def _garbled(error) -> bool:
    from mcp_host_conformance.reference_client.transports import ProtocolError

    return isinstance(error, ProtocolError)


@replaced_when(_OUTCOME, _erring(_garbled))
def _garbled_failed(original):
    from mcp_host_conformance.reference_client import results

    del original

    def outcome_of_call(call):  # a ProtocolError (`_garbled`)
        error = call.exception()
        return results.Outcome(results.FAILED, f"The server answered nonsense: {error}.")

    return outcome_of_call


@replaced("mcp_host_conformance.reference_client.transports.http.HttpTransport.resume_stream")
def _result_lost_on_resume(original):
    async def resume_stream(self, request_id, stream, lost):
        await original(self, request_id, stream, lost)  # resumed, and what came is dropped
        return {"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}

    return resume_stream


@same_until(RUN_CALL, ended("UNKNOWN"))
@replaced(RUN_CALL)
def _note_unknown(original):
    from mcp_host_conformance.reference_client import results

    async def run_call(self, call, report):
        outcome = await original(self, call, report)
        if outcome.status == results.UNKNOWN:
            self.zoo_gave_up = True
        return outcome

    return run_call


@same_until(RUN_CALL, ended("UNKNOWN"))  # it drops outputs only once `_note_unknown` noted one
@replaced("mcp_host_conformance.reference_client.turn.Conversation.record")
def _drop_outputs_after_unknown(original):
    def record(self, item):
        kind = item.get("type")
        if kind == "function_call":
            self.zoo_gave_up = False  # a new reply
        elif kind == "function_call_output" and getattr(self, "zoo_gave_up", False):
            if "unknown" not in str(item.get("output", "")).lower()[:40]:
                return  # "after an unknown call the rest of the reply is abandoned"
        original(self, item)

    return record


@replaced_when(_OUTCOME, _erring(_oversized))
def _terse_when_oversized(original):
    from mcp_host_conformance.reference_client import results

    del original

    def outcome_of_call(call):  # a MessageTooLarge (`_oversized`)
        return results.Outcome(results.UNKNOWN, "The server's answer was too large to read.")

    return outcome_of_call


@replaced("mcp_host_conformance.reference_client.turn.CallReport")
def _unknown_shown_failed(original):
    def call_report(tool, status, output):  # a host that knows only success and failure
        return original(tool, "failed" if status == "unknown" else status, output)

    return call_report


CLIENTS = [
    BrokenClient(
        "reverses-text-blocks",
        "Joins a result's text blocks in reverse order.",
        {"RES-1"},
        (_reversed_blocks,),
    ),
    BrokenClient(
        "sends-image-data", "Passes image and audio data to the model.", {"RES-2"}, (_image_data,)
    ),
    BrokenClient(
        "opens-resource-links",
        "Reads every resource link of a result from the server.",
        {"RES-3"},
        (_open_links,),
    ),
    BrokenClient(
        "ignores-structured-content",
        "Drops structuredContent, also when there is no text.",
        {"RES-4"},
        (_no_structured,),
    ),
    BrokenClient(
        "error-as-completed",
        "A result with isError: true is reported completed.",
        {"RES-5", "SESS-1"},
        (_error_completed,),
        target="RES-5",
    ),  # SESS-1 shows a failed result
    BrokenClient(
        "timeout-as-failed",
        "A call that times out is reported failed.",
        {"RES-6"},  # RES-12 needs the timeout unknown: a failed precondition (RES-6)
        (_timeout_failed,),
    ),
    BrokenClient(
        "dropped-as-failed",
        "A connection lost after sending the call is reported failed.",
        # RES-12 and RETRY need a dropped call to end unknown: a failed precondition (RES-7)
        {"RES-7"},
        (_failed_on(_dropped),),
    ),
    BrokenClient(
        "oversized-as-failed",
        "A response over 1 MiB after sending the call is reported failed.",
        {"RES-8"},
        (_failed_on(_oversized),),
    ),
    BrokenClient(
        "cancel-as-failed",
        "A call cancelled by the user is reported failed.",
        {"RES-9"},
        (_cancel_failed,),
    ),
    BrokenClient(
        "no-output-limit",
        "Hands results of any size to the model, status completed.",
        {"RES-10"},
        (_output_limit(1 << 40),),
        target="RES-10",
    ),
    BrokenClient(
        "outputs-sent-twice",
        "Records every function_call_output twice.",
        # Every RES case checks that its call has exactly one output (RES-12's is a
        # precondition under the rule that makes its calls unknown: RES-6/7/8).
        {
            "RES-1",
            "RES-2",
            "RES-3",
            "RES-4",
            "RES-5",
            "RES-6",
            "RES-7",
            "RES-8",
            "RES-9",
            "RES-10",
            "RES-11",
        },
        (_outputs_twice,),
        target="RES-11",
    ),
    BrokenClient(
        "unknown-says-nothing",
        "The unknown output does not say the server may have acted nor forbid a retry.",
        {"RES-12"},
        (_terse_unknown,),
    ),
    BrokenClient(
        "json-body-as-latin1",
        "Decodes HTTP responses in JSON as latin-1.",
        {"RES-1"},
        (
            Seam(
                "mcp_host_conformance.reference_client.transports.http.parse_json",
                _as_latin1("response"),
            ),
        ),
    ),
    BrokenClient(
        "sse-data-as-latin1",
        "Decodes SSE event data as latin-1 (a text/event-stream without a charset).",
        # EXP-3/4, DISC-8/9 and RES-10: their schemas, descriptions and results are
        # multi-byte, served over SSE (mangled text, and its size in bytes grows)
        {"EXP-3", "EXP-4", "DISC-8", "DISC-9", "RES-1", "RES-10"},
        (
            Seam(
                "mcp_host_conformance.reference_client.transports.http.parse_json",
                _as_latin1("SSE message"),
            ),
        ),
        target="RES-1",
    ),
    BrokenClient(
        "stdio-lines-as-latin1",
        "Decodes the lines of stdio servers as latin-1.",
        # EXP-4: its stdio server's description is multi-byte (found by the explorer first)
        {"RES-1", "EXP-4"},
        (Seam("mcp_host_conformance.reference_client.transports.stdio.parse_json", _as_latin1()),),
        target="RES-1",
    ),
    BrokenClient(
        "prefers-structured-content",
        "Hands the model structuredContent instead of the text blocks whenever a result has it.",
        {"RES-1"},
        (_prefer_structured,),
    ),
    BrokenClient(
        "decodes-text-blobs",
        "Decodes blob resources whose type is text/* and hands their text to the model.",
        {"RES-2"},
        (_decode_text_blobs,),
    ),
    BrokenClient(
        "fetches-link-urls",
        "Opens resource links with an http or file URI itself (not with resources/read).",
        {"RES-3"},
        (_fetch_link_urls,),
    ),
    BrokenClient(
        "error-without-text-completed",
        "A result with isError: true but no content is reported completed.",
        {"RES-5"},
        (_error_without_text_completed,),
    ),
    BrokenClient(
        "stdio-ignores-error-responses",
        "Over stdio, takes only a line with a result as the answer; an error response is "
        "skipped and the call times out.",
        {"RES-5"},
        (_stdio_answers_have_results,),
    ),
    BrokenClient(
        "call-timeout-is-connect-timeout",
        "Times calls with the connect timeout instead of the call timeout.",
        {"RES-6"},
        (_call_timeout_is_connect_timeout,),
    ),
    BrokenClient(
        "server-error-as-failed",
        "A call answered with an HTTP 5xx status is reported failed (nothing was done).",
        {"RES-7"},  # RES-12 and RETRY see it as a failed precondition (RES-7), not their own
        (_server_error_refused,),
    ),
    BrokenClient(
        "garbled-answer-as-failed",
        "A call answered with something that is not a JSON-RPC response is reported failed.",
        {"RES-7"},  # RES-12 and RETRY see it as a failed precondition (RES-7), not their own
        (_garbled_failed,),
    ),
    BrokenClient(
        "stdio-exit-as-failed",
        "A stdio server that exits during a call is reported failed (it crashed).",
        {"RES-7"},  # RES-12 and RETRY see it as a failed precondition (RES-7), not their own
        (_failed_on_message("the server exited", "closed its output"),),
        target="RES-7",
    ),
    BrokenClient(
        "result-lost-on-resume",
        "Resumes an SSE stream closed before the response, but drops what the resumed stream "
        "delivers: the call is completed with no content.",
        {"RES-1", "RES-5", "RES-7"},  # the polled cases of RES-1/RES-7 and RES-5 (an error)
        (_result_lost_on_resume,),
        target="RES-7",
    ),
    BrokenClient(
        "output-limit-64000-bytes",
        "Cuts results at 64,000 bytes (a decimal count) instead of 64 KiB.",
        {"RES-10"},
        (_output_limit(64_000),),
    ),
    BrokenClient(
        "drops-outputs-after-unknown",
        "After a call of a reply ends unknown, the reply's remaining calls get no output.",
        {"RES-11"},
        (_note_unknown, _drop_outputs_after_unknown),
    ),
    BrokenClient(
        "unknown-shown-as-failed",
        "Tells the model no status (each output as it came) and shows the person `failed` "
        "for a call whose outcome is unknown (a timeout, a lost connection, an oversized "
        "answer, a cancel), as a host that knows only success and failure does.",
        # RES-1 and RES-5 too: its completed and failed calls state no status to the model
        {"RES-1", "RES-5", "RES-6", "RES-7", "RES-8", "RES-9"},
        (_no_status_to_the_model, _unknown_shown_failed),
        target="RES-7",
    ),
    BrokenClient(
        "terse-unknown-when-oversized",
        "The unknown output of an oversized answer says only that it was too large.",
        {"RES-12"},
        (_terse_when_oversized,),
    ),
]
