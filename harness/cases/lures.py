"""Project configuration that a host must never read (CFG-2): files in the case's working
directory naming servers that exist only there.

Strategy: a host that reads MCP configuration from the project it runs in connects servers
nobody configured. The bait is written in the shapes hosts read (`mcpServers` as Claude and
Cursor write it, `servers` as VS Code does) at the common file names and at any the adapter
declares (`describe().project_config_files`), and in the host's own shape at its own paths
when the adapter can write it (`Adapter.project_config`, optional: opencode's
`opencode.json`, Codex's `.codex/config.toml`), with one remote and one local server. The
suite's shape alone lets a host that reads only its own format pass vacuously. The CFG-2
case plants it with lures of its own; every other case plants it too, pointing at the run's
lures (the plugin), so that a host which reads project files only in some state (an empty
HOME configuration, a reopened session) is seen wherever that state occurs.

What the adapter gives is the host's (hostile input): a path must be relative and stay in
the project, a file's text is bounded, the number of files too; anything else is the
adapter's failure (AdapterError), said in one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from mcp_host_conformance.harness.cases.hostrun import bounded
from mcp_host_conformance.harness.contract.adapter import (
    Adapter,
    AdapterError,
    HttpServer,
    StdioServer,
)
from mcp_host_conformance.harness.verdicts.safe_text import inline
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

__all__ = [
    "COMMON_PROJECT_FILES",
    "LURE_NAMES",
    "host_project_files",
    "lure_servers",
    "lure_spec",
    "plant",
    "project_config_text",
]

COMMON_PROJECT_FILES = (".mcp.json", "mcp.json", ".vscode/mcp.json", ".cursor/mcp.json")
LURE_NAMES: Final = ("project-remote", "project-local")
MAX_FILES: Final = 16
MAX_TEXT: Final = 256 * 1024  # characters of one file
MAX_PATH: Final = 255


def lure_spec(name: str) -> ServerSpec:
    return ServerSpec(
        name=name, tools=[Tool("lure", "Must never be discovered.", reply=Reply.text("x"))]
    )


def lure_servers(url: str, command: Sequence[str]) -> tuple[HttpServer, StdioServer]:
    """The two lures as a user would configure them (what `project_config` is given)."""
    return (
        HttpServer(name=LURE_NAMES[0], url=url),
        StdioServer(name=LURE_NAMES[1], command=command[0], args=tuple(command[1:])),
    )


def project_config_text(url: str, command: Sequence[str]) -> str:
    # Both common shapes, with a remote and a local server, so that any reader of any of
    # them takes the bait.
    servers = {
        "project-remote": {"type": "http", "url": url},
        "project-local": {"type": "stdio", "command": command[0], "args": list(command[1:])},
    }
    return json.dumps({"mcpServers": servers, "servers": servers}, indent=2)


def _relative(path: object) -> str:
    """`path` if it is a relative path that stays in the project; AdapterError otherwise."""
    text = path if isinstance(path, str) else ""
    parts = PurePosixPath(text).parts
    if (
        not text
        or len(text) > MAX_PATH
        or "\0" in text
        or "\\" in text
        or PurePosixPath(text).is_absolute()
        or not parts
        or any(part in ("..", ".") for part in parts)
    ):
        raise AdapterError(
            f"project_config: {inline(str(path))[:120]!r} is not a path relative to the project "
            "(no '..', not absolute)"
        )
    return text


def host_project_files(
    adapter: Adapter, url: str, command: Sequence[str], bound: float
) -> dict[str, str]:
    """The lures in the host's own project format (`adapter.project_config`, optional, within
    `bound` seconds), each path checked to stay in the project: {} for an adapter without
    it."""
    project_config = getattr(adapter, "project_config", None)
    if not callable(project_config):
        return {}
    servers = list(lure_servers(url, command))
    files = bounded("project_config()", lambda: project_config(servers), bound)
    if not isinstance(files, Mapping):
        raise AdapterError(
            f"project_config: expected a mapping of path -> text, got {type(files).__name__}"
        )
    if len(files) > MAX_FILES:
        raise AdapterError(f"project_config: {len(files)} files, at most {MAX_FILES}")
    checked = {}
    for path, text in files.items():
        name = _relative(path)
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            raise AdapterError(
                f"project_config[{name!r}]: expected a text of at most {MAX_TEXT} characters"
            )
        checked[name] = text
    return checked


def plant(
    project: Path,
    declared: Iterable[str],
    url: str,
    command: Sequence[str],
    own: Mapping[str, str] | None = None,
) -> list[str]:
    """Write the bait at the common names and the host's declared ones (the suite's shape),
    and the host's own files (`own`, from `host_project_files`, which win at a name both
    write); the names written."""
    own = dict(own or {})
    names = list(COMMON_PROJECT_FILES) + [
        n for n in declared if n not in COMMON_PROJECT_FILES and not Path(n).is_absolute()
    ]
    text = project_config_text(url, command)
    for name in [*names, *own]:
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(own.get(name, text))
    return list(dict.fromkeys([*names, *own]))
