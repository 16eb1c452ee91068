"""The conformance adapter for fast-agent (`--client fa_adapter.adapter:Adapter`).

Strategy: translate, never decide. fast-agent reads its MCP servers from `fast-agent.yaml`
in its home and has no command that changes it (a user edits the file), so the adapter
writes that file under `$HOME/.fast-agent`, the home given by `FAST_AGENT_HOME` (without it
fast-agent would take `.fast-agent` under the working directory: the project's). The file
is written as JSON, which is YAML too, so the adapter reads it back without a YAML library;
`fast-agent config show-mcp` lists it. A started host is one `fast-agent acp` process
(fast-agent as an Agent Client Protocol agent over its stdio, the way an editor such as Zed
runs it; the interactive `fast-agent go` never asks before a call, the ACP agent does) from
the pinned virtual environment (install.py), with every configured server enabled
(`--servers`), the mock model as fast-agent's `generic` provider (Chat Completions, the
OpenAI-compatible one) given through its environment variables, its transient-error retries
off (`FAST_AGENT_RETRIES=0`, so a scripted model error is one request), and the suite's call
timeout as each server's `read_timeout_seconds` (a whole number of seconds, as its setting
takes, rounded up). The adapter is the ACP client, the editor: it shows each
`session/request_permission` as the menu of options fast-agent sends, with no entry
selected (an editor shows them as buttons), and answers with the option the person picks:
"y" Allow Once, any other text Reject Once, Enter (no pick) a dismissed prompt, which ACP
sends as `cancelled`. Tool calls and the answer are read from the `session/update`
notifications. Nothing is renamed, labelled, retried or limited here.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fa_adapter.acp import Acp, AcpError
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

EXAMPLE = Path(__file__).resolve().parent.parent
MODEL = "generic.mock-model"
RPC_BOUND = 60.0  # one ACP request; fast-agent imports for seconds before it answers
TURN_QUIET_BOUND = 300.0  # a turn; the harness's own bound is shorter
STOP_GRACE = 10.0
COMMAND_BOUND = 60.0
# fast-agent's texts for a call the person did not allow: refused (a "Reject" option), or a
# dismissed prompt (ACP's `cancelled`, `ToolPermissionResult.cancelled()`)
DENIALS = ("The user has declined permission to use this tool", "Permission request cancelled")
# Not inherited from the harness's environment: fast-agent's own settings and model keys.
_DROPPED = ("FAST_AGENT_", "OPENAI_", "ANTHROPIC_", "GENERIC_", "GOOGLE_", "HF_TOKEN")


def fast_agent_binary() -> Path:
    """fast-agent of the pinned virtual environment (or `$FAST_AGENT_BIN`)."""
    chosen = os.environ.get("FAST_AGENT_BIN")
    found = Path(chosen) if chosen else EXAMPLE / ".venv" / "bin" / "fast-agent"
    if not found.exists():
        raise FileNotFoundError(
            "fast-agent is not installed: run `python examples/fast-agent/install.py` "
            "(or set FAST_AGENT_BIN)"
        )
    return found


def agent_home(home: Path) -> Path:
    return home / ".fast-agent"


def config_path(home: Path) -> Path:
    return agent_home(home) / "fast-agent.yaml"


def load(home: Path) -> dict[str, Any]:
    try:
        data = json.loads(config_path(home).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def servers_of(config: dict[str, Any]) -> dict[str, Any]:
    servers = (config.get("mcp") or {}).get("servers") if isinstance(config, dict) else None
    return servers if isinstance(servers, dict) else {}


def save(home: Path, config: dict[str, Any]) -> Path:
    """Write the configuration as a user saves a file (the process's default mode)."""
    path = config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n", "utf-8")
    return path


def environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    env["HOME"] = str(home)
    env["FAST_AGENT_HOME"] = str(agent_home(home))
    env.update(extra)
    return env


def _content_text(content: Any) -> str:
    """An ACP tool call's content as an editor shows it: text as is, others as JSON."""
    parts = []
    for item in content if isinstance(content, list) else []:
        block = item.get("content") if isinstance(item, dict) else None
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif item is not None:
            parts.append(json.dumps(item, ensure_ascii=False))
    return "\n".join(parts)


class Session:
    """One running `fast-agent acp` with one ACP session."""

    def __init__(self, options: StartOptions) -> None:
        self._approve: Approver | None = None
        self._turn_lock = threading.Lock()
        self._stopped: Stopped | None = None
        self._home = options.home
        self._confirmations: list[Confirmation] = []
        self._shown: list[str] = []
        config = load(options.home)
        servers = servers_of(config)
        if servers:
            read_timeout = max(1, math.ceil(options.call_timeout))
            for entry in servers.values():
                if isinstance(entry, dict):
                    entry["read_timeout_seconds"] = read_timeout
            save(options.home, config)
        extra = {
            **options.env,
            "GENERIC_API_KEY": options.model_key,
            "GENERIC__BASE_URL": options.model_url,
            "FAST_AGENT_RETRIES": "0",
        }
        if options.ca_file is not None:
            extra["SSL_CERT_FILE"] = str(options.ca_file)
        try:
            argv = [str(fast_agent_binary()), "--no-update-check", "acp", "--model", MODEL]
        except FileNotFoundError as exc:
            raise AdapterError(str(exc)) from None
        if servers:
            argv += ["--servers", ",".join(servers)]
        self._acp = Acp(
            argv, env=environment(options.home, extra), cwd=options.cwd, on_request=self._on_request
        )
        try:
            self._begin(options)
        except AcpError as exc:
            self._acp.close(STOP_GRACE)
            hint = self._acp.stderr_hint()  # what fast-agent printed about it (its log's end)
            raise AdapterError(f"fast-agent did not start a session: {exc}{hint}") from None
        # fast-agent shows no server status over ACP; it answers `session/new` only once
        # every enabled server has started (one that fails fails the session), so each is
        # reported connected, with no tool count and no line
        self.statuses = [ServerStatus(name, True) for name in servers]
        self.text = ""

    def _begin(self, options: StartOptions) -> None:
        bound = RPC_BOUND + 2 * options.connect_timeout
        self._acp.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
                "clientInfo": {"name": "mcp_host_conformance", "version": "1"},
            },
            bound,
        )
        params: dict[str, Any] = {"cwd": str(options.cwd), "mcpServers": []}
        if options.resume:
            params["sessionId"] = options.resume
            self._acp.request("session/load", params, bound)
            self.session_id = options.resume
        else:
            result = self._acp.request("session/new", params, bound)
            self.session_id = str((result or {})["sessionId"])

    # ---- permission requests (the editor's side) ----------------------------------------------

    def _on_request(self, method: str, params: Any) -> Any:
        params = params if isinstance(params, dict) else {}
        if method != "session/request_permission":
            raise AcpError(f"the conformance adapter does not answer {method}")
        approve = self._approve
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        title = str(call.get("title", ""))
        server, _, tool = title.partition("/")
        raw = call.get("rawInput")
        arguments = json.dumps(raw, indent=2, ensure_ascii=False) if raw is not None else ""
        labels = tuple(str(o.get("name", "")) for o in options)
        text = f"{title}\n{arguments}\n" + "  ".join(f"[{label}]" for label in labels)
        confirmation = Confirmation(
            server=server if tool else "",
            destination="",
            tool=tool or title,
            arguments=arguments,
            warning="",
            text=text,
            choices=labels,
            default=None,
        )
        self._confirmations.append(confirmation)
        self._shown.append(text)
        answer = approve(confirmation) if approve is not None else ""
        if answer == "":
            return {"outcome": {"outcome": "cancelled"}}
        kind = "allow_once" if answer == "y" else "reject_once"
        chosen = next((o for o in options if o.get("kind") == kind), None)
        if chosen is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}

    # ---- a turn -------------------------------------------------------------------------------

    def ask(self, question: str, approve: Approver, acknowledge: Acknowledger) -> Turn:
        with self._turn_lock:
            self._approve = approve
            self._confirmations, self._shown = [], []
            try:
                return self._turn(question)
            except AcpError as exc:
                raise AdapterError(f"fast-agent: {exc}") from None
            finally:
                self._approve = None

    def _turn(self, question: str) -> Turn:
        since = len(self._acp.notifications)
        result = self._acp.request(
            "session/prompt",
            {"sessionId": self.session_id, "prompt": [{"type": "text", "text": question}]},
            TURN_QUIET_BOUND,
        )
        calls: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        answer: list[str] = []
        for message in self._acp.notifications[since:]:
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            if message.get("method") != "session/update" or params.get("sessionId") != (
                self.session_id
            ):
                continue
            update = params.get("update") if isinstance(params.get("update"), dict) else {}
            kind = update.get("sessionUpdate")
            if kind == "agent_message_chunk":
                content = update.get("content") if isinstance(update.get("content"), dict) else {}
                if content.get("type") == "text":
                    answer.append(str(content.get("text", "")))
            elif kind in ("tool_call", "tool_call_update"):
                ident = str(update.get("toolCallId", ""))
                if ident not in calls:
                    calls[ident] = {}
                    order.append(ident)
                calls[ident].update({k: v for k, v in update.items() if v is not None})
        results = [r for r in (self._call(calls[i]) for i in order) if r is not None]
        for call in results:
            self._shown.append(f"{call.tool}: {call.status}\n{call.output}")
        text = "".join(answer)
        self._shown.append(text)
        stop = (result or {}).get("stopReason") if isinstance(result, dict) else None
        if stop not in (None, "end_turn"):
            self._shown.append(f"({stop})")
        return Turn(
            question_sent=True,
            confirmations=list(self._confirmations),
            calls=results,
            answer=text,
            text="\n".join(self._shown),
        )

    @staticmethod
    def _call(update: dict[str, Any]) -> CallResult | None:
        status = update.get("status")
        title = str(update.get("title", ""))
        output = _content_text(update.get("content"))
        if status == "completed":
            return CallResult(title, "completed", output)
        if status == "failed":
            denied = any(text in output for text in DENIALS)
            return CallResult(title, "denied" if denied else "failed", output)
        return None  # pending or in progress when the turn ended: no outcome was shown

    def cancel(self) -> None:
        """Interrupt the turn in flight, as an editor's stop button does (`session/cancel`)."""
        try:
            self._acp.notify("session/cancel", {"sessionId": self.session_id})
        except AcpError as exc:
            raise AdapterError(f"fast-agent: {exc}") from None

    def stop(self) -> Stopped:
        if self._stopped is None:
            self._acp.close(STOP_GRACE)
            sessions = sorted((agent_home(self._home) / "sessions").rglob("*"))
            files = [p for p in sessions if p.is_file()]
            self._stopped = Stopped(session_id=self.session_id, session_files=files, text="")
        return self._stopped


class Adapter:
    """`mcp_host_conformance.harness.contract.adapter.Adapter` for fast-agent through
    `fast-agent acp`."""

    def describe(self) -> Description:
        return Description(
            name="fast-agent",
            version=_version(),
            # fast-agent's defaults: 10 s to start each server (MCPAttachOptions), no read
            # timeout on a stdio session, 300 s on an HTTP read (client_gateway.py)
            connect_timeout=10.0,
            call_timeout=300.0,
            can_cancel=True,
        )

    def project_config(self, servers: Sequence[ServerConfig]) -> dict[str, str]:
        """A project's fast-agent configuration in fast-agent's shape, where it reads one:
        `fast-agent.yaml` in the working directory (read when its home holds none) and
        `.fast-agent/fast-agent.yaml` (its home when `FAST_AGENT_HOME` is unset). Only the
        preferred file name: two of its names in one directory make fast-agent refuse to
        start, which would hide whether it reads them."""
        document = {"mcp": {"servers": {s.name: _entry(s) for s in servers}}}
        text = json.dumps(document, indent=2) + "\n"
        return {"fast-agent.yaml": text, ".fast-agent/fast-agent.yaml": text}

    def add_server(self, home: Path, server: ServerConfig) -> Shown:
        config = load(home)
        servers = config.setdefault("mcp", {}).setdefault("servers", {})
        servers[server.name] = _entry(server)
        return Shown(f"added {server.name}", [save(home, config)])

    def remove_server(self, home: Path, name: str) -> Shown:
        config = load(home)
        servers_of(config).pop(name, None)
        return Shown(f"removed {name}", [save(home, config)])

    def list_servers(self, home: Path) -> Shown:
        try:
            done = subprocess.run(
                [str(fast_agent_binary()), "--no-update-check", "config", "show-mcp"],
                env=environment(home, {}),
                cwd=home,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=COMMAND_BOUND,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AdapterError(f"cannot run fast-agent: {exc}") from None
        printed = (done.stdout + done.stderr).strip()
        if done.returncode != 0:
            raise AdapterError(f"fast-agent config show-mcp failed: {printed}")
        return Shown(printed)

    def start(self, options: StartOptions) -> Session:
        return Session(options)


def _version() -> str:
    metadata = sorted((EXAMPLE / ".venv" / "lib").glob("python3*/site-packages/fast_agent_mcp-*"))
    return metadata[-1].name.split("-")[1].removesuffix(".dist") if metadata else "unknown"


def _entry(server: ServerConfig) -> dict[str, Any]:
    """A server as fast-agent's configuration holds it (`mcp.servers.NAME`)."""
    if isinstance(server, HttpServer):
        return {"transport": "http", "url": server.url, "headers": dict(server.headers)}
    return {
        "transport": "stdio",
        "command": server.command,
        "args": list(server.args),
        "env": dict(server.env),
    }
