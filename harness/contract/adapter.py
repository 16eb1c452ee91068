"""The adapter contract: the only code a host author writes to be tested.

Strategy: the harness talks to every host through `Adapter` and `ClientSession`, plain
synchronous calls with plain, frozen dataclasses, so an in-process Python adapter and the
out-of-process driver protocol (`mcp_host_conformance.harness.run.driver`) are the same
thing seen from the suite. An adapter translates; it never decides. A rule the host
breaks must stay broken through the adapter, and the suite checks what it can through
the mocks' journals rather than through the adapter's word.

Values are immutable once made: sequences are tuples (a list given to a constructor is
turned into one, so `Shown("x", [path])` still works and equals `Shown("x", (path,))`),
so a record a case has read cannot change under it.

Threading: `ClientSession.ask` blocks until the turn ends. The harness may call
`ClientSession.cancel` from another thread while `ask` is blocked. The approval,
acknowledgement and question callbacks are called from inside `ask` (any thread) and return
the person's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final, Literal, Protocol, get_args, runtime_checkable

__all__ = [
    "APPROVE",
    "DENY",
    "EMPTY",
    "QUESTION_ANSWER",
    "STATUSES",
    "Acknowledger",
    "Adapter",
    "AdapterError",
    "Approver",
    "CallResult",
    "CallStatus",
    "ClientSession",
    "Confirmation",
    "Description",
    "HttpServer",
    "ServerConfig",
    "ServerStatus",
    "Shown",
    "StartOptions",
    "StdioServer",
    "Stopped",
    "PendingTool",
    "ToolApprover",
    "Questioner",
    "ToolReview",
    "Turn",
    "TypedAnswer",
    "as_status",
    "takes_questions",
]


def _freeze(record: Any) -> None:
    """Turn every list field of a frozen dataclass into a tuple and every mapping into a
    private dict copy (so a caller's later edit of what it passed cannot change the record)."""
    for f in fields(record):
        value = getattr(record, f.name)
        if isinstance(value, list):
            object.__setattr__(record, f.name, tuple(value))
        elif isinstance(value, Mapping):
            object.__setattr__(record, f.name, dict(value))


# ---- configuration ------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpServer:
    """A remote server as its user would add it: name, URL, static headers (secrets)."""

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # Optional profiles only (a host that claims none never needs these):
    # `oauth` (profile oauth): the server uses OAuth; the host runs its authorization flow
    # instead of sending static headers (OAUTH-1).
    oauth: bool = False
    # With `oauth`: a client registered for the host in advance, when the authorization
    # server needs one: "client_id", "client_secret" (a secret), or "client_metadata_url" (a
    # client ID metadata document). Empty: the host registers itself (or has its own).
    oauth_client: Mapping[str, str] = field(default_factory=dict)
    # For a host that connects when a server is added (profile verified-add): a CA to trust
    # for this server's first sync, and the (scaled) time that sync may take. A host that
    # connects only at start gets these as StartOptions.ca_file / connect_timeout instead.
    ca_file: Path | None = None
    connect_timeout: float | None = None

    def __post_init__(self) -> None:
        _freeze(self)


@dataclass(frozen=True)
class StdioServer:
    """A local server: the command, its arguments, and the environment variables (secrets)
    configured for it."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    connect_timeout: float | None = None  # as HttpServer.connect_timeout (verified-add)

    def __post_init__(self) -> None:
        _freeze(self)


ServerConfig = HttpServer | StdioServer


@dataclass(frozen=True)
class Description:
    """Static facts about the host under test."""

    name: str
    version: str
    profiles: frozenset[str] = frozenset()  # optional profiles claimed, e.g. {"pinning"}
    connect_timeout: float = 10.0  # the host's default, seconds
    call_timeout: float = 30.0
    project_config_files: tuple[str, ...] = ()  # relative to a project dir
    can_cancel: bool = False  # implements ClientSession.cancel
    # How a person adds a remote server with one secret header at a terminal (CRED-5): an
    # argv with the placeholders {name}, {url} and {header} (the header's name; the host
    # then prompts for its value). The harness runs it itself in a pseudo-terminal, with
    # HOME and the working directory of the case. None: the host has no such command.
    interactive_add: tuple[str, ...] | None = None
    # The host's own words for a call's status, where it does not state them as the catalog
    # shows them (the RES decision: an unambiguous equivalent the host uses throughout):
    # status -> a regular expression an output matches when it means that status, e.g.
    # {"failed": r'^\{"error":'}. Read wherever a case reads a stated status.
    status_vocabulary: Mapping[str, str] = field(default_factory=dict)
    # The host has OAuth (it may start a flow after a 401 or 403) without claiming the `oauth`
    # profile: CRED-6, the rule for hosts without OAuth, does not apply to it.
    has_oauth: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.profiles, frozenset):
            object.__setattr__(self, "profiles", frozenset(self.profiles))
        _freeze(self)


@dataclass(frozen=True)
class Shown:
    """What the user saw for a configuration command, and the files it wrote."""

    text: str
    paths: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", tuple(Path(p) for p in self.paths))


@dataclass(frozen=True)
class StartOptions:
    home: Path  # the user's home directory (HOME); configuration lives only under it
    cwd: Path  # the working directory (a project the host must not read MCP config from)
    model_url: str  # Responses API base URL, e.g. http://127.0.0.1:PORT/v1
    model_key: str = field(repr=False)  # a secret: never in a repr, so never in a report
    # Seconds, scaled down by the suite. None: start the host with its own default, as its
    # user would (the slow cases observe the real defaults that way); pass nothing then.
    connect_timeout: float | None = None
    call_timeout: float | None = None
    ca_file: Path | None = None  # an extra CA certificate to trust for HTTPS servers
    env: Mapping[str, str] = field(default_factory=dict)  # extra environment for the host
    resume: str | None = None  # a session id returned by an earlier `stop`

    def __post_init__(self) -> None:
        _freeze(self)


# ---- what the user saw ----------------------------------------------------------------


@dataclass(frozen=True)
class ServerStatus:
    """One server's status line after start."""

    name: str
    connected: bool
    tools: int | None = None  # when connected
    destination: str | None = None  # the URL, or the stdio command
    reason: str | None = None  # when unavailable
    line: str = ""  # the line exactly as shown


@dataclass(frozen=True)
class Confirmation:
    """One approval prompt, as shown.

    A prompt that takes typed text (`Approve? [y/N]`) leaves `choices` empty: the answer is
    typed as given. A prompt that is a menu (or a structured approval request a UI shows as
    one) lists its entries in `choices`, as labelled, and names in `default` the entry an
    empty answer (Enter) selects, as the host decides it; the adapter then picks from the
    menu as a person would: "" is Enter (the host's default), "y" the entry that approves
    this one call, any other answer the entry that refuses it. So whether an empty answer
    denies (APR-2) is the host's decision, observed on the server's journal, never the
    adapter's."""

    server: str  # the configured server name
    destination: str
    tool: str  # the server's own tool name
    arguments: str  # the arguments text as shown (pretty JSON, maybe cut)
    warning: str
    text: str  # the whole prompt as shown
    choices: tuple[str, ...] = ()  # a menu's entries, as shown; () for a typed answer
    default: str | None = None  # the entry an empty answer (Enter) selects, if any


# What a person types at an approval prompt. These three are the answers the suite's cases
# give by name; a case may also type any other text (APR-2: anything but yes denies), so an
# approval callback returns `str`, and the host alone decides what it means.
TypedAnswer = Literal["y", "n", ""]
APPROVE: Final[TypedAnswer] = "y"
DENY: Final[TypedAnswer] = "n"
EMPTY: Final[TypedAnswer] = ""  # Enter

# An approval callback answers what a person typed at the prompt: "y", "n", "" (Enter)...
Approver = Callable[[Confirmation], str]
# An acknowledgement callback gets the prompt's text and answers True (accept) or False.
Acknowledger = Callable[[str], bool]
# A question callback gets a free-form question the host itself asks the person during a
# turn (not an approval, not an acknowledgement: e.g. opencode's `question` tool, "Which
# directory should I use?") as shown, and returns what the person types back.
Questioner = Callable[[str], str]
# What the harness's person answers a host's own question, unless a case says otherwise.
QUESTION_ANSWER: Final = "No preference: carry on as you think best."

CallStatus = Literal["completed", "failed", "denied", "unknown", "output_limit"]
STATUSES: Final[tuple[CallStatus, ...]] = get_args(CallStatus)


def as_status(value: str) -> CallStatus:
    """`value` as a CallStatus (ValueError naming the allowed ones if it is not one): for an
    adapter whose host keeps its statuses as plain strings."""
    for status in STATUSES:
        if value == status:
            return status
    raise ValueError(f"call status {value!r} is not one of {', '.join(STATUSES)}")


@dataclass(frozen=True)
class CallResult:
    """One MCP call's outcome as the host showed it to the user."""

    tool: str  # the exposed (function) name the model called
    status: CallStatus
    output: str  # the output as shown

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(
                f"CallResult.status {self.status!r} is not one of {', '.join(STATUSES)}"
            )


@dataclass(frozen=True)
class Turn:
    """One question's turn."""

    question_sent: bool  # False if the question never reached the model (e.g. ack declined)
    confirmations: tuple[Confirmation, ...] = ()
    calls: tuple[CallResult, ...] = ()
    acknowledgements: tuple[str, ...] = ()  # ack prompts shown
    answer: str = ""  # the model's final text, as shown
    text: str = ""  # everything the user saw during the turn

    def __post_init__(self) -> None:
        _freeze(self)


@dataclass(frozen=True)
class Stopped:
    session_id: str | None
    session_files: tuple[Path, ...] = ()
    text: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "session_files", tuple(Path(p) for p in self.session_files))


# ---- tool review (optional profiles pinning and instruction-flagging) -------------------------


@dataclass(frozen=True)
class PendingTool:
    """One tool a host asks a person to approve before it can be called (PIN-1, PIN-2), as
    shown: which tool, why it waits (`new`: never approved; `changed`: its text changed
    since it was approved), whether the host flagged its text as reading like instructions
    to the model (FLAG-1), and everything shown for it."""

    server: str  # the configured server name
    tool: str  # the server's own tool name
    change: Literal["new", "changed"]
    flagged: bool = False
    text: str = ""


# A tool-review callback gets one pending tool and answers True (approve it) or False.
ToolApprover = Callable[[PendingTool], bool]


@dataclass(frozen=True)
class ToolReview:
    """What one review showed: every pending tool in the order asked, and all its text."""

    tools: tuple[PendingTool, ...] = ()
    text: str = ""

    def __post_init__(self) -> None:
        _freeze(self)


# ---- the operations ------------------------------------------------------------------------


@runtime_checkable
class ClientSession(Protocol):
    """A running host, after `Adapter.start`."""

    # One per configured server, known when start returns (any sequence: a list will do).
    @property
    def statuses(self) -> Sequence[ServerStatus]: ...

    @property
    def text(self) -> str: ...  # everything the user saw during start

    def ask(self, question: str, approve: Approver, acknowledge: Acknowledger) -> Turn: ...

    # Optional (not part of the checked protocol): a host that asks the person free-form
    # questions of its own during a turn takes a fourth, keyword argument
    #   def ask(self, question, approve, acknowledge, on_question: Questioner) -> Turn
    # and calls `on_question(text)` with each question as shown, typing back the answer. The
    # harness passes it only to an `ask` that declares it (`takes_questions`).

    def cancel(self) -> None:
        """Interrupt the call in flight, as Ctrl-C would (only if describe().can_cancel)."""
        ...

    def stop(self) -> Stopped: ...

    # Optional (profiles pinning, instruction-flagging; not part of the checked protocol):
    #   def review_tools(self, approve: ToolApprover) -> ToolReview
    # Show the person every tool of this session waiting for approval, one by one, as the
    # host's own review does, and call `approve` for each; approved tools are callable from
    # then on, in this session and the next ones.


@runtime_checkable
class Adapter(Protocol):
    def describe(self) -> Description: ...

    def add_server(self, home: Path, server: ServerConfig) -> Shown: ...

    def remove_server(self, home: Path, name: str) -> Shown: ...

    def list_servers(self, home: Path) -> Shown: ...

    def start(self, options: StartOptions) -> ClientSession: ...

    # Optional (profile private-address-refusal; not part of the checked protocol):
    #   def allow_addresses(self, home: Path, addresses: tuple[str, ...]) -> Shown
    # Allow connections to these exact addresses although they are private (PRIV-1): the
    # harness gives its own loopback (where its mocks listen) before any other operation.

    # Optional (not part of the checked protocol):
    #   def project_config(self, servers: Sequence[ServerConfig]) -> Mapping[str, str]
    # The files that would configure these servers for a project in the host's own format,
    # if it had any: {path relative to a project directory: the file's text}. A pure
    # function of the servers, no I/O: the harness writes them itself, beside its own
    # common project files, as bait the host must never take (CFG-2). A host that reads
    # nothing from a project may still say where and how it would (its home configuration's
    # shape at the same relative path, say): a lure in the host's own shape is the one a
    # host that wrongly reads a project takes.


def takes_questions(ask: Callable[..., Any]) -> bool:
    """Whether a session's `ask` takes the optional `on_question` callback (it names the
    parameter, or takes any keyword)."""
    import inspect

    try:
        parameters = inspect.signature(ask).parameters.values()
    except (TypeError, ValueError):  # a builtin or a C extension's: takes only what it lists
        return False
    return any(
        p.name == "on_question" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    )


class AdapterError(RuntimeError):
    """The client under test failed in a way the adapter could not translate (it crashed,
    hung past the harness's bound, or answered garbage). The suite reports it as the
    client's failure, with this message."""
