"""The model: the OpenAI Responses API over plain HTTP (`POST {base}/responses`).

Strategy: a non-streaming request per model turn, with the whole conversation as `input`
items (no `previous_response_id`, so a resumed session and a fresh one look the same to the
service), built-ins and MCP tools as function tools, and standing instructions. The reply
is reduced to what the loop needs: the items to keep in the history, the function calls
and the text. No retries at any layer (`retries=0`, never resent): a failed model request
is reported, and the user asks again. Secrets are removed by the caller before anything
reaches `respond`; this module only ever adds the bearer key, to this one URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from mcp_host_conformance.reference_client.transports.http import ssl_context

DEFAULT_MODEL = "gpt-4.1-mini"
REQUEST_TIMEOUT = 300.0  # seconds; a model may think for a while
MAX_REPLY_BYTES = 32 * 1024 * 1024


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


def error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
        message = body["error"]["message"]
        if not isinstance(message, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        message = ""
    message = message[:300]
    return f"the model service answered HTTP {response.status_code}" + (
        f": {message}" if message else ""
    )


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
        transport = httpx.AsyncHTTPTransport(
            verify=ssl_context(ca_file), retries=0, trust_env=False
        )
        self._client = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=30.0),
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
        headers = {"authorization": f"Bearer {self._key}", "accept": "application/json"}
        try:
            response = await self._client.post(self.url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise ModelError(f"cannot reach the model service ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise ModelError(error_message(response))
        if len(response.content) > MAX_REPLY_BYTES:
            raise ModelError("the model service sent an oversized response")
        try:
            return reply_from_body(response.json())
        except ValueError:
            raise ModelError("the model service sent a response that is not JSON") from None

    async def close(self) -> None:
        await self._client.aclose()
