"""Broken clients for RES: mapping a call's outcome to a result status."""

from __future__ import annotations

from mcp_host_conformance.zoo.client import BrokenClient, Seam, constant, replaced


@replaced("mcp_host_conformance.reference_client.results.render_content")
def _reversed_blocks(original):
    def render(result):
        content = result.get("content") if isinstance(result, dict) else None
        if isinstance(content, list):
            result = {**result, "content": list(reversed(content))}
        return original(result)

    return render


@replaced("mcp_host_conformance.reference_client.results.block_text")
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


@replaced("mcp_host_conformance.reference_client.rpc.RpcSession.call_tool")
def _open_links(original):
    from mcp_host_conformance.reference_client.transports import McpError

    async def call_tool(self, name, arguments):
        result = await original(self, name, arguments)
        for block in result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "resource_link":
                try:
                    await self._request("resources/read", {"uri": block.get("uri")})
                except McpError:
                    pass
        return result

    return call_tool


@replaced("mcp_host_conformance.reference_client.results.render_content")
def _no_structured(original):
    def render(result):
        if isinstance(result, dict):
            result = {k: v for k, v in result.items() if k != "structuredContent"}
        return original(result)

    return render


@replaced("mcp_host_conformance.reference_client.results.from_call_result")
def _error_completed(original):
    def from_call_result(result):
        if isinstance(result, dict) and result.get("isError") is True:
            result = {**result, "isError": False}
        return original(result)

    return from_call_result


@replaced("mcp_host_conformance.reference_client.turn.timed_out_outcome")
def _timeout_failed(original):
    from mcp_host_conformance.reference_client import results

    del original
    return lambda call_timeout: results.Outcome(
        results.FAILED, f"No answer within {call_timeout:g} s."
    )


def _failed_on(kind_test):
    def make(original):
        from mcp_host_conformance.reference_client import results

        def outcome_of(call):
            error = call.exception()
            if error is not None and kind_test(error):
                return results.Outcome(results.FAILED, f"The call failed: {error}.")
            return original(call)

        return outcome_of

    return make


def _dropped(error) -> bool:
    from mcp_host_conformance.reference_client.transports import MessageTooLarge, TransportError

    return isinstance(error, TransportError) and not isinstance(error, MessageTooLarge)


def _oversized(error) -> bool:
    from mcp_host_conformance.reference_client.transports import MessageTooLarge

    return isinstance(error, MessageTooLarge)


@replaced("mcp_host_conformance.reference_client.turn.cancelled_outcome")
def _cancel_failed(original):
    from mcp_host_conformance.reference_client import results

    del original
    return lambda: results.Outcome(results.FAILED, "The user cancelled the call.")


@replaced("mcp_host_conformance.reference_client.turn.Conversation.record")
def _outputs_twice(original):
    def record(self, item):
        original(self, item)
        if item.get("type") == "function_call_output":
            original(self, item)

    return record


@replaced("mcp_host_conformance.reference_client.results.unknown")
def _terse_unknown(original):
    from mcp_host_conformance.reference_client import results

    del original
    return lambda reason: results.Outcome(
        results.UNKNOWN, f"The outcome of this call is unknown: {reason}."
    )


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
        {"RES-6", "RES-12"},
        (_timeout_failed,),
        target="RES-6",
    ),  # RES-12 needs the timeout unknown
    BrokenClient(
        "dropped-as-failed",
        "A connection lost after sending the call is reported failed.",
        {"RES-7", "RES-12", "RETRY-2", "RETRY-3"},  # their cases need a dropped call to end unknown
        (Seam("mcp_host_conformance.reference_client.turn.outcome_of_call", _failed_on(_dropped)),),
        target="RES-7",
    ),
    BrokenClient(
        "oversized-as-failed",
        "A response over 1 MiB after sending the call is reported failed.",
        {"RES-8"},
        (
            Seam(
                "mcp_host_conformance.reference_client.turn.outcome_of_call", _failed_on(_oversized)
            ),
        ),
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
        (constant("mcp_host_conformance.reference_client.results.OUTPUT_LIMIT", 1 << 40),),
        target="RES-10",
    ),
    BrokenClient(
        "outputs-sent-twice",
        "Records every function_call_output twice.",
        # Every RES case but RES-2/3 checks that its call has exactly one output.
        {
            "RES-1",
            "RES-4",
            "RES-5",
            "RES-6",
            "RES-7",
            "RES-8",
            "RES-9",
            "RES-10",
            "RES-11",
            "RES-12",
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
]
