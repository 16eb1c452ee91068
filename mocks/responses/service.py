"""The mock model service's request handling, independent of any transport.

Strategy: one `handle(method, target, headers, raw_body)` turns a request into an `Answer`
(status, headers, a body or a list of SSE chunks). The HTTP server and the respx router
both call it, so an in-process client and an out-of-process one meet the same model. The
model is one whichever API a host speaks: the face the path names (`faces`: Responses,
Chat Completions or Anthropic Messages) authenticates and judges the request and writes
the answer, while the step, the autopilot and the bindings are planned here, once, from
the request read in the common shape (`bodies.as_responses`). Every request is journalled
whole (headers, parsed body, `extra["api"]`) before it is judged, and the calls a reply
makes on the same entry (`extra["reply_calls"]`). State is small and guarded by one lock:
the script (None = autopilot), the tools the autopilot already called, and the call_ids of
stored Responses (for `previous_response_id`). A rejected request never consumes a script
step: the real model never saw it.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from typing import Any

from mcp_host_conformance.mocks.admin import admin_answer
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.json_input import JsonInputError, read_json
from mcp_host_conformance.mocks.responses import wire
from mcp_host_conformance.mocks.responses.bodies import APIS, as_responses, tool_outputs
from mcp_host_conformance.mocks.responses.faces import Answer, face_for
from mcp_host_conformance.mocks.responses.script import (
    Plan,
    Step,
    plan_autopilot,
    plan_reply,
    reads_as_error,
    script_from_json,
)
from mcp_host_conformance.mocks.spec import tool_marker

__all__ = ["Answer", "ResponsesService"]


class ResponsesService:
    """The mock model: one script, one journal, three APIs (see the module's strategy)."""

    def __init__(self, api_key: str | None = None, journal: Journal | None = None) -> None:
        self.api_key = api_key or "sk-mock-" + secrets.token_hex(16)
        self.journal = journal if journal is not None else Journal()
        self._lock = threading.Lock()
        self._script: list[Step] | None = None
        self._called: set[str] = set()
        self._stored_calls: dict[str, list[str]] = {}
        self._bindings: dict[str, str] = {}
        # the calls of the last reply whose step retries on error: (call_id, the call)
        self._to_retry: list[tuple[str, tuple[str, str, str | None]]] = []

    # state ---------------------------------------------------------------------------
    def script(self, steps: Iterable[Step | dict[str, Any]] | None) -> None:
        """Set the replies, one per model request; None switches back to the autopilot."""
        if steps is None:
            new = None
        else:
            new = [
                s if isinstance(s, Step) else Step.from_json(s, f"script[{i}]")
                for i, s in enumerate(steps)
            ]
        with self._lock:
            self._script = new

    def bind(self, server: str, marker_token: str) -> None:
        """Tell the model that the host knows the mock with this marker token as `server`
        (the name it was configured under), so `Step.call(server=, tool=)` finds its tools
        by their markers."""
        with self._lock:
            self._bindings[server] = marker_token

    def marker_for(self, server: str, tool: str) -> str | None:
        with self._lock:
            token = self._bindings.get(server)
        return None if token is None else tool_marker(token, tool)

    def reset(self) -> None:
        with self._lock:
            self._script = None
            self._called.clear()
            self._stored_calls.clear()
            self._bindings.clear()
            self._to_retry.clear()
        self.journal.clear()

    def requests(self) -> list[Any]:
        """The parsed bodies of every request POSTed to a model endpoint (`/v1/responses`,
        `/v1/chat/completions`, `/v1/messages`), in order, as sent."""
        return [
            e.extra.get("body")
            for e in self.journal.entries(kind="http")
            if e.http_method == "POST" and e.extra.get("api") in APIS
        ]

    # handling ------------------------------------------------------------------------
    def handle(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        raw: bytes,
        connection: str | None = None,
    ) -> Answer:
        path, _, query = target.partition("?")
        admin = admin_answer(method, path, self.journal, self.reset)
        if admin is not None:
            return Answer(admin.status, dict(admin.headers), admin.body)
        if path == "/__script":
            return self._script_endpoint(method, raw)
        if path == "/__servers":
            return self._servers_endpoint(method, raw)
        face, endpoint = face_for(path, headers)
        body, unreadable = _parse(raw)
        extra: dict[str, Any] = {"body": body}
        if endpoint:
            extra["api"] = face.api
        if query:
            extra["query"] = query[:1000]
        if unreadable is not None:
            extra["raw"] = raw[:200].decode("utf-8", "replace")
            extra["error"] = unreadable
        self.journal.record(
            Entry(
                kind="http",
                http_method=method,
                path=path,
                headers=dict(headers),
                body_size=len(raw),
                connection=connection,
                extra=extra,
            )
        )
        problem = face.refuse(headers, self.api_key)
        if problem:
            return face.error(problem)
        if not (method == "POST" and endpoint):
            return face.error(face.not_found(method, path))
        if unreadable is not None:
            return face.error(face.bad_json(unreadable))
        with self._lock:
            stored = dict(self._stored_calls)
        problem = face.check(body, headers, stored)
        if problem:
            # What the real service would have refused, on the request's own entry: a case
            # tells a host the service refuses from a host the case caught.
            extra["refused"] = {
                "status": problem.status,
                "param": problem.param,
                "message": problem.message[:1000],
            }
            return face.error(problem)
        plan = self._next_plan(as_responses(body, face.api))
        if plan.problems:
            self.journal.record(
                Entry(kind="event", extra={"event": "unmatched-call", "problems": plan.problems})
            )
        if plan.error_status is not None:
            return face.error(face.scripted_error(plan.error_status, plan.error_message))
        reply = face.reply(body, plan)
        # The calls this reply makes, on the request's own entry: cases pair them with the
        # outputs of the next request (RES-11) even when a client does not replay them.
        extra["reply_calls"] = reply.calls
        if plan.retry_on_error:
            with self._lock:
                self._to_retry = [
                    (str(made["call_id"]), call)
                    for made, call in zip(reply.calls, plan.calls, strict=True)
                ]
        if reply.stored is not None:
            with self._lock:
                self._stored_calls[reply.stored[0]] = reply.stored[1]
        return reply.answer

    def _next_plan(self, body: dict[str, Any]) -> Plan:
        with self._lock:
            pending, self._to_retry = self._to_retry, []
        if pending:
            # a model told its call failed calls it again, once (an invited retry)
            outputs = tool_outputs(body)
            again = [call for call_id, call in pending if reads_as_error(outputs.get(call_id))]
            if again:
                self.journal.record(
                    Entry(
                        kind="event",
                        extra={"event": "invited-retry", "calls": [name for name, _, _ in again]},
                    )
                )
                return Plan(calls=again)
        with self._lock:
            if self._script is None:
                plan = plan_autopilot(body, self._called)
                self._called.update(name for name, _, _ in plan.calls)
                return plan
            if not self._script:
                return Plan(text="done")
            step = self._script[0] if self._script[0].repeat else self._script.pop(0)
            bindings = dict(self._bindings)
        return plan_reply(step, body, bindings)

    def _script_endpoint(self, method: str, raw: bytes) -> Answer:
        """`POST /__script`: a JSON list of steps (or null for the autopilot)."""
        if method != "POST":
            return Answer(405, {"allow": "POST"})
        data, problem = _parse(raw)
        try:
            if problem is not None:
                raise ValueError(f"body is not JSON: {problem}")
            steps = None if data is None else script_from_json(data)
        except ValueError as exc:
            return Answer.error(wire.ApiError(400, str(exc)))
        self.script(steps)
        return Answer.json(200, {"steps": 0 if steps is None else len(steps)})

    def _servers_endpoint(self, method: str, raw: bytes) -> Answer:
        """`POST /__servers`: {"configured server name": "mock marker token", ...}."""
        if method != "POST":
            return Answer(405, {"allow": "POST"})
        data, problem = _parse(raw)
        if (
            problem is not None
            or not isinstance(data, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items())
        ):
            return Answer.error(wire.ApiError(400, 'expected {"server name": "marker token", ...}'))
        for server, token in data.items():
            self.bind(server, token)
        return Answer.json(200, {"servers": len(data)})


def _parse(raw: bytes) -> tuple[Any, str | None]:
    """(the JSON value, None), or (None, why it is not JSON the mock takes)."""
    if not raw:
        return None, "empty body"
    try:
        return read_json(raw), None
    except JsonInputError as exc:
        return None, str(exc)
