"""opencode's own commands, run the way its user would, and the environment every opencode
process gets.

Strategy: the binary is the pinned npm package's native one (`npm ci` in examples/opencode:
the platform package that `opencode-ai` would pick, a Bun executable), or `$OPENCODE_BIN`.
Configuration is opencode's: `opencode mcp add` writes `~/.config/opencode/opencode.jsonc`
itself (its format, its file mode); opencode has no command to remove a server, so removing
one edits that file, as its documentation tells a user to do. Every opencode process gets
HOME set to the case's home, no `XDG_*` directories (opencode's data, state and config then
live under that home), none of opencode's own settings (`OPENCODE_*`) or model keys from the
harness's environment, and the `OPENCODE_DISABLE_*` switches that keep it off the network
(the models.dev catalog, its self-update, LSP and plugin downloads, sharing) so a sealed run
does not wait on them.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "add_entry",
    "config_path",
    "configured_servers",
    "opencode_binary",
    "opencode_env",
    "remove_server",
    "run_opencode",
    "set_timeouts",
    "version",
]

EXAMPLE = Path(__file__).resolve().parent.parent
COMMAND_BOUND = 60.0
# Not inherited from the harness's environment: opencode's own settings, the XDG base
# directories (they would move its files out of the case's home), and model credentials.
_DROPPED = ("OPENCODE_", "XDG_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_")
# What keeps opencode from reaching the network at start (it would wait on a sealed run):
# the models.dev catalog, the self-update check, LSP servers and default plugins downloaded
# on demand, session sharing.
OFFLINE = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


def opencode_binary() -> Path:
    """The native opencode binary of the pinned npm package (or `$OPENCODE_BIN`)."""
    chosen = os.environ.get("OPENCODE_BIN")
    if chosen:
        return Path(chosen)
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system(), "windows")
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    found = EXAMPLE / "node_modules" / f"opencode-{system}-{arch}" / "bin" / "opencode"
    if not found.exists():
        raise FileNotFoundError(
            "the opencode binary is not installed: run `npm ci --prefix examples/opencode` "
            "(or set OPENCODE_BIN)"
        )
    return found


def version() -> str:
    """The version of the pinned platform package whose binary runs."""
    try:
        package = opencode_binary().parent.parent / "package.json"
        return str(json.loads(package.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "unknown"


def opencode_env(home: Path, extra: Mapping[str, str] = ()) -> dict[str, str]:  # type: ignore[assignment]
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    env["HOME"] = str(home)
    env.update(OFFLINE)
    env.update(dict(extra))
    return env


def run_opencode(home: Path, args: Sequence[str], cwd: Path | None = None) -> tuple[int, str]:
    """Run `opencode ARGS` as the user would at a terminal; (exit status, what it printed)."""
    done = subprocess.run(
        [str(opencode_binary()), *args],
        env=opencode_env(home),
        cwd=cwd or home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=COMMAND_BOUND,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def config_path(home: Path) -> Path:
    """Where `opencode mcp add` writes (the global configuration; it writes `.jsonc`)."""
    directory = home / ".config" / "opencode"
    for name in ("opencode.jsonc", "opencode.json"):
        if (directory / name).exists():
            return directory / name
    return directory / "opencode.jsonc"


_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|,(\s*[}\]])', re.DOTALL)


def _jsonc(text: str) -> Any:
    """JSON with comments and trailing commas, as opencode reads its configuration."""
    text = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    text = _TRAILING_COMMA.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(0), text)
    return json.loads(text)


def _load(home: Path) -> dict[str, Any]:
    try:
        data = _jsonc(config_path(home).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def configured_servers(home: Path) -> dict[str, Any]:
    """The `mcp` table of opencode's global configuration (read, never written)."""
    servers = _load(home).get("mcp", {})
    return servers if isinstance(servers, dict) else {}


def _rewrite(home: Path, data: dict[str, Any]) -> Path:
    path = config_path(home)
    with path.open("r+", encoding="utf-8") as f:  # in place: the file's mode stays opencode's
        f.write(json.dumps(data, indent=2) + "\n")
        f.truncate()
    return path


def add_entry(home: Path, name: str, entry: dict[str, Any]) -> Path:
    """Add server NAME to the configuration file `opencode mcp add` made, in the shape it
    writes, as a user adds a server by editing the file."""
    data = _load(home)
    servers = data.setdefault("mcp", {})
    if not isinstance(servers, dict):
        servers = data["mcp"] = {}
    servers[name] = entry
    return _rewrite(home, data)


def remove_server(home: Path, name: str) -> Path:
    """Delete server NAME's entry from the configuration, as a user edits it (opencode has
    no remove command)."""
    data = _load(home)
    servers = data.get("mcp")
    if isinstance(servers, dict):
        servers.pop(name, None)
    return _rewrite(home, data)


def set_timeouts(home: Path, milliseconds: int) -> None:
    """Give every configured server this `timeout`, as a user sets it in the configuration
    (opencode takes a server's timeout from its entry only: an entry given in
    `OPENCODE_CONFIG_CONTENT` must be whole, and would copy its secrets into the
    environment every stdio server inherits)."""
    data = _load(home)
    servers = data.get("mcp")
    if not isinstance(servers, dict) or not servers:
        return
    for entry in servers.values():
        if isinstance(entry, dict):
            entry["timeout"] = milliseconds
    _rewrite(home, data)
