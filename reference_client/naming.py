"""Exposed function names for MCP tools (EXP-1, EXP-2).

Strategy: a tool is offered as `mcp_<server>_<tool>` whenever that string is a valid
Responses API function name and nobody else would get it. Otherwise we do not guess a
"safe" replacement (two guesses can collide, and a guess can read like another tool):
the name becomes a sanitised, shortened prefix plus a short hash of the exact
(server, tool) pair. When raw names collide, *every* colliding tool is hashed, so the
order in which servers answered never decides who keeps the plain name. The result
depends only on the set of (server, tool) pairs, so it is the same on every start with
the same configuration.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = [
    "DISALLOWED",
    "MAX_LENGTH",
    "NAME_PATTERN",
    "PREFIX",
    "exposed_names",
    "hashed_name",
    "is_valid_name",
    "plain_name",
]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PREFIX = "mcp_"
MAX_LENGTH = 64
_HASH_LENGTH = 8
DISALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def is_valid_name(name: str) -> bool:
    # fullmatch, not match: "$" would accept a trailing newline.
    return NAME_PATTERN.fullmatch(name) is not None


def plain_name(server: str, tool: str) -> str:
    """`mcp_<server>_<tool>`: the name a tool gets when it is valid and unique (EXP-1)."""
    return f"{PREFIX}{server}_{tool}"


def hashed_name(server: str, tool: str, attempt: int) -> str:
    """A sanitised, shortened prefix plus a short hash of the exact pair (EXP-2)."""
    # The hash covers the exact pair with a separator no name can smuggle in, so
    # ("a_b", "c") and ("a", "b_c") hash differently although their raw names agree.
    material = f"{server}\0{tool}" if attempt == 0 else f"{server}\0{tool}\0{attempt}"
    digest = hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]
    prefix = DISALLOWED.sub("_", plain_name(server, tool))
    prefix = prefix[: MAX_LENGTH - _HASH_LENGTH - 1]
    return f"{prefix}_{digest}"


def exposed_names(
    tools: Sequence[tuple[str, str]], reserved: Iterable[str] = ()
) -> dict[tuple[str, str], str]:
    """Map each (server, tool) pair to the function name offered to the model.

    `reserved` holds the client's built-in tool names; an MCP tool never takes one.
    """
    pairs = sorted(set(tools))
    reserved_names = set(reserved)
    raw_counts = Counter(plain_name(server, tool) for server, tool in pairs)

    result: dict[tuple[str, str], str] = {}
    taken = set(reserved_names)
    needs_hash: list[tuple[str, str]] = []
    for pair in pairs:
        raw = plain_name(*pair)
        if is_valid_name(raw) and raw_counts[raw] == 1 and raw not in reserved_names:
            result[pair] = raw
            taken.add(raw)
        else:
            needs_hash.append(pair)

    # Plain names win over hashed ones (EXP-1). A hashed name that still collides (with a
    # plain name crafted to look like it, or a hash clash) is rehashed with a counter; the
    # pairs are sorted, so this is deterministic for the same set.
    for pair in needs_hash:
        attempt = 0
        name = hashed_name(*pair, attempt)
        while name in taken:
            attempt += 1
            name = hashed_name(*pair, attempt)
        result[pair] = name
        taken.add(name)
    return result
