"""The mocks' two admin endpoints, in one place: `GET /__journal` and `POST /__reset`.

Strategy: every HTTP mock (the socket-level MCP mock, the SDK-served one, the Responses
service) answers these the same way, so a person or a script reading several mocks needs
one rule: the journal is a JSON list of entries, and a reset answers 204 with no body.
Admin requests are not journalled (reading the journal must not change it). Any other
method on these paths gets 405 with an `allow` header.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp_host_conformance.mocks.journal import Journal

JOURNAL_PATH = "/__journal"
RESET_PATH = "/__reset"
ADMIN_PATHS = (JOURNAL_PATH, RESET_PATH)


@dataclass(frozen=True)
class AdminAnswer:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def admin_answer(
    method: str, path: str, journal: Journal, reset: Callable[[], None] | None = None
) -> AdminAnswer | None:
    """The answer to an admin request, or None if `path` is not an admin path.

    `reset` is what a reset does (default: clear the journal)."""
    path = path.split("?", 1)[0]
    if path == JOURNAL_PATH:
        if method != "GET":
            return AdminAnswer(405, headers=[("allow", "GET")])
        body = json.dumps(journal.to_json()).encode()
        return AdminAnswer(200, body, [("content-type", "application/json")])
    if path == RESET_PATH:
        if method != "POST":
            return AdminAnswer(405, headers=[("allow", "POST")])
        (reset or journal.clear)()
        return AdminAnswer(204)
    return None
