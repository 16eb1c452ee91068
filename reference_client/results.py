"""A call's outcome as a result status and the output the model receives (RES-*).

Strategy: everything here is pure and total. The input comes from a server we do not
trust, so any shape (wrong types, non-list content, huge numbers, deep nesting) maps to
an `Outcome` rather than an exception: malformed results are `failed` with a message.
Binary data (images, audio, blobs) is replaced by a marker and never copied. Resource
links are listed, never opened. An uncertain outcome is `unknown`, with a text telling
the model the server may have acted and the call must not be retried automatically.

The 64 KiB limit (RES-10) has one implementation, `limited_text`: a result's output is cut
with it, and so is the function_call_output the model receives (`model_output`: a status
line, then the output), so neither can ever pass the limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeGuard, get_args

__all__ = [
    "ACK_PROMPT",
    "COMPLETED",
    "DENIED",
    "FAILED",
    "OUTPUT_LIMIT",
    "OUTPUT_LIMITED",
    "STATUSES",
    "STATUS_PREFIX",
    "TRUNCATION_MARKER",
    "UNKNOWN",
    "Outcome",
    "Status",
    "block_text",
    "denied",
    "from_call_result",
    "from_rpc_error",
    "is_status",
    "limited_text",
    "model_output",
    "render_content",
    "unknown",
]

Status = Literal["completed", "failed", "denied", "unknown", "output_limit"]
COMPLETED: Final = "completed"
FAILED: Final = "failed"
DENIED: Final = "denied"
UNKNOWN: Final = "unknown"
OUTPUT_LIMITED: Final = "output_limit"
STATUSES: tuple[Status, ...] = get_args(Status)
STATUS_PREFIX = "Status: "  # the first line of every output the model receives

OUTPUT_LIMIT = 64 * 1024
TRUNCATION_MARKER = "\n... [output truncated at 64 KiB]"

ACK_PROMPT = (
    "An earlier MCP call has an unknown outcome: it may already have run on the server. "
    "Acknowledge this and send your question? [y/N] "
)

_MAX_LABEL = 100  # a mime type or URI a server sends is shown at most this long


@dataclass(frozen=True)
class Outcome:
    status: Status
    output: str


def is_status(value: object) -> TypeGuard[Status]:
    return value in STATUSES


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _cut(text: str, limit: int) -> str:
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def limited_text(text: str) -> tuple[str, bool]:
    """`text` within the 64 KiB limit: as is, or its first part plus the truncation marker,
    at most OUTPUT_LIMIT bytes of UTF-8 in all (never cut inside a character). The flag
    says whether it was cut."""
    if _size(text) <= OUTPUT_LIMIT:
        return text, False
    body = text.removesuffix(TRUNCATION_MARKER)  # an output cut before is not marked twice
    return _cut(body, OUTPUT_LIMIT - _size(TRUNCATION_MARKER)) + TRUNCATION_MARKER, True


def _limited(status: Status, output: str) -> Outcome:
    text, cut = limited_text(output)
    # A failure stays a failure; its message is just shortened.
    return Outcome(OUTPUT_LIMITED if cut and status == COMPLETED else status, text)


def model_output(outcome: Outcome, note: str = "") -> str:
    """The function_call_output text the model receives: a status line, then the output,
    never over the 64 KiB limit. `note`, if given, is a line of the host's own between them
    (the untrusted marking of profile untrusted-marking), so truncation never removes it."""
    prefix = f"{STATUS_PREFIX}{outcome.status}\n" + (f"{note}\n" if note else "")
    text, _cut_off = limited_text(prefix + outcome.output)
    return text


def _label(value: Any, default: str) -> str:
    if not isinstance(value, str) or not value:
        return default
    text = json.dumps(value, ensure_ascii=False)[1:-1]  # escapes control characters
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 3] + "..."


class _Malformed(Exception):
    pass


def block_text(block: Any) -> tuple[str, bool]:
    """(text for one content block, whether it counts as text content)."""
    if not isinstance(block, dict):
        raise _Malformed("a content block is not a JSON object")
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise _Malformed("a text content block has no text")
        return text, True
    if kind in ("image", "audio"):
        return f"[{kind} omitted: {_label(block.get('mimeType'), 'unknown type')}]", False
    if kind == "resource_link":
        uri = _label(block.get("uri"), "no URI")
        name = block.get("name")
        named = f" ({_label(name, '')})" if isinstance(name, str) and name else ""
        return f"[resource link, not opened: {uri}{named}]", False
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            raise _Malformed("an embedded resource is not a JSON object")
        uri = _label(resource.get("uri"), "no URI")
        text = resource.get("text")
        if isinstance(text, str):
            return f"[resource {uri}]\n{text}", True
        mime = _label(resource.get("mimeType"), "unknown type")
        return f"[resource omitted: {uri} ({mime})]", False
    return f"[{_label(kind, 'untyped')} content omitted]", False


def render_content(result: dict[str, Any]) -> str:
    """The text of a CallToolResult's content blocks, in order (RES-1..RES-4)."""
    content = result.get("content", [])
    if content is None:
        content = []
    if not isinstance(content, list):
        raise _Malformed("its content is not a list")
    parts: list[str] = []
    has_text = False
    for block in content:
        text, is_text = block_text(block)
        parts.append(text)
        has_text = has_text or is_text
    structured = result.get("structuredContent")
    if not has_text and structured is not None:
        parts.append(
            json.dumps(structured, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        )
    return "\n".join(parts)


def from_call_result(result: Any) -> Outcome:
    """An MCP CallToolResult (as a dict) -> completed / failed / output_limit."""
    try:
        if not isinstance(result, dict):
            raise _Malformed("it is not a JSON object")
        is_error = result.get("isError", False)
        output = render_content(result)
        if is_error is True:
            return _limited(FAILED, output or "The server reported an error without a message.")
        return _limited(COMPLETED, output)
    except _Malformed as error:
        return Outcome(FAILED, f"The server returned a malformed tool result: {error}.")
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError):
        return Outcome(FAILED, "The server returned a tool result that cannot be read.")


def from_rpc_error(error: Any) -> Outcome:
    """A JSON-RPC error object -> failed, with the server's message."""
    try:
        message = error.get("message") if isinstance(error, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        if not isinstance(message, str) or not message:
            message = "no message"
        suffix = f" (code {code})" if isinstance(code, int) and abs(code) < 10**12 else ""
        return _limited(FAILED, f"The server reported an error: {message}{suffix}")
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError):
        return Outcome(FAILED, "The server reported an error that cannot be read.")


def unknown(reason: str) -> Outcome:
    return Outcome(
        UNKNOWN,
        f"The outcome of this call is unknown: {reason}. The server may have acted on it "
        "(the call may already have run). Do not retry this call automatically; ask the user.",
    )


def denied() -> Outcome:
    return Outcome(DENIED, "The user denied this call. Nothing was sent to the server.")
