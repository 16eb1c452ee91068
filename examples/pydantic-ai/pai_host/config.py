"""The host's configuration: the `mcpServers` JSON file pydantic-ai reads, under the user's HOME.

Strategy: pydantic-ai has no configuration file or commands of its own; what it documents is the
`mcpServers` shape Claude Desktop, Claude Code and Cursor share, which its `load_mcp_toolsets`
reads. So the host keeps its servers in that shape at `$HOME/.pydantic-ai-host/mcp.json`,
written with `json.dump` and the process's default file mode: nothing about file modes or
redaction is added, and the suite reports what that costs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIG_DIR = ".pydantic-ai-host"
CONFIG_FILE = "mcp.json"


def config_path(home: Path) -> Path:
    return home / CONFIG_DIR / CONFIG_FILE


def load(home: Path) -> dict[str, dict[str, Any]]:
    """Server name -> {"url", "headers"} | {"command", "args", "env"}."""
    path = config_path(home)
    if not path.exists():
        return {}
    servers = json.loads(path.read_text("utf-8")).get("mcpServers", {})
    return servers if isinstance(servers, dict) else {}


def save(home: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path = config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}, indent=2), "utf-8")
    return path


def destination(server: dict[str, Any]) -> str:
    if "command" in server:
        return " ".join([server["command"], *(server.get("args") or [])])
    return str(server.get("url", ""))
