"""The adapter contract: the only code a host author writes to be tested.

Strategy: the harness talks to every host through `Adapter` and `ClientSession`, plain
synchronous calls with plain dataclasses, so an in-process Python adapter and the
out-of-process driver protocol (`mcp_host_conformance.harness.driver`) are the same
thing seen from the suite. An adapter translates; it never decides. A rule the host
breaks must stay broken through the adapter, and the suite checks what it can through
the mocks' journals rather than through the adapter's word.

Threading: `ClientSession.ask` blocks until the turn ends. The harness may call
`ClientSession.cancel` from another thread while `ask` is blocked. The approval and
acknowledgement callbacks are called from inside `ask` (any thread) and return the
person's answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

# ---- configuration ------------------------------------------------------------------------


@dataclass
class HttpServer:
    """A remote server as its user would add it: name, URL, static headers (secrets)."""

    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class StdioServer:
    """A local server: the command, its arguments, and the environment variables (secrets)
    configured for it."""

    name: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


ServerConfig = HttpServer | StdioServer


@dataclass
class Description:
    """Static facts about the host under test."""

    name: str
    version: str
    profiles: frozenset[str] = frozenset()  # optional profiles claimed, e.g. {"pinning"}
    connect_timeout: float = 10.0  # the host's default, seconds
    call_timeout: float = 30.0
    project_config_files: list[str] = field(default_factory=list)  # relative to a project dir
    can_cancel: bool = False  # implements ClientSession.cancel
    # How a person adds a remote server with one secret header at a terminal (CRED-5): an
    # argv with the placeholders {name}, {url} and {header} (the header's name; the host
    # then prompts for its value). The harness runs it itself in a pseudo-terminal, with
    # HOME and the working directory of the case. None: the host has no such command.
    interactive_add: list[str] | None = None


@dataclass
class Shown:
    """What the user saw for a configuration command, and the files it wrote."""

    text: str
    paths: list[Path] = field(default_factory=list)


@dataclass
class StartOptions:
    home: Path  # the user's home directory (HOME); configuration lives only under it
    cwd: Path  # the working directory (a project the host must not read MCP config from)
    model_url: str  # Responses API base URL, e.g. http://127.0.0.1:PORT/v1
    model_key: str
    connect_timeout: float  # seconds, scaled down by the suite
    call_timeout: float
    ca_file: Path | None = None  # an extra CA certificate to trust for HTTPS servers
    env: dict[str, str] = field(default_factory=dict)  # extra environment for the host
    resume: str | None = None  # a session id returned by an earlier `stop`


# ---- what the user saw ----------------------------------------------------------------


@dataclass
class ServerStatus:
    """One server's status line after start."""

    name: str
    connected: bool
    tools: int | None = None  # when connected
    destination: str | None = None  # the URL, or the stdio command
    reason: str | None = None  # when unavailable
    line: str = ""  # the line exactly as shown


@dataclass
class Confirmation:
    """One approval prompt, as shown."""

    server: str  # the configured server name
    destination: str
    tool: str  # the server's own tool name
    arguments: str  # the arguments text as shown (pretty JSON, maybe cut)
    warning: str
    text: str  # the whole prompt as shown


APPROVE = "y"
DENY = "n"
EMPTY = ""

# An approval callback answers what a person typed at the prompt: "y", "n", "" (Enter)...
Approver = Callable[[Confirmation], str]
# An acknowledgement callback gets the prompt's text and answers True (accept) or False.
Acknowledger = Callable[[str], bool]

STATUSES = ("completed", "failed", "denied", "unknown", "output_limit")


@dataclass
class CallResult:
    """One MCP call's outcome as the host showed it to the user."""

    tool: str  # the exposed (function) name the model called
    status: str  # one of STATUSES
    output: str  # the output as shown


@dataclass
class Turn:
    """One question's turn."""

    question_sent: bool  # False if the question never reached the model (e.g. ack declined)
    confirmations: list[Confirmation] = field(default_factory=list)
    calls: list[CallResult] = field(default_factory=list)
    acknowledgements: list[str] = field(default_factory=list)  # ack prompts shown
    answer: str = ""  # the model's final text, as shown
    text: str = ""  # everything the user saw during the turn


@dataclass
class Stopped:
    session_id: str | None
    session_files: list[Path] = field(default_factory=list)
    text: str = ""


# ---- the operations ------------------------------------------------------------------------


@runtime_checkable
class ClientSession(Protocol):
    """A running host, after `Adapter.start`."""

    statuses: list[ServerStatus]  # one per configured server, known when start returns
    text: str  # everything the user saw during start

    def ask(self, question: str, approve: Approver, acknowledge: Acknowledger) -> Turn: ...

    def cancel(self) -> None:
        """Interrupt the call in flight, as Ctrl-C would (only if describe().can_cancel)."""
        ...

    def stop(self) -> Stopped: ...


@runtime_checkable
class Adapter(Protocol):
    def describe(self) -> Description: ...

    def add_server(self, home: Path, server: ServerConfig) -> Shown: ...

    def remove_server(self, home: Path, name: str) -> Shown: ...

    def list_servers(self, home: Path) -> Shown: ...

    def start(self, options: StartOptions) -> ClientSession: ...


class AdapterError(RuntimeError):
    """The client under test failed in a way the adapter could not translate (it crashed,
    hung past the harness's bound, or answered garbage). The suite reports it as the
    client's failure, with this message."""
