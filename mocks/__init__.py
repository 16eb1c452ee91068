"""Mock MCP servers and a mock Responses service, each keeping a journal.

Kept import-light on purpose: the stdio mock imports this package and must be ready
within 150 ms, so nothing here imports the `mcp` SDK or a web framework. Import the
submodules you need (`mcp_host_conformance.mocks.http_server`,
`mcp_host_conformance.mocks.stdio_server`, `mcp_host_conformance.mocks.responses`,
`mcp_host_conformance.mocks.named`).
"""

from mcp_host_conformance.mocks.journal import Entry, FileJournal, Journal, JournalTimeout
from mcp_host_conformance.mocks.spec import (
    MISSING,
    Misbehaviour,
    Reply,
    ServerSpec,
    SpecError,
    Tool,
    load_spec,
)

__all__ = [
    "MISSING",
    "Entry",
    "FileJournal",
    "Journal",
    "JournalTimeout",
    "Misbehaviour",
    "Reply",
    "ServerSpec",
    "SpecError",
    "Tool",
    "load_spec",
]
