"""Decoding JSON that someone else wrote: servers, the model service, files on disk.

Strategy: every JSON reader of the host goes through `decode`, which is strict and total:
UTF-8 only, no NaN or Infinity, no number that overflows a float, at most MAX_DEPTH levels
of nesting, no lone surrogate (legal as a JSON escape, but text that could never be saved
or sent on). Anything else raises `UntrustedJsonError` with a short reason a person can
read; never RecursionError, UnicodeDecodeError or a traceback. The depth check after
decoding is iterative, so a hostile document cannot exhaust the stack there either, and
Python's decoder itself stops deep documents with RecursionError, which is caught.

Callers bound the size of what they read before decoding (1 MiB per MCP message, 32 MiB
per model reply, a few MiB per configuration or session file).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["MAX_DEPTH", "UntrustedJsonError", "decode", "problem_in"]

MAX_DEPTH = 100  # JSON nesting accepted from outside; deeper is hostile, not data
# Every escape that decodes to a surrogate (and some that follow an escaped backslash).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class UntrustedJsonError(ValueError):
    """The text is not JSON we accept; `str(err)` is a short reason, e.g. "nested too
    deeply"."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def problem_in(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What makes a decoded value unusable (too deep, lone surrogates), or None."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return "nested too deeply"
        if isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "holding text that is not valid Unicode"
    return None


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:117] + "..."


def decode(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The value of a JSON document from outside; raises UntrustedJsonError only."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise UntrustedJsonError("that is not valid UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise UntrustedJsonError("nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, huge ints, NaN
        raise UntrustedJsonError(f"that is not valid JSON ({_short(exc)})") from None
    if _plainly_fine(data, text, max_depth):
        return value
    problem = problem_in(value, max_depth)
    if problem:
        raise UntrustedJsonError(problem)
    return value


def _plainly_fine(data: bytes | str, text: str, max_depth: int) -> bool:
    """True when the document's text alone shows `problem_in` would find nothing (most
    messages): each level of nesting needs a bracket, and text decoded from UTF-8 holds a
    surrogate only through an escape. Walking the value cost more than decoding it."""
    return (
        isinstance(data, bytes)
        and text.count("[") + text.count("{") < max_depth
        and not _SURROGATE_ESCAPE.search(text)
    )
