"""The three APIs the mock model speaks, each a face of the one model.

Strategy: the model (the script, the autopilot, the bindings, the journal) is one; what
differs between the OpenAI Responses API, OpenAI Chat Completions and the Anthropic Messages
API is only how a request is authenticated and judged and how the model's plan and its
errors are written. A `Face` is exactly that, with no state: `refuse` (the key), `check`
(what the real service rejects), `error` (the API's error envelope), `reply` (a `Plan` as
that API's answer, whole or as its SSE stream, and the calls it made in the one journal
form `{"call_id", "name", "arguments"}`, arguments a JSON string). The service picks the
face by the path (`face_for`): `/v1/responses`, `/v1/chat/completions` and `/v1/messages`
(a query, such as the TypeScript SDK's `?beta=true`, is ignored); another path is answered
404 in the envelope of the API it looks like. Every error answer says `x-should-retry:
false`, which the official SDKs obey: a scripted error reaches the host once, and the next
request meets the next step, not a retry of this one.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from mcp_host_conformance.mocks.responses import wire, wire_chat, wire_messages
from mcp_host_conformance.mocks.responses.bodies import API, encode_input
from mcp_host_conformance.mocks.responses.script import Plan
from mcp_host_conformance.mocks.responses.wire import ApiError, new_id

JSON = {"content-type": "application/json"}
NO_RETRY = {"x-should-retry": "false"}
STREAM = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    events: list[bytes] | None = None  # SSE chunks, streamed in order

    @classmethod
    def json(cls, status: int, value: Any, headers: dict[str, str] | None = None) -> Answer:
        return cls(status, {**JSON, **(headers or {})}, json.dumps(value).encode())

    @classmethod
    def error(cls, err: ApiError) -> Answer:
        """An OpenAI error (Responses, Chat Completions, the admin endpoints)."""
        return cls.json(err.status, err.envelope(), NO_RETRY)

    def content(self) -> bytes:
        return b"".join(self.events) if self.events is not None else self.body


@dataclass
class Reply:
    answer: Answer
    calls: list[dict[str, Any]]  # the calls the reply made, as journalled
    stored: tuple[str, list[str]] | None = None  # Responses: response id, its call ids


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "")
    return value[7:].strip() or None if value.startswith("Bearer ") else None


def _same(sent: str, key: str) -> bool:
    return secrets.compare_digest(sent.encode(), key.encode())


class Face:
    """One API's way of authenticating, judging and answering (see the module's strategy)."""

    api: API

    def refuse(self, headers: dict[str, str], key: str) -> ApiError | None:
        raise NotImplementedError

    def check(
        self, body: Any, headers: dict[str, str], stored: dict[str, list[str]]
    ) -> ApiError | None:
        raise NotImplementedError

    def error(self, err: ApiError) -> Answer:
        raise NotImplementedError

    def scripted_error(self, status: int, message: str) -> ApiError:
        raise NotImplementedError

    def not_found(self, method: str, path: str) -> ApiError:
        raise NotImplementedError

    def bad_json(self, reason: str) -> ApiError:
        raise NotImplementedError

    def reply(self, body: dict[str, Any], plan: Plan) -> Reply:
        raise NotImplementedError


class _OpenAI(Face):
    """What the two OpenAI APIs share: the bearer key and the error envelope."""

    def refuse(self, headers: dict[str, str], key: str) -> ApiError | None:
        sent = _bearer(headers)
        if sent is None:
            return wire.missing_key()
        return None if _same(sent, key) else wire.wrong_key()

    def error(self, err: ApiError) -> Answer:
        return Answer.error(err)

    def scripted_error(self, status: int, message: str) -> ApiError:
        return wire.error_for_status(status, message)

    def not_found(self, method: str, path: str) -> ApiError:
        return wire.not_found(method, path[:200])

    def bad_json(self, reason: str) -> ApiError:
        return wire.bad_json(reason)


class ResponsesFace(_OpenAI):
    api: API = "responses"

    def check(
        self, body: Any, headers: dict[str, str], stored: dict[str, list[str]]
    ) -> ApiError | None:
        return wire.check_request(body, stored)

    def reply(self, body: dict[str, Any], plan: Plan) -> Reply:
        output = [wire.function_call_item(name, args, ns) for name, args, ns in plan.calls]
        calls: list[dict[str, Any]] = [
            {k: i[k] for k in ("call_id", "name", "arguments", "namespace") if k in i}
            for i in output
        ]
        if plan.text is not None:
            output.append(wire.message_item(plan.text))
        response = wire.response_object(body, output)
        stored = None
        if body.get("store", True) is not False:
            stored = (response["id"], [c["call_id"] for c in calls])
        if body.get("stream") is True:
            events = [wire.sse_encode(e) for e in wire.stream_events(response)]
            headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
            return Reply(Answer(200, headers, events=events), calls, stored)
        return Reply(Answer.json(200, response), calls, stored)


class ChatFace(_OpenAI):
    api: API = "chat"

    def check(
        self, body: Any, headers: dict[str, str], stored: dict[str, list[str]]
    ) -> ApiError | None:
        return wire_chat.check_request(body)

    def reply(self, body: dict[str, Any], plan: Plan) -> Reply:
        calls = [
            {"call_id": new_id("call"), "name": name, "arguments": args}
            for name, args, _ in plan.calls
        ]
        done = wire_chat.completion(body, calls, plan.text)
        if body.get("stream") is True:
            options = body.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage") is True
            events = [wire_chat.sse_encode(c) for c in wire_chat.stream_chunks(done, usage)]
            return Reply(Answer(200, dict(STREAM), events=[*events, wire_chat.DONE]), calls)
        return Reply(Answer.json(200, done), calls)


class MessagesFace(Face):
    """Anthropic: `x-api-key` or a bearer key, a required `anthropic-version` (any value),
    a `request-id` on every answer."""

    api: API = "messages"

    def refuse(self, headers: dict[str, str], key: str) -> ApiError | None:
        sent = headers.get("x-api-key", "").strip()
        if sent:
            return None if _same(sent, key) else wire_messages.wrong_key(bearer=False)
        bearer = _bearer(headers)
        if bearer is None:
            return wire_messages.missing_key()
        return None if _same(bearer, key) else wire_messages.wrong_key(bearer=True)

    def check(
        self, body: Any, headers: dict[str, str], stored: dict[str, list[str]]
    ) -> ApiError | None:
        if not headers.get("anthropic-version", "").strip():
            return wire_messages.missing_version()
        return wire_messages.check_request(body)

    def error(self, err: ApiError) -> Answer:
        request_id = new_id("req")
        envelope = wire_messages.envelope(err, request_id)
        return Answer.json(err.status, envelope, {**NO_RETRY, "request-id": request_id})

    def scripted_error(self, status: int, message: str) -> ApiError:
        return wire_messages.error(status, message)

    def not_found(self, method: str, path: str) -> ApiError:
        return wire_messages.not_found(method, path)

    def bad_json(self, reason: str) -> ApiError:
        return wire_messages.bad_json(reason)

    def reply(self, body: dict[str, Any], plan: Plan) -> Reply:
        made = [
            {"call_id": new_id("toolu"), "name": name, "input": wire_messages.tool_input(args)}
            for name, args, _ in plan.calls
        ]
        calls = [
            {"call_id": c["call_id"], "name": c["name"], "arguments": encode_input(c["input"])}
            for c in made
        ]
        done = wire_messages.message(body, wire_messages.content_blocks(made, plan.text))
        headers = {"request-id": new_id("req")}
        if body.get("stream") is True:
            events = [wire_messages.sse_encode(e) for e in wire_messages.stream_events(done)]
            return Reply(Answer(200, {**STREAM, **headers}, events=events), calls)
        return Reply(Answer.json(200, done, headers), calls)


RESPONSES = ResponsesFace()
CHAT = ChatFace()
MESSAGES = MessagesFace()
ENDPOINTS: dict[str, Face] = {
    "/v1/responses": RESPONSES,
    "/v1/chat/completions": CHAT,
    "/v1/messages": MESSAGES,
}


def face_for(path: str, headers: dict[str, str]) -> tuple[Face, bool]:
    """The face answering `path` (without its query), and whether the path is its endpoint.
    Another path gets the face it looks like: Anthropic's for a path under `/v1/messages` or
    `/v1/v1/` (an Anthropic base URL given with `/v1`) or a request with an Anthropic header,
    OpenAI's otherwise."""
    face = ENDPOINTS.get(path)
    if face is not None:
        return face, True
    anthropic = path.startswith(("/v1/messages", "/v1/v1/")) or any(
        h in headers for h in ("x-api-key", "anthropic-version")
    )
    return (MESSAGES if anthropic else RESPONSES), False
