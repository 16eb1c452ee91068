"""The model: the OpenAI Responses API over plain HTTP (`POST {base}/responses`).

Strategy: a non-streaming request per model turn, with the whole conversation as `input`
items (no `previous_response_id`, so a resumed session and a fresh one look the same to the
service), built-ins and MCP tools as function tools, and standing instructions. The reply
is reduced to what the loop needs: the items to keep in the history, the function calls
and the text. No retries at any layer (`retries=0`, never resent): a failed model request
is reported, and the user asks again. Secrets are removed by the caller before anything
reaches `respond`; this module only ever adds the bearer key, to this one URL.

The reply is untrusted input: it is read as a stream and abandoned past MAX_REPLY_BYTES
(also when it announces more), uncompressed (`Accept-Encoding: identity`), and decoded by
`untrusted_json`. A service that streams anyway (`text/event-stream`, as a proxy may) is
read as Responses streaming events: the `response.completed` event's response is the
reply, and an error event is the request's error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from mcp_host_conformance.reference_client import untrusted_json
from mcp_host_conformance.reference_client.transports import MessageTooLarge
from mcp_host_conformance.reference_client.transports.http import (
    NoCookies,
    http_transport,
    trust_ready,
)
from mcp_host_conformance.reference_client.transports.sse import SseParser

DEFAULT_MODEL = "gpt-4.1-mini"
REQUEST_TIMEOUT = 300.0  # seconds; a model may think for a while
MAX_REPLY_BYTES = 32 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024  # of an error body, read for its message only


class ModelError(Exception):
    """The model request failed; the text is safe to show (no key in it)."""


@dataclass
class ModelReply:
    items: list[dict[str, Any]] = field(default_factory=list)  # to append to the history
    calls: list[dict[str, Any]] = field(default_factory=list)  # the function_call items
    text: str = ""  # the assistant's text, all message parts joined


def history_item(output: Any) -> dict[str, Any] | None:
    """An output item in the form it is sent back as input, or None to drop it (pure)."""
    if not isinstance(output, dict):
        return None
    kind = output.get("type")
    if kind == "function_call":
        call_id, name, arguments = (
            output.get("call_id"),
            output.get("name"),
            output.get("arguments"),
        )
        if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(arguments, str)):
            raise ModelError("the model service sent a malformed function call")
        return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    if kind == "message" and output.get("role", "assistant") == "assistant":
        parts = output.get("content")
        texts = [
            p["text"]
            for p in (parts if isinstance(parts, list) else [])
            if isinstance(p, dict)
            and p.get("type") == "output_text"
            and isinstance(p.get("text"), str)
        ]
        content = [{"type": "output_text", "text": t} for t in texts]
        return {"type": "message", "role": "assistant", "content": content}
    return None  # reasoning and other items are not needed to continue


def reply_from_body(body: Any) -> ModelReply:
    """The useful part of a Responses API response object (pure)."""
    if not isinstance(body, dict) or not isinstance(body.get("output"), list):
        raise ModelError("the model service sent a response without output")
    reply = ModelReply()
    texts: list[str] = []
    for output in body["output"]:
        item = history_item(output)
        if item is None:
            continue
        reply.items.append(item)
        if item["type"] == "function_call":
            reply.calls.append(item)
        else:
            texts.extend(part["text"] for part in item["content"])
    reply.text = "\n".join(t for t in texts if t)
    return reply


def error_message(status: int, body: bytes) -> str:
    """What a failed model request says, from its status and (the start of) its body."""
    try:
        message = untrusted_json.decode(body)["error"]["message"]
        if not isinstance(message, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        message = ""
    message = message[:300]
    return f"the model service answered HTTP {status}" + (f": {message}" if message else "")


def reply_from_events(data: bytes) -> ModelReply:
    """The reply in a Responses event stream: its `response.completed` response (pure)."""
    parser = SseParser(limit=MAX_REPLY_BYTES)
    try:
        events = parser.feed(data) + parser.feed(b"\n\n")  # a last event without its blank line
    except MessageTooLarge:
        raise ModelError("the model service sent an event over the size limit") from None
    for event in events:
        if not event.data.strip() or event.data.strip() == b"[DONE]":
            continue
        try:
            value = untrusted_json.decode(event.data)
        except untrusted_json.UntrustedJsonError as exc:
            raise ModelError(
                f"the model service sent an event that is not usable ({exc})"
            ) from None
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "response.completed":
            return reply_from_body(value.get("response"))
        if kind in ("error", "response.failed", "response.incomplete"):
            raise ModelError(f"the model service reported {kind} while streaming")
    raise ModelError("the model service's event stream ended without a completed response")


class ModelClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        model: str = DEFAULT_MODEL,
        ca_file: Path | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/responses"
        self.model = model
        self._key = api_key
        trust_ready(base_url, ca_file)
        self._client = httpx.AsyncClient(
            transport=http_transport(ca_file),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=30.0),
            cookies=NoCookies(),
        )

    def request_body(
        self,
        input_items: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        instructions: str,
        tool_choice: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "instructions": instructions,
            "input": input_items,
            "tools": tools,
            "store": False,
        }
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        return body

    async def respond(
        self,
        input_items: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        instructions: str,
        tool_choice: str | None = None,
    ) -> ModelReply:
        body = self.request_body(input_items, tools, instructions, tool_choice)
        headers = {
            "authorization": f"Bearer {self._key}",
            "accept": "application/json",
            "accept-encoding": "identity",
        }
        request = self._client.build_request("POST", self.url, json=body, headers=headers)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise ModelError(f"cannot reach the model service ({type(exc).__name__})") from None
        try:
            if response.status_code != 200:
                error_body = await _read_capped(response, MAX_ERROR_BYTES, truncate=True)
                raise ModelError(error_message(response.status_code, error_body))
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise ModelError("the model service sent a compressed response")
            data = await _read_capped(response, MAX_REPLY_BYTES)
        except httpx.HTTPError as exc:
            raise ModelError(
                f"the connection to the model service was lost ({type(exc).__name__})"
            ) from None
        finally:
            await response.aclose()
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "text/event-stream":
            return reply_from_events(data)
        try:
            return reply_from_body(untrusted_json.decode(data))
        except untrusted_json.UntrustedJsonError as exc:
            raise ModelError(
                f"the model service sent a response that is not usable ({exc})"
            ) from None

    async def close(self) -> None:
        await self._client.aclose()


async def _read_capped(response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
    """The body, read chunk by chunk: past `limit` bytes it is abandoned (ModelError), or
    with `truncate` its first `limit` bytes are kept and the rest is not read."""
    length = response.headers.get("content-length", "")
    if not truncate and length.isdigit() and int(length) > limit:
        raise ModelError(f"the model service sent a response over {limit // (1024 * 1024)} MiB")
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_raw():
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            if truncate:
                return b"".join(chunks)[:limit]
            raise ModelError(f"the model service sent a response over {limit // (1024 * 1024)} MiB")
    return b"".join(chunks)
