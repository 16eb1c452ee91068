"""The monitor of what reaches the person's terminal: server text with its control
characters neutralized (HARD-1).

Strategy: a host may color its own output, so a control character in what the user saw is
no finding by itself. Text that came from a server is: every string a mock served (names,
descriptions, results, error messages, instructions) that holds a control character gives
a window around it (a few of the server's characters on each side); such a window in what
the user saw is the server's control text, raw.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.harness.verdicts.safe_text import visible

CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
AROUND = 3  # of the server's own characters on each side of the control character


def _served_strings(observed: Observed) -> Iterator[str]:
    for served in observed.served:
        spec = served.mock.spec
        yield spec.name
        yield spec.description
        if spec.instructions:
            yield spec.instructions
        yield spec.misbehaviour.fail_message
        for tool in served.tools():
            yield tool.name
            yield tool.description
            reply = tool.reply
            for block in reply.content:
                for value in block.values():
                    if isinstance(value, str):
                        yield value
            if reply.jsonrpc_error:
                yield str(reply.jsonrpc_error.get("message", ""))


def windows(text: str) -> set[str]:
    """Each control character of `text` with up to AROUND characters on each side."""
    found = set()
    for match in CONTROLS.finditer(text):
        start, end = max(0, match.start() - AROUND), min(len(text), match.end() + AROUND)
        window = text[start:end]
        if len(window) > 1:  # a control character alone could be the host's own
            found.add(window)
    return found


@monitor(
    "server-text-neutralized",
    "HARD-1",
    "no control character a server sent reached what the user saw as such (with the "
    "server's characters around it)",
)
def server_text_neutralized(self: Monitor, observed: Observed) -> Iterator[Finding]:
    hostile = set()
    for text in _served_strings(observed):
        if text and CONTROLS.search(text):
            hostile |= windows(text)
    if not hostile:
        return
    seen = "\n".join(observed.seen)
    raw = sorted(w for w in hostile if w in seen)
    if raw:
        yield self.finding(
            "HARD-1",
            "server text is shown with terminal control characters neutralized",
            f"shown raw: {', '.join(visible(w) for w in raw[:4])}",
        )
