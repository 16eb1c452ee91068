"""What one case made, read back for the monitors: the servers and what each received, the
model's requests and the calls it answered with, the moments of the harness's steps, the
host's texts and files, the secrets configured.

Strategy: a monitor states a rule over what the harness observes, in any case, whatever the
case was about. So it must not depend on the case's own variables: everything here is read
from the objects the case fixtures own (`Case`: its hosts, mocks, model and secrets) after
the case body ran and its hosts were stopped. A tool a host offered or called is tied to its
mock by the mock's marker (`mocks.spec.tool_marker`), never by a name the host chose. Every
view is computed once, on first use, and bounded by what the case itself produced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from mcp_host_conformance.harness.cases.canaries import CANARY_PREFIX, Canary, Secrets
from mcp_host_conformance.harness.cases.hostrun import Host
from mcp_host_conformance.harness.cases.observe import is_model_request, request_body
from mcp_host_conformance.harness.cases.timeline import Moment
from mcp_host_conformance.harness.contract.adapter import (
    HttpServer,
    PendingTool,
    ServerConfig,
    StdioServer,
)
from mcp_host_conformance.mocks.journal import Entry
from mcp_host_conformance.mocks.responses.script import offered_functions
from mcp_host_conformance.mocks.spec import MARKER_LENGTH, MARKER_PREFIX, Tool, tool_marker

__all__ = ["Called", "ModelRequest", "Observed", "Served", "journal_text"]

T = TypeVar("T")


def journal_text(entries: Iterable[Entry]) -> str:
    """A journal as text, each entry as its JSON: what secrets are searched in."""
    return "\n".join(e.json_text(ensure_ascii=False) for e in entries)


@dataclass
class Served:
    """One mock MCP server the case started, and the names the host was told it has."""

    mock: Any  # an HttpMock, StdioMock or SdkHttpMock: `journal`, `spec`, `marker_token`
    names: list[str] = field(default_factory=list)
    # what several monitors of another module derive from this server alike (offered.py:
    # its definitions' sizes), derived once per record: each case's monitors read every
    # server several times over (a serial reference run's monitors: ~1.5 s of CPU before,
    # ~1.1 with this and the cached texts below)
    derived: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, key: Any, make: Callable[[], T]) -> T:
        """`make()`, computed on the first call for `key` in this record and kept."""
        if key not in self.derived:
            self.derived[key] = make()
        return self.derived[key]  # type: ignore[no-any-return]

    @property
    def stdio(self) -> bool:
        return hasattr(self.mock, "process_entries")

    @property
    def label(self) -> str:
        return self.names[0] if self.names else f"(unconfigured {self.mock.spec.name})"

    @cached_property
    def _tools(self) -> list[Tool]:
        spec = self.mock.spec
        found = [*spec.tools, *spec.misbehaviour.changed_tools]
        known = {id(t) for t in found}
        for tool in getattr(self.mock, "tools", None) or []:
            # by identity first: comparing definitions field by field is the slow path
            if id(tool) not in known and tool not in found:
                found.append(tool)
                known.add(id(tool))
        return found

    def tools(self) -> list[Tool]:
        """Every definition it served: its spec's, what the spec changes to, and what a case
        switched it to (`change_tools`); read once per record."""
        return self._tools

    @cached_property
    def entries(self) -> list[Entry]:
        try:
            return list(self.mock.journal.entries())
        except Exception:  # noqa: BLE001 - an unreadable journal holds nothing to judge
            return []

    @cached_property
    def text(self) -> str:
        """Its journal as text, to search secrets in."""
        return journal_text(self.entries)

    @cached_property
    def reached(self) -> list[Entry]:
        """What shows the host reached it: every entry but the mock's own events with no
        connection (a TLS handshake the host refused or abandoned is journalled as a loop
        error before any connection exists, seen only on a loaded machine; a case switching
        the tools is journalled too): what the monitors of "received nothing" read."""
        return [e for e in self.entries if e.kind != "event" or e.connection is not None]

    def requests(self, method: str) -> list[Entry]:
        """The JSON-RPC requests for `method` it received, in order of arrival."""
        return [
            e
            for e in self.entries
            if e.kind == "rpc" and e.method == method and e.extra.get("message_kind") == "request"
        ]

    def tool_of(self, entry: Entry) -> str | None:
        params = entry.params if isinstance(entry.params, dict) else {}
        name = params.get("name")
        return name if isinstance(name, str) else None


@dataclass(frozen=True)
class Called:
    """One function call the mock model made, tied to the mock tool it targets (by marker)."""

    call_id: str
    name: str
    arguments: str
    served: Served | None
    tool: str | None
    request: int  # the index of the model request it answered


@dataclass(frozen=True)
class ModelRequest:
    index: int
    time: float
    body: dict[str, Any]
    calls: tuple[Called, ...]


def _configured_history(host: Host) -> list[ServerConfig]:
    return list(getattr(host, "configured", []) or host.servers.values())


class Observed:
    """The record of one case (see the module comment)."""

    def __init__(
        self,
        hosts: list[Host],
        mocks: list[Any],
        model: Any | None,
        secrets: Secrets | None,
        home: Path,
        project: Path,
        profiles: frozenset[str],
        grace: float = 1.0,
        all_stopped: bool = True,
    ) -> None:
        self.hosts = hosts
        self.grace = grace  # how long to wait for what must already have happened (an exit)
        self.all_stopped = all_stopped  # every session's stop() returned
        self.browsers_opened: list[str] = []  # what the run's stand-in browsers logged
        self.lures_reached: list[str] = []  # what reached the run's project-config lures
        self.model = model
        # target() by the function's identity (the function kept: no id is reused meanwhile)
        self._targets: dict[int, tuple[Mapping[str, Any], tuple[Served | None, str | None]]] = {}
        self.home = home
        self.project = project
        self.profiles = profiles
        self.case_secrets = secrets
        served: dict[int, Served] = {}
        self.other_mocks: list[Any] = []
        for mock in mocks:
            if mock is model:
                continue
            if getattr(mock, "marker_token", None) and hasattr(mock, "spec"):
                served.setdefault(id(mock), Served(mock))
            elif hasattr(mock, "journal"):
                self.other_mocks.append(mock)
        for host in hosts:
            for name, mock in getattr(host, "bindings", None) or host.bound.items():
                entry = served.setdefault(id(mock), Served(mock))
                if name not in entry.names:
                    entry.names.append(name)
        self.served = list(served.values())

    @cached_property
    def runs(self) -> list[Any]:
        """Every session the case started (`Running`), once each: hosts of one case may share
        them (a host restarted as another object)."""
        seen: dict[int, Any] = {}
        for host in self.hosts:
            for run in getattr(host, "runs", []):
                seen.setdefault(id(run), run)
        return list(seen.values())

    # ---- the harness's steps ----------------------------------------------------------------

    def _shared(self, attribute: str) -> list[Any]:
        """A list every host of the case keeps (a restarted host shares its original's), each
        list once, in order."""
        lists: dict[int, list[Any]] = {}
        for host in self.hosts:
            found = getattr(host, attribute, None)
            if found is not None:
                lists.setdefault(id(found), found)
        return [item for found in lists.values() for item in found]

    @cached_property
    def moments(self) -> list[Moment]:
        return sorted(self._shared("moments"), key=lambda m: m.began)

    def of(self, *kinds: str) -> list[Moment]:
        return [m for m in self.moments if m.kind in kinds]

    @cached_property
    def configured(self) -> list[ServerConfig]:
        """Every server configuration the case gave the host (removed ones included)."""
        found: list[ServerConfig] = []
        for host in self.hosts:
            for config in _configured_history(host):
                if config not in found:
                    found.append(config)
        return found

    def served_as(self, name: str) -> Served | None:
        return next((s for s in self.served if name in s.names), None)

    @cached_property
    def seen(self) -> list[str]:
        """Every text the user saw (the hosts' records), in order."""
        return self._shared("seen")

    @cached_property
    def tool_answers(self) -> list[tuple[float, PendingTool, bool]]:
        """Each tool a review showed: when the person answered, the tool, and yes or no."""
        return self._shared("tool_answers")

    @cached_property
    def config_paths(self) -> set[Path]:
        return {Path(p) for host in self.hosts for p in host.config_paths}

    @cached_property
    def session_files(self) -> set[Path]:
        return {Path(p) for host in self.hosts for p in host.session_files}

    @property
    def started(self) -> bool:
        return bool(self.of("start"))

    # ---- secrets ---------------------------------------------------------------------------

    @cached_property
    def configured_secrets(self) -> list[tuple[Canary, list[ServerConfig]]]:
        """Each secret value configured for a server (a header or an environment value that
        is a canary of this case), with every server it was configured for."""
        known = set(self.case_secrets.values) if self.case_secrets is not None else set()
        labels = (
            {c.value: c.label for c in self.case_secrets.canaries}
            if self.case_secrets is not None
            else {}
        )
        found: dict[str, list[ServerConfig]] = {}
        for config in self.configured:
            values = (
                config.headers.values()
                if isinstance(config, HttpServer)
                else config.env.values()
                if isinstance(config, StdioServer)
                else ()
            )
            for value in values:
                if value in known or CANARY_PREFIX in value:
                    owners = found.setdefault(value, [])
                    if config not in owners:
                        owners.append(config)
        return [(Canary(labels.get(v, "configured"), v), owners) for v, owners in found.items()]

    def secrets_of(self, values: list[str]) -> Secrets:
        searcher = Secrets()
        labels = {v: c.label for c, _ in self.configured_secrets for v in [c.value]}
        searcher.canaries.extend(Canary(labels.get(v, "secret"), v) for v in values)
        return searcher

    # ---- the model's side -------------------------------------------------------------------

    @cached_property
    def _markers(self) -> dict[str, tuple[Served, str]]:
        index: dict[str, tuple[Served, str]] = {}
        for served in self.served:
            for tool in served.tools():
                index[tool_marker(served.mock.marker_token, tool.name)] = (served, tool.name)
        return index

    def target(self, function: Mapping[str, Any]) -> tuple[Served | None, str | None]:
        """The mock tool an offered function stands for, by the marker it carries (each
        function of a request body is asked of many times: once per monitor)."""
        known = self._targets.get(id(function))
        if known is not None and known[0] is function:
            return known[1]
        found = self._target(function)
        self._targets[id(function)] = (function, found)
        return found

    def _target(self, function: Mapping[str, Any]) -> tuple[Served | None, str | None]:
        text = json.dumps(function, ensure_ascii=False)
        at = text.find(MARKER_PREFIX)
        while at != -1:
            found = self._markers.get(text[at : at + MARKER_LENGTH])
            if found is not None:
                return found
            at = text.find(MARKER_PREFIX, at + 1)
        return None, None

    @cached_property
    def model_text(self) -> str:
        """The model service's journal as text, to search secrets in."""
        return journal_text(self.model.journal.entries()) if self.model is not None else ""

    @cached_property
    def requests(self) -> list[ModelRequest]:
        """The model requests, in order, with the calls answered to each; each body in the
        Responses API's shape whichever API the host spoke (`request_body`)."""
        if self.model is None:
            return []
        found: list[ModelRequest] = []
        for entry in self.model.journal.entries(kind="http"):
            body = request_body(entry) if is_model_request(entry) else None
            if body is None:
                continue
            # A function is known by its name within its namespace: three servers' `ping`,
            # each in its own Responses `namespace` tool, are three functions.
            functions = {
                (str(f.get("name")), namespace): f for f, namespace in offered_functions(body)
            }
            calls = []
            for call in entry.extra.get("reply_calls") or []:
                name = str(call.get("name"))
                namespace = call.get("namespace")
                served, tool = self.target(functions.get((name, namespace), {}))
                calls.append(
                    Called(
                        str(call.get("call_id")),
                        name,
                        str(call.get("arguments", "")),
                        served,
                        tool,
                        len(found),
                    )
                )
            found.append(ModelRequest(len(found), entry.time, body, tuple(calls)))
        return found

    @cached_property
    def model_calls(self) -> list[Called]:
        return [call for request in self.requests for call in request.calls]

    def tool_calls(self) -> Iterator[tuple[Served, Entry]]:
        """Every `tools/call` any server received, in order of arrival."""
        found = [(s, e) for s in self.served for e in s.requests("tools/call")]
        yield from sorted(found, key=lambda pair: pair[1].time)

    # ---- files ----------------------------------------------------------------------------

    def files_under(self, root: Path, limit: int = 2000) -> list[Path]:
        """Regular files below `root` (links not followed), at most `limit`."""
        found: list[Path] = []
        if not root.is_dir():
            return found
        for path in sorted(root.rglob("*")):
            if len(found) >= limit:
                break
            try:
                if path.is_file() and not path.is_symlink():
                    found.append(path)
            except OSError:
                continue
        return found
