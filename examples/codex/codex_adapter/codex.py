"""Codex's own commands, run the way its user would: `codex mcp add/remove/list`, and the
environment every Codex process gets.

Strategy: the binary is the pinned npm package's native one (`npm ci` in examples/codex),
or `$CODEX_BIN`. Configuration is Codex's: `codex mcp add` writes `~/.codex/config.toml`
itself (its format, its file mode). Codex has no command for static HTTP headers, so they
are added to the server's entry in that file by hand, as its documentation tells a user to
do (an `http_headers` table). `CODEX_HOME` is never inherited: with HOME set to the case's
home, Codex uses `$HOME/.codex`, a scratch directory; `RUST_BACKTRACE` is unset so a panic
prints no backtrace frames.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "add_headers",
    "codex_binary",
    "codex_env",
    "configured_servers",
    "config_path",
    "run_codex",
    "version",
]

EXAMPLE = Path(__file__).resolve().parent.parent
COMMAND_BOUND = 60.0
# Not inherited from the harness's environment: Codex's own settings and credentials, and
# the Rust runtime's backtraces.
_DROPPED = ("CODEX_", "OPENAI_", "RUST_BACKTRACE", "RUST_LIB_BACKTRACE", "RUST_LOG")


def codex_binary() -> Path:
    """The native Codex binary of the pinned npm package (or `$CODEX_BIN`)."""
    chosen = os.environ.get("CODEX_BIN")
    if chosen:
        return Path(chosen)
    found = sorted((EXAMPLE / "node_modules" / "@openai").glob("codex-*/vendor/*/bin/codex"))
    if not found:
        raise FileNotFoundError(
            "the Codex binary is not installed: run `npm ci --prefix examples/codex` "
            "(or set CODEX_BIN)"
        )
    return found[0]


def version() -> str:
    package = EXAMPLE / "node_modules" / "@openai" / "codex" / "package.json"
    try:
        return str(json.loads(package.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "unknown"


def codex_env(home: Path, extra: Mapping[str, str] = ()) -> dict[str, str]:  # type: ignore[assignment]
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    env["HOME"] = str(home)
    env.update(dict(extra))
    return env


def run_codex(home: Path, args: Sequence[str], cwd: Path | None = None) -> tuple[int, str]:
    """Run `codex ARGS` as the user would at a terminal; (exit status, what it printed)."""
    done = subprocess.run(
        [str(codex_binary()), *args],
        env=codex_env(home),
        cwd=cwd or home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=COMMAND_BOUND,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def config_path(home: Path) -> Path:
    return home / ".codex" / "config.toml"


def configured_servers(home: Path) -> dict[str, Any]:
    """The `mcp_servers` tables of Codex's configuration (read, never written)."""
    try:
        with config_path(home).open("rb") as f:
            servers = tomllib.load(f).get("mcp_servers", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return servers if isinstance(servers, dict) else {}


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def add_headers(home: Path, name: str, headers: Mapping[str, str]) -> None:
    """Add static headers to server NAME's entry, as a user edits config.toml."""
    if not headers:
        return
    path = config_path(home)
    lines = [f"\n[mcp_servers.{_toml_string(name)}.http_headers]"]
    lines += [f"{_toml_string(k)} = {_toml_string(v)}" for k, v in headers.items()]
    with path.open("a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
