"""The catalogue of dimensions the explorer visits, and the count of each value's visits.

Every dimension is a question a host could branch on (how many servers, over what, how
their tools look, how a call ends, what the person answers, ...); every value is one
answer the explorer can generate (`generate`) and a scenario then visits (`Scenario.visits`).
docs/explorer.md is generated from this table (scripts/explorer_table.py) and a test
checks that every value is reached within a small budget.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DIMENSIONS", "Dimension", "Visits", "dimension"]


@dataclass(frozen=True)
class Dimension:
    name: str
    about: str  # one line: what a host could branch on
    values: tuple[str, ...]


DIMENSIONS: tuple[Dimension, ...] = (
    # -- servers and their configuration --
    Dimension("servers", "how many servers are configured", ("1", "2", "3", "4")),
    Dimension("transport", "how a server is reached", ("http", "https", "stdio")),
    Dimension(
        "address",
        "how a plain-HTTP server's URL names the loopback host (all of 127.0.0.0/8, `::1` and "
        "`localhost` are loopback)",
        ("127.0.0.1", "localhost", "127.0.0.2", "[::1]"),
    ),
    Dimension(
        "http-answers",
        "how a Streamable HTTP server frames its answers",
        ("sse", "json", "json-chunked", "sse-whole"),
    ),
    Dimension("credential", "the secret a server is configured with", ("none", "header", "env")),
    Dimension(
        "stdio-arguments",
        "the arguments a stdio server is configured with",
        ("none", "shell-characters"),
    ),
    Dimension(
        "secret-shape",
        "the characters of a secret",
        ("plain", "url-and-json-special"),
    ),
    Dimension(
        "server-name",
        "the name a server is configured under",
        ("plain", "mixed-case-digits", "dashes-underscores", "long"),
    ),
    Dimension(
        "calls-itself",
        "the name a server gives itself in initialize",
        ("its-configured-name", "another-name", "another-server's-name"),
    ),
    Dimension(
        "connecting",
        "when the servers answer initialize: at once, or each only once every server of the "
        "scenario has been contacted (a host that waits for one server's answer before "
        "contacting the next is never answered by the first)",
        ("at-once", "once-every-server-is-contacted"),
    ),
    Dimension(
        "tool-review",
        "what the person answers in a pinning host's tool review after each start: yes to "
        "every tool each time, or yes at the first start only (a tool changed or new since "
        "stays disabled; PIN-1's and PIN-2's monitors see whether it is called anyway)",
        ("approve-every-time", "approve-at-the-first-start-only"),
    ),
    Dimension(
        "private-address",
        "whether the host is also configured with a server whose HTTPS URL reaches a private "
        "address (in the run's sealed network, where those addresses are this machine's "
        "own): the address itself, a name that resolves to it, or a name whose DNS answer is "
        "a public address first and the private one next (PRIV-1)",
        ("none", "literal", "a-name", "a-rebinding-name"),
    ),
    Dimension(
        "first-sync",
        "how a server meets a host that connects it when it is added (`verified-add`): "
        "healthy, misbehaving only once it was saved (so that the scenario has its servers), "
        "or as it is, so that a server that fails at connect fails the first sync and must "
        "not be saved (SYNC-1)",
        ("while-healthy", "as-it-is"),
    ),
    Dimension(
        "stdio-ending",
        "how a stdio server ends when its host stops it",
        (
            "at-end-of-input",
            "lingers",
            "ignores-sigterm",
            "spawns-a-child",
            "daemonizes",
        ),
    ),
    # -- tool lists --
    Dimension("tool-count", "how many tools a server lists", ("1", "several", "128", "129")),
    Dimension(
        "pages",
        "over how many tools/list pages",
        ("one", "several", "16", "17"),
    ),
    Dimension(
        "definitions",
        "how large a server's tool definitions are in all (names, descriptions, schemas, as "
        "DISC-9 measures them): as its tools make them, or its plain tools' descriptions grown "
        "to 63 KiB or 65 KiB in all, a KiB either side of the 64 KiB limit",
        ("as-planned", "63-kib", "65-kib"),
    ),
    Dimension("description", "a tool's description", ("short", "8-kib", "empty", "non-ascii")),
    Dimension(
        "schema",
        "a tool's inputSchema",
        (
            "default",
            "nested-with-ref",
            "closed-with-a-default",
            "15-kib",
            "17-kib",
            "not-an-object",
        ),
    ),
    Dimension(
        "tool-name",
        "a tool's name",
        ("plain", "shared-by-two-servers", "awkward", "65-characters", "an-exposed-name"),
    ),
    Dimension(
        "annotations",
        "a tool's annotations",
        ("none", "read-only", "not-destructive", "idempotent", "all-hints"),
    ),
    Dimension(
        "tools-change",
        "whether a server's tools change during the session: after its first answered call "
        "every tool's description (`after-the-first-call`), input schema (one more argument) "
        "or `readOnlyHint` changes, its first tool disappears, or its last planned tool "
        "appears (a server of one tool has none to add); or every input schema is listed with "
        "its members in another order, which is no change (the same canonical JSON)",
        (
            "never",
            "after-the-first-call",
            "its-schema-after-the-first-call",
            "its-annotations-after-the-first-call",
            "its-schema-reordered-after-the-first-call",
            "a-tool-disappears",
            "a-tool-appears",
        ),
    ),
    # -- how a call ends --
    Dimension(
        "reply",
        "what a tool answers",
        (
            "text",
            "echo",
            "structured",
            "structured-only",
            "image",
            "resource-link",
            "tool-error",
            "json-rpc-error",
            "over-64-kib",
            "echoes-its-secret",
            "control-characters",
            "non-ascii-text",
            "resource-blob",
        ),
    ),
    Dimension(
        "timing",
        "when a call's answer comes",
        ("at-once", "slow", "silent", "slow-with-progress"),
    ),
    Dimension(
        "failure",
        "what goes wrong at a server, or strains it (`under-1-mib-...`: an answer of 1,040,000 "
        "bytes, more than a megabyte and less than NET-4's 1 MiB, which must come through)",
        (
            "none",
            "http-500-at-call",
            "http-404-at-call",
            "session-lost-at-call",
            "reset-after-call",
            "close-after-call",
            "garbage-at-call",
            "over-1-mib-at-call",
            "over-1-mib-at-list",
            "under-1-mib-at-call",
            "under-1-mib-at-list",
            "polled-call",
            "refused-resume",
            "stdio-exits-at-call",
            "initialize-error",
            "initialize-stalls",
            "initialize-late",
            "discovery-late",
            "http-500-at-connect",
            "rejects-401",
            "redirects",
            "untrusted-certificate",
            "certificate-for-another-host",
            "expired-certificate",
            "stderr-flood",
            "exits-at-once",
        ),
    ),
    # -- model turns --
    Dimension(
        "model-turn",
        "what the model asks for in a turn",
        (
            "no-call",
            "one-call",
            "parallel-calls",
            "calls-in-sequence",
            "a-tool-never-offered",
            "seventeen-calls",
            "the-same-call-twice",
            "keeps-calling",
        ),
    ),
    Dimension(
        "arguments",
        "the arguments of a call",
        (
            "from-the-schema",
            "an-extra-field",
            "a-wrong-type",
            "over-2-kib",
            "over-2-kib-multi-byte",
            "not-json",
        ),
    ),
    # -- the person --
    Dimension(
        "answer",
        "what the person answers at a confirmation",
        (
            "y",
            "yes",
            "Y",
            "n",
            "empty",
            "spaces",
            "yes please",
            "ok",
            "1",
            "cyrillic-u",
        ),
    ),
    Dimension(
        "answer-sequence",
        "how the person answers the confirmations of one turn of several calls",
        ("one-by-one", "yes-to-every-call"),
    ),
    Dimension(
        "acknowledgement",
        "what the person answers when asked to acknowledge an unknown outcome",
        ("accept", "decline-then-accept"),
    ),
    Dimension(
        "session",
        "what happens to the session between turns",
        (
            "continues",
            "restarted-and-resumed",
            "restarted-fresh",
            "server-removed-then-resumed",
            "listed",
        ),
    ),
    # -- the host's environment --
    Dimension(
        "configuration",
        "what the host's own configuration holds when it first starts",
        ("the-servers", "none-configured", "all-removed"),
    ),
    Dimension("umask", "the file-creation mask the host starts with", ("022", "077", "000")),
    Dimension("locale", "the locale variables the host starts with", ("inherited", "C", "tr_TR")),
)

_BY_NAME = {d.name: d for d in DIMENSIONS}


def dimension(name: str) -> Dimension:
    return _BY_NAME[name]


class Visits(Counter[tuple[str, str]]):
    """How often each (dimension, value) was visited."""

    def add(self, visited: Iterable[tuple[str, str]]) -> None:
        # a scenario visits a value once however many times it holds it
        self.update(set(visited))

    def count(self, name: str, value: str) -> int:
        return self[(name, value)]

    def unvisited(self) -> list[tuple[str, str]]:
        return [(d.name, v) for d in DIMENSIONS for v in d.values if not self[(d.name, v)]]

    def table(self) -> list[tuple[str, list[tuple[str, int]]]]:
        return [(d.name, [(v, self[(d.name, v)]) for v in d.values]) for d in DIMENSIONS]
