"""Reading a server's status after a start, for the DISC cases (connection and limits).

Strategy: whether a server "registered" is read from its status record (the adapter's
translation of what the host showed); the wording of a status line is judged only under the
rule that states it (DISC-1's `MCP server NAME: N tools from DESTINATION`, accepting `1 tool`
and `1 tools`; DISC-3's `MCP server NAME unavailable: REASON`), never under another rule.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from mcp_host_conformance.harness.cases.hostrun import Running
from mcp_host_conformance.harness.contract.adapter import ServerStatus
from mcp_host_conformance.harness.verdicts.outcomes import check

__all__ = [
    "describe_status",
    "expect_available",
    "expect_unavailable",
    "stdio_destinations",
    "tools_line_pattern",
]


def describe_status(status: ServerStatus | None) -> str:
    if status is None:
        return "no status reported"
    if status.connected:
        return f"connected with {status.tools} tools ({status.line!r})"
    return f"unavailable: {status.reason!r}"


def expect_available(
    running: Running, name: str, ids: str, why: str, tools: int | None = None
) -> None:
    status = running.status(name)
    ok = status is not None and status.connected and (tools is None or status.tools == tools)
    want = f"server {name} ({why}) connected" + (
        f" with {tools} tools" if tools is not None else ""
    )
    check(ok, ids=ids, expected=want, actual=describe_status(status))


def expect_unavailable(running: Running, name: str, ids: str, why: str) -> None:
    status = running.status(name)
    ok = status is not None and not status.connected and bool(status.reason)
    check(
        ok,
        ids=ids,
        expected=f"server {name} ({why}) reported unavailable with a reason",
        actual=describe_status(status),
    )
    # The line's wording is DISC-3's rule (the one that states it); any other rule is judged
    # on the substance: the server reported unavailable, with a reason.
    if ids == "DISC-3":
        line = f"MCP server {name} unavailable: "
        check(
            line in running.text,
            ids=ids,
            expected=f"a status line starting {line!r}",
            actual=f"start showed: {running.text[-400:]!r}",
        )


def tools_line_pattern(name: str, tools: int, destinations: Sequence[str]) -> re.Pattern[str]:
    """`MCP server NAME: N tools from DESTINATION` (also `1 tool`), DESTINATION one of
    `destinations` (a URL, or a stdio command in one of the forms a person would read)."""
    noun = "tools?" if tools == 1 else "tools"
    where = "|".join(re.escape(d) for d in destinations)
    return re.compile(rf"MCP server {re.escape(name)}: {tools} {noun} from (?:{where})")


def stdio_destinations(command: Sequence[str]) -> list[str]:
    """How a stdio command may be shown as a destination: the command line (quoted as a
    shell would, or joined plainly), or the command alone."""
    return [shlex.join(command), " ".join(command), shlex.quote(command[0]), command[0]]
