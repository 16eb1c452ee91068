"""The conformance adapter for OpenAI Codex CLI (`--client codex_adapter.adapter:Adapter`).

Strategy: translate, never decide. Configuration goes through Codex's own `codex mcp`
commands (and, for static headers, which no command sets, an edit of the server's entry in
`~/.codex/config.toml`). A started host is one `codex app-server` process (Codex's
JSON-RPC interface, the one its IDE extension uses) in the case's HOME and working
directory, with the mock model as a Responses-API provider given through Codex's `-c`
config overrides (retries off: `request_max_retries` and `stream_max_retries` 0) and the
suite's timeouts as each server's `startup_timeout_sec` / `tool_timeout_sec`. Everything
the user would see comes from Codex's messages: server startup states and tool counts,
approval requests, tool call items, agent messages. An approval request is shown as Codex's
own terminal UI shows it (a menu: Approve Once, Approve this session, Always allow, Cancel,
the first one selected), and the person's answer picks from that menu (`menu.py`). Nothing
is renamed, labelled, retried or limited here.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codex_adapter import codex
from codex_adapter.appserver import AppServer, AppServerError
from codex_adapter.menu import approval_menu, chosen_response
from mcp_host_conformance.harness.contract.adapter import (
    Acknowledger,
    AdapterError,
    Approver,
    CallResult,
    Confirmation,
    Description,
    HttpServer,
    ServerConfig,
    ServerStatus,
    Shown,
    StartOptions,
    Stopped,
    Turn,
)

__all__ = ["Adapter", "Session"]

PROVIDER = "mcphc"
MODEL = "mcphc-mock-model"
MODEL_KEY_ENV = "MCPHC_MODEL_KEY"
FINAL_STARTUP = ("ready", "failed", "cancelled")
RPC_BOUND = 30.0  # one app-server request
TURN_QUIET_BOUND = 300.0  # silence within a turn; the harness's own bound is shorter
STOP_GRACE = 10.0
DEFAULT_STARTUP_TIMEOUT = 10.0  # Codex's documented startup_timeout_sec
BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml(value: Any) -> str:
    """A TOML value for a `-c key=value` override (JSON strings, numbers, booleans and
    inline tables of them are TOML too)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _overrides(options: StartOptions, servers: list[str]) -> list[str]:
    provider = {
        "name": "mcp-host-conformance mock model",
        "base_url": options.model_url,
        "env_key": MODEL_KEY_ENV,
        "wire_api": "responses",
        "request_max_retries": 0,
        "stream_max_retries": 0,
    }
    pairs: list[tuple[str, Any]] = [
        ("model", MODEL),
        ("model_provider", PROVIDER),
        (f"model_providers.{PROVIDER}", provider),
    ]
    for name in servers:
        if not BARE_KEY.fullmatch(name):
            continue  # Codex's dotted override paths take bare keys only (and so do its names)
        key = f"mcp_servers.{name}"
        # a timeout the suite leaves to the host (None) is Codex's own default: not set
        if options.connect_timeout is not None:
            pairs.append((f"{key}.startup_timeout_sec", float(options.connect_timeout)))
        if options.call_timeout is not None:
            pairs.append((f"{key}.tool_timeout_sec", float(options.call_timeout)))
    args: list[str] = []
    for key, value in pairs:
        args += ["-c", f"{key}={_toml(value)}"]
    return args


def _content_text(content: Any) -> str:
    """A tool result's content blocks as a UI shows them: text as is, others as JSON."""
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


class Session:
    """One running Codex (`codex app-server`) with one thread."""

    def __init__(self, options: StartOptions) -> None:
        self._approve: Approver | None = None
        self._turn_lock = threading.Lock()
        self._confirmations: list[Confirmation] = []
        self._shown: list[str] = []
        self._turn_id: str | None = None
        self._stopped: Stopped | None = None
        self._home = options.home
        servers = list(codex.configured_servers(options.home))
        env = codex.codex_env(options.home, {**options.env, MODEL_KEY_ENV: options.model_key})
        if options.ca_file is not None:
            env["CODEX_CA_CERTIFICATE"] = str(options.ca_file)
        try:
            argv = [str(codex.codex_binary()), "app-server", *_overrides(options, servers)]
        except FileNotFoundError as exc:
            raise AdapterError(str(exc)) from None
        self._server = AppServer(argv, env=env, cwd=options.cwd, on_request=self._on_request)
        try:
            self._begin(options, servers)
        except AppServerError as exc:
            self._server.close(STOP_GRACE)
            raise AdapterError(f"codex app-server failed to start a thread: {exc}") from None

    # ---- start ------------------------------------------------------------------------------

    def _begin(self, options: StartOptions, servers: list[str]) -> None:
        rpc = self._server
        rpc.request(
            "initialize",
            {"clientInfo": {"name": "mcp_host_conformance", "version": "1"}, "capabilities": None},
            RPC_BOUND,
        )
        rpc.notify("initialized")
        if options.resume:
            result = rpc.request(
                "thread/resume", {"threadId": options.resume, "cwd": str(options.cwd)}, RPC_BOUND
            )
        else:
            result = rpc.request("thread/start", {"cwd": str(options.cwd)}, RPC_BOUND)
        self.thread_id = str(result["thread"]["id"])
        connect = options.connect_timeout
        startup = connect if connect is not None else DEFAULT_STARTUP_TIMEOUT
        states = self._startup_states(servers, 2 * startup + RPC_BOUND)
        ready = [name for name in servers if states.get(name, {}).get("status") == "ready"]
        listed = self._tool_catalogs(ready)  # never for a failed server: that would reconnect
        self.statuses = [self._status(name, states.get(name), listed.get(name)) for name in servers]
        self.text = "\n".join(s.line for s in self.statuses)

    def _startup_states(self, servers: list[str], bound: float) -> dict[str, dict[str, Any]]:
        """Each server's final startup notification (ready, failed or cancelled)."""
        final: dict[str, dict[str, Any]] = {}
        seen = 0

        def is_final(message: dict[str, Any]) -> bool:
            params = message.get("params") or {}
            return (
                message.get("method") == "mcpServer/startupStatus/updated"
                and params.get("name") in servers
                and params.get("status") in FINAL_STARTUP
            )

        while len(final) < len(servers):
            try:
                index = self._server.wait_for(is_final, seen, bound)
            except AppServerError:
                break  # servers without a final state are reported as such
            params = self._server.notifications[index]["params"]
            final[str(params["name"])] = params
            seen = index + 1
        return final

    def _tool_catalogs(self, servers: list[str]) -> dict[str, dict[str, Any]]:
        """Each server's tool catalog, as Codex's `/mcp` view lists it: asked per server with
        the thread's id, so Codex answers from the thread's own connection."""
        catalogs = {}
        for name in servers:
            result = self._server.request(
                "mcpServerStatus/list",
                {"threadId": self.thread_id, "serverName": name, "detail": "toolsAndAuthOnly"},
                RPC_BOUND,
            )
            for entry in (result or {}).get("data", []):
                catalogs[str(entry.get("name"))] = entry
        return catalogs

    @staticmethod
    def _status(name: str, state: dict[str, Any] | None, listed: dict[str, Any] | None) -> Any:
        if state is None:
            return ServerStatus(name, False, reason="no startup state", line=f"{name}: starting")
        status = str(state.get("status"))
        error = state.get("error")
        if status != "ready":
            line = f"{name}: {status}" + (f" ({error})" if error else "")
            return ServerStatus(name, False, reason=str(error or status), line=line)
        tools = len((listed or {}).get("tools") or {})
        origin = (listed or {}).get("httpOrigin")
        line = f"{name}: ready, {tools} tools" + (f" ({origin})" if origin else "")
        return ServerStatus(name, True, tools=tools, destination=origin, line=line)

    # ---- approvals (requests from Codex) ------------------------------------------------------

    def _on_request(self, method: str, params: Any) -> Any:
        params = params if isinstance(params, dict) else {}
        approve = self._approve
        if method == "mcpServer/elicitation/request":
            menu = approval_menu(params)
            if menu is None or approve is None:
                return {"action": "decline", "content": None, "_meta": None}
            confirmation, choices = menu
            self._confirmations.append(confirmation)
            self._shown.append(confirmation.text)
            return chosen_response(approve(confirmation), choices)
        if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
            if approve is None:
                return {"decision": "decline"}
            what = params.get("command") or params.get("reason") or method
            text = f"Codex wants to run: {what}\n[y] yes  [n] no"
            confirmation = Confirmation("", "", str(what), "", "", text)
            self._confirmations.append(confirmation)
            self._shown.append(text)
            answer = approve(confirmation)
            return {"decision": "accept" if answer == "y" else "decline"}
        raise AppServerError(f"the conformance adapter does not answer {method}")

    # ---- a turn -------------------------------------------------------------------------------

    def ask(self, question: str, approve: Approver, acknowledge: Acknowledger) -> Turn:
        with self._turn_lock:
            self._approve = approve
            self._confirmations, self._shown = [], []
            try:
                return self._turn(question)
            except AppServerError as exc:
                raise AdapterError(f"codex: {exc}") from None
            finally:
                self._approve = None
                self._turn_id = None

    def _turn(self, question: str) -> Turn:
        rpc = self._server
        since = len(rpc.notifications)
        result = rpc.request(
            "turn/start",
            {"threadId": self.thread_id, "input": [{"type": "text", "text": question}]},
            RPC_BOUND,
        )
        self._turn_id = str(result["turn"]["id"])
        calls: list[CallResult] = []
        answer: list[str] = []
        while True:
            index = rpc.wait_for(lambda m: m.get("method") in _TURN_EVENTS, since, TURN_QUIET_BOUND)
            since = index + 1
            message = rpc.notifications[index]
            params = message.get("params") or {}
            if message["method"] == "turn/completed":
                turn = params.get("turn") or {}
                error = turn.get("error") or {}
                if error:
                    self._shown.append(f"error: {error.get('message', '')}")
                break
            if message["method"] == "error":
                self._shown.append(f"error: {(params.get('error') or {}).get('message', '')}")
                continue
            item = params.get("item") or {}
            if item.get("type") == "mcpToolCall":
                calls.append(self._call_result(item))
            elif item.get("type") == "agentMessage":
                answer.append(str(item.get("text", "")))
                self._shown.append(str(item.get("text", "")))
        return Turn(
            question_sent=True,
            confirmations=list(self._confirmations),
            calls=calls,
            answer="\n".join(answer),
            text="\n".join(self._shown),
        )

    def _call_result(self, item: dict[str, Any]) -> CallResult:
        status = str(item.get("status"))
        error = item.get("error") or {}
        output = (
            str(error.get("message", ""))
            if error
            else _content_text((item.get("result") or {}).get("content"))
        )
        self._shown.append(f"{item.get('server')}.{item.get('tool')}: {status}\n{output}")
        return CallResult(str(item.get("tool")), status, output)

    def cancel(self) -> None:
        """Interrupt the turn in flight, as Esc does in Codex's terminal UI."""
        turn_id = self._turn_id
        if turn_id is None:
            return
        try:
            self._server.request(
                "turn/interrupt", {"threadId": self.thread_id, "turnId": turn_id}, RPC_BOUND
            )
        except AppServerError as exc:
            raise AdapterError(f"codex: {exc}") from None

    def stop(self) -> Stopped:
        if self._stopped is None:
            self._server.close(STOP_GRACE)
            sessions = sorted((self._home / ".codex" / "sessions").rglob("*.jsonl"))
            self._stopped = Stopped(session_id=self.thread_id, session_files=sessions, text="")
        return self._stopped


_TURN_EVENTS = ("item/completed", "turn/completed", "error")


class Adapter:
    """`mcp_host_conformance.harness.contract.adapter.Adapter` for Codex CLI through
    `codex app-server`."""

    def describe(self) -> Description:
        return Description(
            name="codex",
            version=codex.version(),
            # Codex's documented defaults: startup_timeout_sec 10, tool_timeout_sec 60
            connect_timeout=DEFAULT_STARTUP_TIMEOUT,
            call_timeout=60.0,
            # a project's own Codex configuration (read for trusted projects)
            project_config_files=[".codex/config.toml"],
            can_cancel=True,
        )

    def _run(self, home: Path, args: list[str]) -> Shown:
        try:
            status, printed = codex.run_codex(home, args)
        except (OSError, FileNotFoundError) as exc:
            raise AdapterError(f"cannot run codex: {exc}") from None
        if status != 0:
            raise AdapterError(f"codex {' '.join(args[:2])} failed (exit {status}): {printed}")
        path = codex.config_path(home)
        return Shown(printed, [path] if path.exists() else [])

    def add_server(self, home: Path, server: ServerConfig) -> Shown:
        if isinstance(server, HttpServer):
            shown = self._run(home, ["mcp", "add", server.name, "--url", server.url])
            codex.add_headers(home, server.name, server.headers)
            return shown
        env = [arg for key, value in server.env.items() for arg in ("--env", f"{key}={value}")]
        return self._run(
            home, ["mcp", "add", server.name, *env, "--", server.command, *server.args]
        )

    def remove_server(self, home: Path, name: str) -> Shown:
        return self._run(home, ["mcp", "remove", name])

    def list_servers(self, home: Path) -> Shown:
        return self._run(home, ["mcp", "list"])

    def project_config(self, servers: Sequence[ServerConfig]) -> dict[str, str]:
        """A project's own Codex configuration, `.codex/config.toml`, in Codex's shape (its
        `[mcp_servers.NAME]` tables): the lure CFG-2 plants for Codex."""
        tables = []
        for server in servers:
            tables.append(f"[mcp_servers.{_toml(server.name)}]")
            if isinstance(server, HttpServer):
                tables.append(f"url = {_toml(server.url)}")
            else:
                tables.append(f"command = {_toml(server.command)}")
                tables.append(f"args = {_toml(list(server.args))}")
            tables.append("")
        return {".codex/config.toml": "\n".join(tables)}

    def start(self, options: StartOptions) -> Session:
        return Session(options)
