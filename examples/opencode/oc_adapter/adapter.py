"""The conformance adapter for opencode (`--client oc_adapter.adapter:Adapter`).

Strategy: translate, never decide. Configuration goes through opencode's own `opencode mcp`
commands (and, to remove a server, which no command does, an edit of its entry in
`~/.config/opencode/opencode.jsonc`). A started host is one `opencode serve` process (the
HTTP API its terminal UI, desktop app and IDE extensions are clients of) in the case's HOME
and working directory. The user's settings for the run are given as opencode takes settings
from its environment (`OPENCODE_CONFIG_CONTENT`, merged over the configuration files): the
mock model as a custom provider on the Anthropic Messages API (`@ai-sdk/anthropic`, bundled
in opencode), the key read from an environment variable as opencode's `{env:...}` does,
`permission: ask` for every tool (a person decides about each call), the session title
model off (it would take the script's first step). The suite's timeout is each server's
`timeout` in the configuration file, as a user sets it (opencode has one per server, for
connecting and for each request; it gets the longer of the suite's two, so a loaded
machine's slow connect is not taken for a failure).
Everything the user would see comes from opencode's API: each server's status, permission
requests, the tool parts and text of each assistant message. A permission request is shown
as opencode's terminal UI shows it (a menu: Allow once, Allow always, Reject, "Allow once"
selected; the tool's name and no arguments), and the person's answer picks from that menu.
Nothing is renamed, labelled, retried or limited here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.contract.adapter import (
    Acknowledger,
    AdapterError,
    Approver,
    CallResult,
    Confirmation,
    Description,
    HttpServer,
    Questioner,
    ServerConfig,
    ServerStatus,
    Shown,
    StartOptions,
    Stopped,
    Turn,
)
from oc_adapter import opencode
from oc_adapter.serve import OpencodeError, Serve

__all__ = ["Adapter", "Session"]

PROVIDER = "mcphc"
MODEL = "mock-model"
MODEL_KEY_ENV = "MCPHC_MODEL_KEY"
RPC_BOUND = 30.0  # one API request
TURN_QUIET_BOUND = 300.0  # a turn's events; the harness's own bound is shorter
STOP_GRACE = 10.0
# opencode's permission menu (its terminal UI's labels, in order; the first is selected)
MENU = {"Allow once": "once", "Allow always": "always", "Reject": "reject"}
DEFAULT_ENTRY = "Allow once"
APPROVE_ENTRY = "Allow once"
REFUSE_ENTRY = "Reject"
REJECTED = "The user rejected permission to use this specific tool call"
# the events in which opencode waits for the person
ASKING = ("permission.asked", "question.asked")


def settings(options: StartOptions) -> dict[str, Any]:
    """The user's settings for this run, as `OPENCODE_CONFIG_CONTENT`."""
    return {
        "model": f"{PROVIDER}/{MODEL}",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/anthropic",
                "name": "mcp-host-conformance mock model",
                "options": {"baseURL": options.model_url, "apiKey": f"{{env:{MODEL_KEY_ENV}}}"},
                "models": {MODEL: {"name": "mock model", "tool_call": True}},
            }
        },
        "permission": {"*": "ask"},
        "agent": {"title": {"disable": True}},
    }


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class Session:
    """One running opencode (`opencode serve`) with one session."""

    def __init__(self, options: StartOptions) -> None:
        self._approve: Approver | None = None
        self._turn_lock = threading.Lock()
        self._stopped: Stopped | None = None
        self._home = options.home
        self._busy = False
        self._sessions: set[str] = set()
        servers = opencode.configured_servers(options.home)
        try:
            timeout = max(options.connect_timeout, options.call_timeout)
            opencode.set_timeouts(options.home, int(1000 * timeout))
        except OSError as exc:
            raise AdapterError(f"cannot edit opencode's configuration: {exc}") from None
        env = opencode.opencode_env(
            options.home,
            {
                **options.env,
                MODEL_KEY_ENV: options.model_key,
                "OPENCODE_CONFIG_CONTENT": json.dumps(settings(options)),
            },
        )
        if options.ca_file is not None:
            env["NODE_EXTRA_CA_CERTS"] = str(options.ca_file)
        try:
            argv = [str(opencode.opencode_binary()), "serve", "--port", "0"]
            argv += ["--hostname", "127.0.0.1"]
        except FileNotFoundError as exc:
            raise AdapterError(str(exc)) from None
        bound = 2 * options.connect_timeout + RPC_BOUND
        try:
            self._serve = Serve(argv, env, options.cwd, bound)
        except OpencodeError as exc:
            raise AdapterError(f"opencode serve did not start: {exc}") from None
        try:
            self._begin(options, list(servers), bound)
        except OpencodeError as exc:
            self._serve.close(STOP_GRACE)
            raise AdapterError(f"opencode: {exc}") from None

    # ---- start ------------------------------------------------------------------------------

    def _begin(self, options: StartOptions, servers: list[str], bound: float) -> None:
        api = self._serve
        if options.resume:
            self.session_id = str(api.request("GET", f"/session/{options.resume}")["id"])
        else:
            self.session_id = str(api.request("POST", "/session", {}, RPC_BOUND)["id"])
        self._sessions.add(self.session_id)
        # The instance connects every server when first asked; /mcp answers once it has
        states = api.request("GET", "/mcp", None, bound) or {}
        states = states if isinstance(states, dict) else {}
        self.statuses = [self._status(name, states.get(name)) for name in servers]
        self.text = "\n".join(s.line for s in self.statuses)

    @staticmethod
    def _status(name: str, state: Any) -> ServerStatus:
        state = state if isinstance(state, dict) else {}
        status = str(state.get("status", "unknown"))
        if status == "connected":
            return ServerStatus(name, True, line=f"{name} connected")
        error = state.get("error")
        line = f"{name} {status}" + (f": {error}" if error else "")
        return ServerStatus(name, False, reason=str(error or status), line=line)

    # ---- a turn -------------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        approve: Approver,
        acknowledge: Acknowledger,
        on_question: Questioner | None = None,
    ) -> Turn:
        with self._turn_lock:
            self._approve = approve
            try:
                return self._turn(question, approve, on_question)
            except OpencodeError as exc:
                raise AdapterError(f"opencode: {exc}") from None
            finally:
                self._approve = None
                self._busy = False

    def _mine(self, event: dict[str, Any]) -> bool:
        """An event of this session, or a request of a session opencode made for it (its
        `task` tool runs a subagent in a child session, whose requests the person answers)."""
        properties = event.get("properties")
        if not isinstance(properties, dict):
            return False
        info = properties.get("info")
        if event.get("type") == "session.created" and isinstance(info, dict):
            if info.get("parentID") in self._sessions:
                self._sessions.add(str(info.get("id")))
            return False
        return properties.get("sessionID") == self.session_id or (
            event.get("type") in ASKING and properties.get("sessionID") in self._sessions
        )

    def _answer_question(self, request: dict[str, Any], on_question: Questioner | None) -> str:
        """opencode's own question to the person (its `question` tool), shown as its terminal
        UI does (each question with its header and options; a typed answer is allowed) and
        answered with what the person types, or dismissed (Esc) when nobody answers. What
        was shown."""
        questions = [q for q in request.get("questions") or [] if isinstance(q, dict)]
        lines = []
        for q in questions:
            options = [o for o in q.get("options") or [] if isinstance(o, dict)]
            lines.append(f"{q.get('header', '')}: {q.get('question', '')}")
            lines += [f"  {n}. {o.get('label', '')}" for n, o in enumerate(options, 1)]
        text = "\n".join(lines)
        ident = str(request.get("id"))
        try:
            if on_question is None:
                self._serve.request("POST", f"/question/{ident}/reject", {}, RPC_BOUND)
            else:
                typed = on_question(text)
                answers = [[typed] for _ in questions]
                self._serve.request(
                    "POST", f"/question/{ident}/reply", {"answers": answers}, RPC_BOUND
                )
        except OpencodeError as exc:
            if exc.status != 404:  # 404: settled by opencode already (the turn ended)
                raise
        return text

    def _turn(self, question: str, approve: Approver, on_question: Questioner | None) -> Turn:
        api = self._serve
        since = len(api.events)
        before = {str(m.get("info", {}).get("id")) for m in self._messages()}
        api.request(
            "POST",
            f"/session/{self.session_id}/prompt_async",
            {"parts": [{"type": "text", "text": question}]},
            RPC_BOUND,
        )
        self._busy = True
        confirmations: list[Confirmation] = []
        shown: list[str] = []
        while True:
            index = api.wait_for(
                lambda e: (
                    self._mine(e) and e.get("type") in ("session.idle", "session.error", *ASKING)
                ),
                since,
                TURN_QUIET_BOUND,
            )
            since = index + 1
            event = api.events[index]
            properties = event["properties"]
            if event["type"] == "session.idle":
                if properties.get("sessionID") == self.session_id:
                    break
                continue
            if event["type"] == "question.asked":
                shown.append(self._answer_question(properties, on_question))
                continue
            if event["type"] == "session.error":
                error = properties.get("error")
                shown.append(f"error: {_text(error)[:2000]}")
                continue
            request = str(properties.get("id"))
            if not self._pending(request):
                continue  # settled by opencode already: a refusal ends the others waiting
            confirmation = self._confirmation(properties)
            confirmations.append(confirmation)
            shown.append(confirmation.text)
            reply = self._choose(approve(confirmation))
            try:
                api.request("POST", f"/permission/{request}/reply", {"reply": reply}, RPC_BOUND)
            except OpencodeError as exc:
                if exc.status != 404:  # 404: settled by opencode while the person chose
                    raise
        calls: list[CallResult] = []
        answer: list[str] = []
        for message in self._messages():
            info = message.get("info") or {}
            if str(info.get("id")) in before or info.get("role") != "assistant":
                continue
            for part in message.get("parts") or []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "text" and part.get("text"):
                    answer.append(str(part["text"]))
                    shown.append(str(part["text"]))
                elif part.get("type") == "tool":
                    call = self._call(part)
                    if call is not None:
                        calls.append(call)
                        shown.append(f"{call.tool}: {call.status}\n{call.output}")
            error = info.get("error")
            if error:
                shown.append(f"error: {_text(error)[:2000]}")
        return Turn(
            question_sent=True,
            confirmations=confirmations,
            calls=calls,
            answer="\n".join(answer),
            text="\n".join(shown),
        )

    def _pending(self, request: str) -> bool:
        """Whether permission request `request` still waits for an answer. When the person
        rejects a call, opencode rejects the other calls of the turn waiting beside it (the
        turn ends), so their requests are gone before the person could see them."""
        waiting = self._serve.request("GET", "/permission", None, RPC_BOUND)
        if not isinstance(waiting, list):
            return True
        return any(isinstance(w, dict) and str(w.get("id")) == request for w in waiting)

    def _messages(self) -> list[dict[str, Any]]:
        found = self._serve.request("GET", f"/session/{self.session_id}/message", None, RPC_BOUND)
        return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []

    @staticmethod
    def _confirmation(request: dict[str, Any]) -> Confirmation:
        """A permission request as opencode's terminal UI shows it: the tool's name, no
        arguments (an MCP tool's request carries none), the menu with "Allow once" selected."""
        tool = str(request.get("permission", ""))
        text = f"Call tool {tool}\nTool: {tool}\n" + "  ".join(
            f"[{entry}]" if entry == DEFAULT_ENTRY else entry for entry in MENU
        )
        return Confirmation(
            server="",
            destination="",
            tool=tool,
            arguments="",
            warning="",
            text=text,
            choices=tuple(MENU),
            default=DEFAULT_ENTRY,
        )

    @staticmethod
    def _choose(answer: str) -> str:
        """The menu entry a person picks: Enter the selected one, "y" the one that approves
        this call, anything else the one that refuses it."""
        entry = DEFAULT_ENTRY if answer == "" else APPROVE_ENTRY if answer == "y" else REFUSE_ENTRY
        return MENU[entry]

    @staticmethod
    def _call(part: dict[str, Any]) -> CallResult | None:
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        status = state.get("status")
        tool = str(part.get("tool", ""))
        if status == "completed":
            return CallResult(tool, "completed", _text(state.get("output", "")))
        if status == "error":
            error = _text(state.get("error", ""))
            return CallResult(tool, "denied" if REJECTED in error else "failed", error)
        return None  # pending or running when the turn ended: nothing was shown as its outcome

    def cancel(self) -> None:
        """Interrupt the turn in flight, as Esc does in opencode's terminal UI."""
        if not self._busy:
            return
        try:
            self._serve.request("POST", f"/session/{self.session_id}/abort", {}, RPC_BOUND)
        except OpencodeError as exc:
            raise AdapterError(f"opencode: {exc}") from None

    def stop(self) -> Stopped:
        if self._stopped is None:
            self._serve.close(STOP_GRACE)
            data = self._home / ".local" / "share" / "opencode"
            files = sorted(data.glob("opencode.db*")) + sorted((data / "storage").rglob("*.json"))
            self._stopped = Stopped(session_id=self.session_id, session_files=files, text="")
        return self._stopped


class Adapter:
    """`mcp_host_conformance.harness.contract.adapter.Adapter` for opencode through
    `opencode serve`."""

    def describe(self) -> Description:
        return Description(
            name="opencode",
            version=opencode.version(),
            # opencode's defaults: a server's connection 30 s (its UD=30000), a request the
            # MCP TypeScript SDK's 60 s when no timeout is configured
            connect_timeout=30.0,
            call_timeout=60.0,
            can_cancel=True,
            # remote servers get an OAuth provider unless their entry says "oauth": false
            has_oauth=True,
        )

    def _run(self, home: Path, args: list[str]) -> Shown:
        try:
            status, printed = opencode.run_opencode(home, args)
        except (OSError, FileNotFoundError) as exc:
            raise AdapterError(f"cannot run opencode: {exc}") from None
        if status != 0:
            raise AdapterError(f"opencode {' '.join(args[:2])} failed (exit {status}): {printed}")
        path = opencode.config_path(home)
        return Shown(printed, [path] if path.exists() else [])

    def project_config(self, servers: Sequence[ServerConfig]) -> dict[str, str]:
        """A project's own opencode configuration, `opencode.json` at its root, in the shape
        opencode's documentation gives (its `mcp` table, entries as `opencode mcp add` writes
        them): the lure CFG-2 plants for opencode, which merges a project's file over the
        global one."""
        return {
            "opencode.json": json.dumps(
                {
                    "$schema": "https://opencode.ai/config.json",
                    "mcp": {s.name: _entry(s) for s in servers},
                },
                indent=2,
            )
        }

    def add_server(self, home: Path, server: ServerConfig) -> Shown:
        """The first server with `opencode mcp add`, which makes the configuration file (its
        place, format and mode are opencode's); the others added to that file in the shape
        the command writes, as opencode's documentation shows a user configuring servers (a
        command per server costs seconds: opencode is a Bun executable of 180 MB)."""
        if isinstance(server, HttpServer):
            args = ["--url", server.url]
            args += [a for k, v in server.headers.items() for a in ("--header", f"{k}={v}")]
        else:
            args = [a for k, v in server.env.items() for a in ("--env", f"{k}={v}")]
            args += ["--", server.command, *server.args]
        if not opencode.config_path(home).exists():
            return self._run(home, ["mcp", "add", server.name, *args])
        try:
            path = opencode.add_entry(home, server.name, _entry(server))
        except OSError as exc:
            raise AdapterError(f"cannot edit opencode's configuration: {exc}") from None
        return Shown("", [path])

    def remove_server(self, home: Path, name: str) -> Shown:
        try:
            path = opencode.remove_server(home, name)
        except OSError as exc:
            raise AdapterError(f"cannot edit opencode's configuration: {exc}") from None
        return Shown(f"removed {name}", [path])

    def list_servers(self, home: Path) -> Shown:
        return self._run(home, ["mcp", "list"])

    def start(self, options: StartOptions) -> Session:
        return Session(options)


def _entry(server: ServerConfig) -> dict[str, Any]:
    """A server as `opencode mcp add` writes it in opencode's configuration."""
    if isinstance(server, HttpServer):
        entry: dict[str, Any] = {"type": "remote", "url": server.url}
        if server.headers:
            entry["headers"] = dict(server.headers)
        return entry
    entry = {"type": "local", "command": [server.command, *server.args]}
    if server.env:
        entry["environment"] = dict(server.env)
    return entry
