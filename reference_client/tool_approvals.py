"""The tool approvals file (profile `pinning`): `pinning.Approvals` on disk.

Strategy: approvals are configuration, so they live beside the server configuration in the
user's home, private (0600, written atomically). The file also keeps the definitions seen
last, which are server-written text: it is read back as untrusted input (bounded, strictly
decoded, every entry checked), and a damaged file means "nothing approved", never a crash
and never an approval by accident.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

from mcp_host_conformance.reference_client import untrusted_json
from mcp_host_conformance.reference_client.config import (
    APP_DIR,
    ConfigError,
    config_home,
    private_dir,
    write_private,
)
from mcp_host_conformance.reference_client.pinning import Approvals, PinnedTool, ServerPins

__all__ = ["ApprovalStore"]

FILE_NAME = "tool-approvals.json"
MAX_BYTES = 16 * 1024 * 1024
_HASH_LENGTH = 64


def _is_hash(value: object) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and len(value) == _HASH_LENGTH
        and all(c in "0123456789abcdef" for c in value)
    )


def _pinned(entry: object) -> PinnedTool | None:
    if not isinstance(entry, dict):
        return None
    approved, seen, definition = entry.get("approved"), entry.get("seen"), entry.get("definition")
    if approved is not None and not _is_hash(approved):
        return None
    if not _is_hash(seen) or not isinstance(definition, dict):
        return None
    before = entry.get("approved_definition")
    return PinnedTool(approved, seen, definition, before if isinstance(before, dict) else None)


def _from_json(document: object) -> Approvals:
    if not isinstance(document, dict) or not isinstance(document.get("servers"), dict):
        return Approvals()
    servers: dict[str, ServerPins] = {}
    for name, entry in document["servers"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("destination"), str):
            continue
        tools = entry.get("tools")
        pins = {}
        for tool, raw in (tools if isinstance(tools, dict) else {}).items():
            pinned = _pinned(raw)
            if pinned is not None:
                pins[tool] = pinned
        servers[name] = ServerPins(entry["destination"], pins)
    return Approvals(servers)


def _to_json(approvals: Approvals) -> dict[str, Any]:
    return {
        "version": 1,
        "servers": {
            name: {
                "destination": pins.destination,
                "tools": {
                    tool: {
                        "approved": pinned.approved,
                        "seen": pinned.seen,
                        "definition": dict(pinned.definition),
                        "approved_definition": (
                            None
                            if pinned.approved_definition is None
                            else dict(pinned.approved_definition)
                        ),
                    }
                    for tool, pinned in pins.tools.items()
                },
            }
            for name, pins in approvals.servers.items()
        },
    }


class ApprovalStore:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self.directory = config_home(environ) / APP_DIR
        self.path = self.directory / FILE_NAME

    def load(self) -> Approvals:
        try:
            with open(self.path, "rb") as f:
                raw = f.read(MAX_BYTES + 1)
        except FileNotFoundError:
            return Approvals()
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from None
        if len(raw) > MAX_BYTES:
            return Approvals()
        try:
            return _from_json(untrusted_json.decode(raw))
        except untrusted_json.UntrustedJsonError:
            return Approvals()

    def save(self, approvals: Approvals) -> Path:
        text = json.dumps(_to_json(approvals), indent=1, ensure_ascii=False) + "\n"
        private_dir(self.directory)
        write_private(self.path, text.encode("utf-8", "surrogatepass"))
        return self.path
