"""One bounded JSON reader for everything a mock is sent.

Strategy: every body, line and spec file a mock reads comes from a program under test or
a person, so it is hostile input. `read_json` takes bytes and either returns a value that
is safe to keep, journal and encode again, or raises `JsonInputError` with a reason a
person can act on: too big, not UTF-8, malformed, nested too deeply, a lone surrogate
(which Python decodes but cannot encode back to UTF-8), or a number with too many digits.
The size is checked before anything is decoded; the C decoder's own recursion guard turns
absurd nesting (say 100,000 brackets) into an error instead of a crash, and an iterative
walk then holds what was decoded to `max_depth` levels, so later recursive code (the
journal's `asdict`, `json.dumps`) never meets a structure deeper than that.

Kept to the standard library: the stdio mock imports it at start.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # no `typing` at run time: the stdio mock imports this (stdio_server)
if TYPE_CHECKING:
    from typing import Any

MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 128


class JsonInputError(ValueError):
    """Input that is not JSON a mock will take; `str(error)` says why, for a person."""


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_json(
    data: bytes | str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """The JSON value in `data` (UTF-8), within `max_bytes` and `max_depth` levels."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise JsonInputError(f"JSON of {size} bytes is over the {max_bytes}-byte limit")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInputError(f"not UTF-8 (byte {exc.start})") from None
    else:
        text = data
    if text.startswith("\ufeff"):
        raise JsonInputError("a byte order mark before the JSON")
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise JsonInputError(f"nested more than {max_depth} levels deep") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, an integer of 4,300+ digits
        raise JsonInputError(f"malformed JSON: {exc}") from None
    check_value(value, max_depth)
    return value


def check_value(value: Any, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise JsonInputError if `value` nests deeper than `max_depth` or holds a string that
    cannot be encoded as UTF-8. Iterative, so it never recurses itself."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item)
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > max_depth:
            raise JsonInputError(f"nested more than {max_depth} levels deep")
        if isinstance(item, dict):
            for key, child in item.items():
                _check_text(key)
                stack.append((child, depth + 1))
        else:
            stack.extend((child, depth + 1) for child in item)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonInputError("a string holds a lone surrogate (\\ud800-\\udfff)") from None
