"""What a case may rely on from a mock, whichever mock it is: typed protocols.

Strategy: the fixtures start mocks and the case-author API (`Host.add_http`, the journal
readers in `observe`) takes them; both are written against these protocols, not against
the mock classes, so a case checks a rule through what every mock offers (a journal of
what it received, a URL to reach it, a way to stop it) and a new kind of mock fits by
having those. `mcp_host_conformance.mocks` provides the real ones (`HttpMock`,
`StdioMock`, `MockResponses`); the harness only depends on their shape and on the journal
type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import ServerSpec, Tool

__all__ = [
    "Closable",
    "Entry",
    "HttpServerMock",
    "Journal",
    "MarkedMock",
    "Mock",
    "ModelService",
    "StdioServerMock",
]


@runtime_checkable
class Closable(Protocol):
    """Anything a case started and the harness stops at its end."""

    def close(self) -> None: ...


class Mock(Closable, Protocol):
    """A running mock: where it listens, what it received, and how to stop it."""

    @property
    def url(self) -> str | None: ...  # None only before it is started

    @property
    def journal(self) -> Journal: ...


class MarkedMock(Protocol):
    """A mock MCP server that marks its tools (`mcp_host_conformance.mocks.spec.with_markers`):
    the mock model finds each tool's function by that marker, wherever a host put it."""

    @property
    def marker_token(self) -> str: ...

    @property
    def spec(self) -> ServerSpec: ...  # as served: its tools carry their markers


class HttpServerMock(Mock, MarkedMock, Protocol):
    """A mock MCP server over Streamable HTTP (plain or TLS)."""

    @property
    def ca_file(self) -> str | None: ...  # the CA to trust for a TLS mock

    def change_tools(self, tools: list[Tool]) -> None: ...


class ModelService(Mock, Protocol):
    """The mock Responses service that plays the model."""

    @property
    def api_key(self) -> str: ...

    def script(self, steps: Iterable[Step | dict[str, Any]] | None) -> None: ...

    def bind(self, server: str, mock: Any) -> None: ...  # the host knows `mock` as `server`

    def marker_for(self, server: str, tool: str) -> str | None: ...


class StdioServerMock(MarkedMock, Protocol):
    """A stdio mock prepared for the client to start: no URL, the client spawns it."""

    @property
    def command(self) -> list[str]: ...  # the argv to configure

    @property
    def journal(self) -> Journal: ...

    def process_entries(self) -> list[Entry]: ...

    def live_pids(self) -> list[int]: ...
