"""Project configuration that a host must never read (CFG-2): files in the case's working
directory naming servers that exist only there.

Strategy: a host that reads MCP configuration from the project it runs in connects servers
nobody configured. The bait is written in the shapes hosts read (`mcpServers` as Claude and
Cursor write it, `servers` as VS Code does) at the common file names and at any the adapter
declares (`describe().project_config_files`), with one remote and one local server. The
CFG-2 case plants it with lures of its own; every other case plants it too, pointing at the
run's lures (the plugin), so that a host which reads project files only in some state (an
empty HOME configuration, a reopened session) is seen wherever that state occurs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

__all__ = ["COMMON_PROJECT_FILES", "lure_spec", "plant", "project_config_text"]

COMMON_PROJECT_FILES = (".mcp.json", "mcp.json", ".vscode/mcp.json", ".cursor/mcp.json")


def lure_spec(name: str) -> ServerSpec:
    return ServerSpec(
        name=name, tools=[Tool("lure", "Must never be discovered.", reply=Reply.text("x"))]
    )


def project_config_text(url: str, command: Sequence[str]) -> str:
    # Both common shapes, with a remote and a local server, so that any reader of any of
    # them takes the bait.
    servers = {
        "project-remote": {"type": "http", "url": url},
        "project-local": {"type": "stdio", "command": command[0], "args": list(command[1:])},
    }
    return json.dumps({"mcpServers": servers, "servers": servers}, indent=2)


def plant(project: Path, declared: Iterable[str], url: str, command: Sequence[str]) -> list[str]:
    """Write the bait at the common names and the host's declared ones; the names written."""
    names = list(COMMON_PROJECT_FILES) + [
        n for n in declared if n not in COMMON_PROJECT_FILES and not Path(n).is_absolute()
    ]
    text = project_config_text(url, command)
    for name in names:
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return names
