"""What a confirmation must say (APR-4), read the same way by its case and its monitor:
the warning that the arguments go to the server and the client cannot control what it
does with them, and arguments shown as (pretty-printed) JSON."""

from __future__ import annotations

import json
import re

__all__ = ["PRETTY", "WARNING_CONTROL", "WARNING_SENT", "shown_json"]

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
