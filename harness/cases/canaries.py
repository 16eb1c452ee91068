"""Canary secrets, and searching everything the suite can see for them (CRED-3).

Strategy: a secret the suite configures is a random token with a recognisable prefix, so
it cannot occur by accident. Every canary, and the mock model's API key, is also entered in
this process's `REGISTRY`, from which `redact()` removes them (in every encoding below)
from whatever the harness reports: nothing secret reaches a report, a console summary or
a failure message, whatever a case or a library printed.

A leak may be encoded, so each canary is searched for raw, URL-encoded, and base64-encoded
at each of the three byte alignments it can take inside a longer base64 string (a header
`Basic base64(user:token)` embeds it at any offset). What a search reports names the
canary by its label and the encoding, never by its value, so a failure message cannot
itself leak it.
"""

from __future__ import annotations

import base64
import json
import re
import secrets as _random
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import quote, quote_plus

from mcp_host_conformance.mocks.journal import Entry, Journal

__all__ = ["CANARY_PREFIX", "REGISTRY", "Canary", "SecretRegistry", "Secrets", "encodings"]

CANARY_PREFIX = "mcphc-canary-"


def _base64_cores(raw: bytes) -> list[str]:
    """The part of base64(x + raw + y) that depends only on `raw`, for the 3 alignments of raw."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode().rstrip("=")
        start = {0: 0, 1: 2, 2: 3}[offset]
        end = ((offset + len(raw)) * 8) // 6  # chars fully determined before any padding bits
        cores.append(encoded[start:end])
    return cores


def encodings(value: str) -> dict[str, str]:
    """encoding name -> the text to look for."""
    raw = value.encode()
    found: dict[str, str] = {"raw": value}
    for name, text in (("url-encoded", quote(value, safe="")), ("form-encoded", quote_plus(value))):
        if text != value:
            found[name] = text
    json_text = json.dumps(value)[1:-1]
    if json_text != value:
        found["json-escaped"] = json_text
    for i, core in enumerate(_base64_cores(raw)):
        found[f"base64@{i}"] = core
        urlsafe = core.replace("+", "-").replace("/", "_")
        if urlsafe != core:
            found[f"base64url@{i}"] = urlsafe
    return found


@dataclass(frozen=True)
class Canary:
    label: str
    value: str

    def __str__(self) -> str:  # printing a canary never prints its value
        return f"<secret {self.label}>"


class Secrets:
    """The canaries of one case: make them, then search for them anywhere."""

    def __init__(self) -> None:
        self.canaries: list[Canary] = []

    def new(self, label: str = "secret", special: bool = False) -> str:
        """A fresh secret value. `special` adds characters that change under URL and JSON
        encoding (still valid in a header or environment value)."""
        value = f"{CANARY_PREFIX}{label}-{_random.token_hex(12)}"
        if special:
            value += "/+=~%"
        return self.add(label, value)

    def add(self, label: str, value: str) -> str:
        """Plant `value` (a case's own making) as a canary: searched for like the others, and
        registered with the run's redaction, so no report, captured output or log shows it."""
        self.canaries.append(Canary(label, value))
        REGISTRY.add(value, label)
        return value

    @property
    def values(self) -> list[str]:
        return [c.value for c in self.canaries]

    def found_in(self, text: str | bytes | None, where: str = "text") -> list[str]:
        """Descriptions ("<where>: secret LABEL (ENCODING)") of every canary found in `text`."""
        if not text:
            return []
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        hits = []
        for canary in self.canaries:
            for name, needle in encodings(canary.value).items():
                if needle and needle in text:
                    hits.append(f"{where}: secret {canary.label} ({name})")
                    break
        return hits

    def found_in_texts(
        self, texts: Iterable[str | None], where: str = "what the user saw"
    ) -> list[str]:
        return self.found_in("\n".join(t for t in texts if t), where)

    def found_in_files(self, paths: Iterable[Path | str]) -> list[str]:
        """Search files, and every file under the directories given."""
        hits: list[str] = []
        for path in map(Path, paths):
            files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
            for f in files:
                try:
                    data = f.read_bytes()
                except OSError:
                    continue
                hits.extend(self.found_in(data, str(f)))
        return hits

    def found_in_journal(
        self, journal: Journal, where: str = "journal", entries: Iterable[Entry] | None = None
    ) -> list[str]:
        """Search a mock's journal entries (all of them, or `entries`), in their JSON form."""
        chosen = journal.entries() if entries is None else entries
        text = "\n".join(e.json_text(ensure_ascii=False) for e in chosen)
        return self.found_in(text, where)


# A canary that was never registered (made by hand, or in another process) is still
# recognised by its prefix.
_CANARY_TEXT: Final = re.compile(re.escape(CANARY_PREFIX) + r"[A-Za-z0-9_.-]*[0-9a-f]{12}[/+=~%]*")
_REGISTRY_LIMIT: Final = 10_000


class SecretRegistry:
    """Every secret value this process made for the run, to be removed from reports."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._needles: dict[str, str] = {}  # text to find -> what to show instead

    def add(self, value: str, label: str) -> None:
        if not value:
            return
        with self._lock:
            if len(self._needles) >= _REGISTRY_LIMIT:
                return
            for name, needle in encodings(value).items():
                if len(needle) >= 8:  # a short base64 core could match innocent text
                    self._needles.setdefault(needle, f"<secret {label} ({name})>")

    def redact(self, text: str) -> str:
        """`text` with every registered secret (in every encoding) and anything shaped like
        a canary replaced by a `<secret LABEL>` marker."""
        with self._lock:
            needles = sorted(self._needles.items(), key=lambda item: -len(item[0]))
        for needle, shown in needles:
            if needle in text:
                text = text.replace(needle, shown)
        return _CANARY_TEXT.sub("<secret>", text)


REGISTRY: Final = SecretRegistry()
