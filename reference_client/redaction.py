"""Removing configured secrets from anything shown, saved or sent to the model (CRED-3).

Strategy: a secret can leak in disguise, so each secret is searched for in the forms it
commonly takes on the way out: as is, JSON-escaped, URL-encoded (quote, quote_plus, upper
and lower-case hex), and base64 (standard and URL-safe, with and without padding). Inside
longer base64 text a secret's encoding depends on its byte offset modulo 3, so for secrets
of 6 bytes or more the characters that depend only on the secret are searched for in all
three alignments too. All forms are replaced in one regex pass, longest first, and the pass
repeats until nothing is left, so removing one occurrence can never join two halves into
a new one.

Every non-empty secret is redacted, however short. A very short secret (say "ab") also
removes that common text wherever it appears; hiding too much is the safe side.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MARKER", "Redactor", "secret_forms"]

MARKER = "[secret removed]"
_FALLBACK_MARKERS = ("[redacted]", "<hidden>", "###", "")
_MIN_ALIGNED_BYTES = 6
_MAX_PASSES = 8
# Compiling the pattern costs a few milliseconds for a handful of secrets (the regex parser
# is Python, ~2 us a character of it), more than most redactors ever spend redacting: many
# redact one line. So a redactor first looks for its forms with `in` (~0.1 us a form and
# call, ~1 ns a character), returning a text holding none as it is, and compiles once that
# has cost as much as compiling would (at worst twice the cheaper way); same answer.
_NS_TO_COMPILE_A_CHARACTER = 2000
_NS_TO_SEARCH_A_FORM = 100


def _base64_forms(raw: bytes) -> set[str]:
    forms = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        text = encode(raw).decode("ascii")
        forms.add(text)
        forms.add(text.rstrip("="))
    if len(raw) >= _MIN_ALIGNED_BYTES:
        for offset in range(3):
            padded = b"\0" * offset + raw
            # Characters whose 6 bits lie wholly inside the secret's bytes.
            first = -(-offset * 8 // 6)
            last = (offset + len(raw)) * 8 // 6
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                core = encode(padded).decode("ascii")[first:last]
                if core:
                    forms.add(core)
    return forms


def _percent_lower(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


def secret_forms(secret: str) -> set[str]:
    """Every form of `secret` that is searched for."""
    if not secret:
        return set()
    forms = {secret}
    forms.add(json.dumps(secret)[1:-1])
    forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
    for encoded in (
        quote(secret),
        quote(secret, safe=""),
        quote_plus(secret),
        quote_plus(secret, safe=""),
    ):
        forms.add(encoded)
        forms.add(_percent_lower(encoded))
    raw = secret.encode("utf-8", "surrogatepass")
    forms |= _base64_forms(raw)
    forms.discard("")
    return forms


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = [s for s in secrets if isinstance(s, str)]
        self._build()

    def add(self, secret: str) -> None:
        """Redact one more secret from now on (a token obtained while running)."""
        if isinstance(secret, str) and secret and secret not in self._secrets:
            self._secrets.append(secret)
            self._build()

    def _build(self) -> None:
        forms: set[str] = set()
        for secret in self._secrets:
            forms |= secret_forms(secret)
        self._forms = sorted(forms, key=lambda form: (-len(form), form))
        self._pattern: re.Pattern[str] | None = None  # compiled when first needed
        self._search_budget = _NS_TO_COMPILE_A_CHARACTER * sum(map(len, self._forms))
        # The marker itself must not contain a secret, or replacing would reintroduce it.
        self._marker = next(
            (m for m in (MARKER, *_FALLBACK_MARKERS) if not any(f in m for f in self._forms)), ""
        )

    def _compiled(self, text: str) -> re.Pattern[str] | None:
        """The pattern, or None when `text` holds no form (found without compiling it)."""
        if self._pattern is not None:
            return self._pattern
        forms = self._forms
        self._search_budget -= len(forms) * (_NS_TO_SEARCH_A_FORM + len(text))
        # a str subclass could answer `in` otherwise than the pattern would: compiled at once
        if self._search_budget > 0 and type(text) is str and not any(f in text for f in forms):
            return None
        pattern = re.compile("|".join(map(re.escape, forms)))
        if forms is self._forms:  # not for the forms an add() on another thread replaced
            self._pattern = pattern
        return pattern

    def redact(self, text: str) -> str:
        if not self._forms or not isinstance(text, str):
            return text
        pattern = self._compiled(text)
        if pattern is None:
            return text
        for _ in range(_MAX_PASSES):
            text, count = pattern.subn(self._marker, text)
            if count == 0 or not pattern.search(text):
                return text
        # Pathological overlaps: removing without a marker strictly shortens the text,
        # so this loop ends.
        while True:
            text, count = pattern.subn("", text)
            if count == 0:
                return text

    def redact_obj(self, value: Any) -> Any:
        """Redact every string (keys too) inside a JSON-like value."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact_obj(key): self.redact_obj(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.redact_obj(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.redact_obj(item) for item in value)
        return value
