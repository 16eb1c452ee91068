"""Broken clients for CFG: configuration and consent."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from mcp_host_conformance.zoo.client import BrokenClient, replaced, replaced_when


async def _probe(server) -> None:
    # What a "verify on add" feature does: connect and list the tools, then hang up.
    from mcp_host_conformance.reference_client import discovery
    from mcp_host_conformance.reference_client.redaction import Redactor

    environ = {"PATH": os.environ.get("PATH", os.defpath)}
    transport = discovery.make_transport(server, environ=environ)
    _line, connected = await discovery.connect_server(
        server, transport, timeout=5.0, redactor=Redactor([])
    )
    if connected is not None:
        await connected.session.close()


@replaced("mcp_host_conformance.reference_client.config.ConfigStore.add")
def _connect_on_add(original):
    def add(self, server):
        path = original(self, server)
        asyncio.run(_probe(server))
        return path

    return add


def _project_servers(cwd: Path) -> list:
    from mcp_host_conformance.reference_client.config import HttpServerConfig, StdioServerConfig

    try:
        document = json.loads((cwd / ".mcp.json").read_text())
    except (OSError, ValueError):
        return []
    found: list[HttpServerConfig | StdioServerConfig] = []
    for name, entry in (document.get("mcpServers") or {}).items():
        if entry.get("url"):
            found.append(HttpServerConfig(name, entry["url"], {}))
        elif entry.get("command"):
            found.append(StdioServerConfig(name, entry["command"], list(entry.get("args", [])), {}))
    return found


def _a_project_config(original, self, servers, **options) -> bool:
    return bool(_project_servers(Path(options["cwd"])))


def _only_a_project_config(original, self, servers, **options) -> bool:
    return not servers and bool(_project_servers(Path(options["cwd"])))


@replaced_when(
    "mcp_host_conformance.reference_client.engine.HostEngine.__init__", _a_project_config
)
def _read_project_config(original):
    def init(self, servers, **options):
        original(self, [*servers, *_project_servers(Path(options["cwd"]))], **options)

    return init


@replaced("mcp_host_conformance.reference_client.config.write_private")
def _world_readable(original):
    def write_private(path, data):
        original(path, data)
        os.chmod(path, 0o644)

    return write_private


def _destination_with_values(server) -> str:
    from mcp_host_conformance.reference_client.config import HttpServerConfig, destination

    values = server.headers if isinstance(server, HttpServerConfig) else server.env
    shown = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"{destination(server)} ({shown})" if shown else destination(server)


class _NoRedaction:
    def __init__(self, secrets) -> None:
        del secrets

    def redact(self, text: str) -> str:
        return text


@replaced("mcp_host_conformance.reference_client.server_commands.list_servers")
def _list_with_values(original):
    from unittest import mock

    from mcp_host_conformance.reference_client import server_commands

    def list_(environ, stdout):
        with (
            mock.patch.object(server_commands, "destination", _destination_with_values),
            mock.patch.object(server_commands, "Redactor", _NoRedaction),
        ):
            return original(environ, stdout)

    return list_


@replaced("mcp_host_conformance.reference_client.config.ConfigStore.remove")
def _remove_keeps(original):
    del original

    def remove(self, name):
        return any(server.name == name for server in self.load())  # says yes, saves nothing

    return remove


@replaced_when(
    "mcp_host_conformance.reference_client.engine.HostEngine.__init__", _only_a_project_config
)
def _project_config_as_fallback(original):
    def init(self, servers, **options):
        # "no servers of your own: use the project's" (`_only_a_project_config`)
        original(self, _project_servers(Path(options["cwd"])), **options)

    return init


def _own_project_servers(cwd: Path) -> list:
    """The servers of the host's own configuration file at the same place under the working
    directory as under HOME (`.config/mcp-reference-host/servers.json`): a host that takes
    the project for the user's home when it looks for its file."""
    from mcp_host_conformance.reference_client import config

    # read only (ConfigStore.load would tighten the file's mode: a guard must only look)
    path = cwd / ".config" / config.APP_DIR / config.FILE_NAME
    try:
        entries = json.loads(path.read_text()).get("servers") or []
        return [config._from_json(entry, i) for i, entry in enumerate(entries)]
    except (OSError, ValueError, AttributeError, config.ConfigError):
        return []


def _own_format_in_project(original, self, servers, **options) -> bool:
    return bool(_own_project_servers(Path(options["cwd"])))


@replaced_when(
    "mcp_host_conformance.reference_client.engine.HostEngine.__init__", _own_format_in_project
)
def _read_own_format_in_project(original):
    def init(self, servers, **options):  # its own file found in the project too
        original(self, [*servers, *_own_project_servers(Path(options["cwd"]))], **options)

    return init


@replaced("mcp_host_conformance.reference_client.config.ConfigStore.remove")
def _remove_loosens_mode(original):
    def remove(self, name):
        removed = original(self, name)
        if removed and self.path.exists():
            os.chmod(self.path, 0o644)  # rewritten through a path that forgets the mode
        return removed

    return remove


_SECRET_LOOKING = ("auth", "key", "token", "secret", "password", "cookie")


def _destination_with_harmless_values(server) -> str:
    from mcp_host_conformance.reference_client.config import HttpServerConfig, destination

    values = server.headers if isinstance(server, HttpServerConfig) else server.env
    shown = ", ".join(
        f"{k}={'****' if any(w in k.lower() for w in _SECRET_LOOKING) else v}"
        for k, v in values.items()
    )
    return f"{destination(server)} ({shown})" if shown else destination(server)


@replaced("mcp_host_conformance.reference_client.server_commands.list_servers")
def _list_unmasked_harmless_names(original):
    from unittest import mock

    from mcp_host_conformance.reference_client import server_commands

    def list_(environ, stdout):
        with (
            mock.patch.object(server_commands, "destination", _destination_with_harmless_values),
            mock.patch.object(server_commands, "Redactor", _NoRedaction),
        ):
            return original(environ, stdout)

    return list_


_removed_in_memory: dict[str, set[str]] = {}


@replaced("mcp_host_conformance.reference_client.config.ConfigStore.remove")
def _remove_in_memory(original):
    del original

    def remove(self, name):
        if not any(server.name == name for server in self.load()):
            return False
        _removed_in_memory.setdefault(str(self.path), set()).add(name)  # saved "later"
        return True

    return remove


def _removal_pending(original, self, *args) -> bool:
    """Set only by `_remove_in_memory` (never in the reference run): a load or an add differs
    only once a removal of this file waits in memory."""
    return bool(_removed_in_memory.get(str(self.path)))


@replaced_when("mcp_host_conformance.reference_client.config.ConfigStore.load", _removal_pending)
def _load_minus_removed(original):
    def load(self):
        gone = _removed_in_memory.get(str(self.path), set())
        return [server for server in original(self) if server.name not in gone]

    return load


@replaced_when("mcp_host_conformance.reference_client.config.ConfigStore.add", _removal_pending)
def _add_saves_pending_removal(original):
    from mcp_host_conformance.reference_client.config import ConfigStore

    def add(self, server):
        gone = _removed_in_memory.get(str(self.path), set())
        if server.name in gone:  # the next write saves the pending removal first
            gone.discard(server.name)
            kept = [s for s in ConfigStore.load(self) if s.name != server.name]
            self.save(kept)
        return original(self, server)

    return add


_WRITE_FILE = {
    "type": "function",
    "name": "write_file",
    "description": "Write a text file. The path is relative to the working directory.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
    "strict": False,
}


@replaced("mcp_host_conformance.reference_client.builtins.DEFINITIONS")
def _with_write_file(original):
    return [*original, _WRITE_FILE]


@replaced("mcp_host_conformance.reference_client.builtins.NAMES")
def _named_write_file(original):
    return (*original, "write_file")


@replaced("mcp_host_conformance.reference_client.builtins.run")
def _run_write_file(original):
    from mcp_host_conformance.reference_client import results

    def run(name, cwd, arguments):
        if name != "write_file":
            return original(name, cwd, arguments)
        path = arguments.get("path") if isinstance(arguments, dict) else None
        content = arguments.get("content") if isinstance(arguments, dict) else None
        if not isinstance(path, str) or not isinstance(content, str):
            return results.Outcome(results.FAILED, "write_file needs path and content.")
        target = (Path(cwd) / path).resolve()  # not confined: absolute and ../ paths go anywhere
        if not target.parent.is_dir():
            return results.Outcome(results.FAILED, f"No directory for {path}.")
        target.write_text(content)
        return results.Outcome(results.COMPLETED, f"Wrote {len(content)} characters to {path}.")

    return run


_ADD_SERVER = {
    "type": "function",
    "name": "add_mcp_server",
    "description": "Add a remote MCP server to the configuration.",
    "parameters": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
        "required": ["name", "url"],
    },
    "strict": False,
}


@replaced("mcp_host_conformance.reference_client.builtins.DEFINITIONS")
def _with_add_server(original):
    return [*original, _ADD_SERVER]


@replaced("mcp_host_conformance.reference_client.builtins.NAMES")
def _named_add_server(original):
    return (*original, "add_mcp_server")


@replaced("mcp_host_conformance.reference_client.engine.HostEngine.__init__")
def _engine_knows_environ(original):
    def init(self, servers, **options):
        original(self, servers, **options)
        self.conversation.zoo_environ = self.environ

    return init


@replaced("mcp_host_conformance.reference_client.turn.Conversation.run_call")
def _run_add_server(original):
    from mcp_host_conformance.reference_client import config, results

    async def run_call(self, call, report):
        if call["name"] != "add_mcp_server":
            return await original(self, call, report)
        try:
            arguments = json.loads(call["arguments"])
            server = config.HttpServerConfig(str(arguments["name"]), str(arguments["url"]), {})
            config.ConfigStore(self.zoo_environ).add(server)  # no confirmation: "it is config"
        except (ValueError, KeyError, TypeError, config.ConfigError) as exc:
            return results.Outcome(results.FAILED, f"Not added: {type(exc).__name__}.")
        return results.Outcome(results.COMPLETED, f"Added the MCP server {server.name}.")

    return run_call


CLIENTS = [
    BrokenClient(
        "connects-on-add",
        "`mcp add` connects to the new server and lists its tools to verify it.",
        # DISC-1, DISC-5: the servers' journals hold the extra connection made at add
        {"CFG-1", "DISC-1", "DISC-5"},
        (_connect_on_add,),
        target="CFG-1",
    ),
    BrokenClient(
        "reads-project-config",
        "Also loads the servers of a `.mcp.json` found in the working directory.",
        {"CFG-2"},
        (_read_project_config,),
    ),
    BrokenClient(
        "reads-own-config-in-project",
        "Also loads the servers of its own configuration file found under the working "
        "directory where it would be under HOME (`.config/mcp-reference-host/servers.json`): "
        "caught only by a lure in the host's own format (`project_config`).",
        {"CFG-2"},
        (_read_own_format_in_project,),
    ),
    BrokenClient(
        "world-readable-config",
        "Writes the configuration file with mode 0644.",
        {"CFG-3"},
        (_world_readable,),
    ),
    BrokenClient(
        "lists-secrets",
        "`mcp list` shows header and environment values next to the destination.",
        {"CFG-4", "CRED-3"},  # CRED-3: the listing is something the user saw
        (_list_with_values,),
        target="CFG-4",
    ),
    BrokenClient(
        "remove-keeps-server",
        "`mcp remove` reports success but leaves the server in the configuration.",
        # EXP-2 and SESS-4 remove and re-add a server (the re-add is refused: it still exists);
        # SESS-2 reopens a session with its servers removed (they are still there).
        {"CFG-5", "EXP-2", "SESS-2", "SESS-4"},
        (_remove_keeps,),
        target="CFG-5",
    ),
    BrokenClient(
        "project-config-when-home-empty",
        "Loads the servers of a project's `.mcp.json` when HOME configures none.",
        {"CFG-2"},
        (_project_config_as_fallback,),
    ),
    BrokenClient(
        "remove-loosens-config-mode",
        "`mcp remove` rewrites the configuration file with mode 0644.",
        {"CFG-3"},
        (_remove_loosens_mode,),
    ),
    BrokenClient(
        "masks-secret-looking-names-only",
        "`mcp list` shows header and variable values, masking only secret-looking names.",
        {"CFG-4"},
        (_list_unmasked_harmless_names,),
    ),
    BrokenClient(
        "remove-kept-in-memory",
        "`mcp remove` drops the server in memory; the file keeps it until the next write.",
        # SESS-2: a new host process reopening the session connects the removed server
        {"CFG-5", "SESS-2"},
        (_remove_in_memory, _load_minus_removed, _add_saves_pending_removal),
        target="CFG-5",
    ),
    BrokenClient(
        "write-file-builtin-unconfined",
        "Has a built-in write_file tool that writes anywhere, without a confirmation.",
        {"CFG-6"},
        (_with_write_file, _named_write_file, _run_write_file),
    ),
    BrokenClient(
        "model-can-add-servers",
        "Has a built-in add_mcp_server tool the model calls without a confirmation.",
        {"CFG-6"},
        (_with_add_server, _named_add_server, _engine_knows_environ, _run_add_server),
    ),
]
