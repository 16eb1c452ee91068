"""The host's configuration: a JSON file of servers under the user's HOME.

Strategy: what a first version of a host would write: `json.dump` to
`$HOME/.mcp1-host/servers.json` with the process's default file mode. Nothing about
file modes or redaction is added; the suite reports what that costs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIG_DIR = ".mcp1-host"
CONFIG_FILE = "servers.json"


def config_path(home: Path) -> Path:
    return home / CONFIG_DIR / CONFIG_FILE


def load(home: Path) -> dict[str, dict[str, Any]]:
    """Server name -> {"type": "http", "url", "headers"}
    | {"type": "stdio", "command", "args", "env"}."""
    path = config_path(home)
    if not path.exists():
        return {}
    return json.loads(path.read_text("utf-8"))


def save(home: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path = config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(servers, indent=2), "utf-8")
    return path


def destination(server: dict[str, Any]) -> str:
    if server["type"] == "http":
        return server["url"]
    return " ".join([server["command"], *server.get("args", [])])
