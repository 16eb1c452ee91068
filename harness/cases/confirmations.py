"""What a confirmation must say, read the same way by the cases and the monitors: the
warning that the arguments go to the server and the client cannot control what it does
with them, and arguments shown as (pretty-printed) JSON (APR-4); arguments shown cut after
2 KiB (APR-5)."""

from __future__ import annotations

import json
import re

__all__ = [
    "ARGUMENTS_LIMIT",
    "MARKER_SLACK",
    "PRETTY",
    "WARNING_CONTROL",
    "WARNING_SENT",
    "shown_json",
    "shown_size",
    "unquoted",
]

ARGUMENTS_LIMIT = 2 * 1024  # APR-5: arguments shown are cut after 2 KiB of UTF-8
# Room allowed for the cut marker and framing after the 2 KiB of shown arguments.
MARKER_SLACK = 512

# The warning: the arguments go to this server, and the client cannot control what it does
# with them. Matched on meaning: any wording that says both passes, one that says only one
# of them fails.
WARNING_SENT = re.compile(
    r"\b(sent|send|sends|go|goes|going|passed|transmitted|shared|forwarded|delivered|handed)"
    r"\b.{0,80}?\bserver\b"
    r"|\bserver\b.{0,40}?\b(receives?|will receive|gets|will get|sees|will see)\b",
    re.IGNORECASE | re.DOTALL,
)
WARNING_CONTROL = re.compile(
    r"\b(cannot|can't|can ?not|does not|doesn't|do not|don't|is not able to|isn't able to|"
    r"unable to|not able to|has no way to|have no way to)\s+([\w'’-]+\s+){0,2}"
    r"(control|govern|restrict|limit|influence)\b"
    r"|\bno\s+([\w'’-]+\s+)?(control|say)\b"
    r"|\b(beyond|outside|out of)\s+([\w'’-]+\s+){0,3}control\b",
    re.IGNORECASE,
)
# Pretty-printed: a line break, then indentation, then something (as `json.dumps(indent=2)`).
PRETTY = re.compile(r"\n[ \t]+\S")


def shown_json(arguments: str) -> tuple[object, bool]:
    """The JSON value the shown arguments text stands for, and whether it is pretty-printed:
    the text as is, or the seed's quoted form of it (a JSON string whose content is the
    pretty JSON, `"{\\n  \\"query\\": ...}"`). (None, False) if it is neither."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return None, False
    if isinstance(value, str):  # the quoted form: its content is the pretty JSON
        try:
            return json.loads(value), PRETTY.search(value) is not None
        except ValueError:
            return None, False
    return value, PRETTY.search(arguments) is not None


_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_ESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unquoted(shown: str) -> str:
    """The pretty JSON the shown text stands for: the text as is, or, in the seed's quoted
    form (a JSON string, cut or not), its content with the string's escapes undone."""
    if not shown.startswith('"'):
        return shown

    def undo(m: re.Match[str]) -> str:
        e = m.group(1)
        return chr(int(e[1:], 16)) if e[0] == "u" else _ESCAPED.get(e, e)

    return _ESCAPE.sub(undo, shown[1:])


def shown_size(shown: str) -> int:
    """The bytes of UTF-8 of the arguments a confirmation shows (the quoted form's escapes
    undone), as APR-5 measures them."""
    return len(unquoted(shown).encode("utf-8", "surrogatepass"))
