"""The host's own tools, offered beside the MCP tools (EXP-5).

Strategy: one built-in, `read_file`, so every model request has a non-MCP tool and the
naming rule has a name to keep clear of. It runs without a confirmation (it never leaves
the machine) and is confined to the working directory: the path is resolved, symlinks
included, and must stay inside it. Its output obeys the same 64 KiB limit as a tool result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_host_conformance.reference_client import results

READ_FILE = "read_file"
NAMES = (READ_FILE,)

READ_FILE_TOOL: dict[str, Any] = {
    "type": "function",
    "name": READ_FILE,
    "description": "Read a text file inside the current working directory. "
    "The path is relative to the working directory.",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File path, relative to the working directory",
            }
        },
        "required": ["path"],
    },
    "strict": False,
}

DEFINITIONS = [READ_FILE_TOOL]


def confined_path(cwd: Path, path: str) -> Path | None:
    """The resolved path if it lies inside `cwd`, else None."""
    base = cwd.resolve()
    try:
        target = (base / path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return target if target == base or base in target.parents else None


def read_file(cwd: Path, arguments: Any) -> results.Outcome:
    path = arguments.get("path") if isinstance(arguments, dict) else None
    if not isinstance(path, str) or not path:
        return results.Outcome(results.FAILED, "read_file needs a string argument 'path'.")
    target = confined_path(cwd, path)
    if target is None:
        return results.Outcome(
            results.FAILED, "read_file only reads files inside the working directory."
        )
    try:
        with open(target, "rb") as f:
            data = f.read(results.OUTPUT_LIMIT + 1)
    except OSError as exc:
        return results.Outcome(
            results.FAILED, f"Cannot read {path}: {exc.strerror or type(exc).__name__}."
        )
    text, cut = results.limited_text(data.decode("utf-8", "replace"))
    return results.Outcome(results.OUTPUT_LIMITED if cut else results.COMPLETED, text)


def run(name: str, cwd: Path, arguments: Any) -> results.Outcome:
    if name == READ_FILE:
        return read_file(cwd, arguments)
    return results.Outcome(results.FAILED, f"No built-in tool named {name}.")
