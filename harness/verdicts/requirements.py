"""The requirements catalog: every rule the suite checks, by stable ID.

Strategy: the catalog is the Markdown file the rules are written in (a copy bundled as
`harness/data/requirements.md`, since users of the installed package do not have the
project's steering folder). It is parsed once at import, so the text a failure message
quotes is the text the rules are written in, and there is no second list to drift.
Parsing is a pure function (`parse_catalog`) so it can be tested on small inputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

__all__ = [
    "AREAS",
    "CORE_AREAS",
    "LEVELS",
    "REQUIREMENTS",
    "Requirement",
    "area_of",
    "parse_catalog",
    "replaced_for",
    "requirement",
]

LEVELS = ("MUST", "SHOULD", "INFO")

_ID = re.compile(r"^[A-Z]+-\d+$")
_AREA_HEADING = re.compile(r"^##\s+([A-Z]+):")
_PROFILE_HEADING = re.compile(r"^##\s+Optional profiles", re.IGNORECASE)


@dataclass(frozen=True)
class Requirement:
    id: str  # "APR-2"
    area: str  # "APR"
    level: str  # "MUST" | "SHOULD" | "INFO"
    rule: str  # the rule's text, Markdown emphasis removed
    observed: str  # how the suite observes it ("" for a profile row without that column)
    profile: str | None  # the optional profile it belongs to; None for the core


def area_of(requirement_id: str) -> str:
    """The area of an ID: its prefix before the dash ("APR-2" -> "APR")."""
    return requirement_id.rsplit("-", 1)[0]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _plain(text: str) -> str:
    # Bold markers are for human readers; a failure message quotes the words only.
    return text.replace("**", "")


def parse_catalog(markdown: str) -> dict[str, Requirement]:
    """Every requirement row of the catalog, in catalog order.

    Core tables sit under `## AREA: title` headings with columns ID | Level | Rule | How;
    the optional profiles table has ID | Profile | Level | Rule. Rows whose first cell is
    not an ID (headers, separators) are skipped."""
    found: dict[str, Requirement] = {}
    in_profiles = False
    for line in markdown.splitlines():
        if line.startswith("## "):
            in_profiles = bool(_PROFILE_HEADING.match(line))
            continue
        if not line.lstrip().startswith("|"):
            continue
        cells = _cells(line)
        if not cells or not _ID.match(cells[0]):
            continue
        rid = cells[0]
        if in_profiles:
            if len(cells) < 4:
                raise ValueError(f"catalog row {rid}: expected ID | Profile | Level | Rule")
            profile, level, rule = cells[1].strip("`"), cells[2], cells[3]
            observed = cells[4] if len(cells) > 4 else ""  # an optional How column
        else:
            if len(cells) < 4:
                raise ValueError(f"catalog row {rid}: expected ID | Level | Rule | How")
            profile, level, rule, observed = None, cells[1], cells[2], cells[3]
        if level not in LEVELS:
            raise ValueError(f"catalog row {rid}: level {level!r} is not one of {LEVELS}")
        if rid in found:
            raise ValueError(f"catalog row {rid} appears twice")
        found[rid] = Requirement(
            id=rid,
            area=area_of(rid),
            level=level,
            rule=_plain(rule),
            observed=_plain(observed),
            profile=profile,
        )
    return found


def _load() -> dict[str, Requirement]:
    text = (
        resources.files("mcp_host_conformance.harness.data")
        .joinpath("requirements.md")
        .read_text("utf-8")
    )
    return parse_catalog(text)


REQUIREMENTS: dict[str, Requirement] = _load()

# Areas in catalog order: the core areas first, then the profile areas.
AREAS: list[str] = list(dict.fromkeys(r.area for r in REQUIREMENTS.values()))
CORE_AREAS: list[str] = list(
    dict.fromkeys(r.area for r in REQUIREMENTS.values() if r.profile is None)
)


_REPLACES = re.compile(r"\breplaces ((?:[A-Z]+-\d+)(?:(?:,| and) [A-Z]+-\d+)*)")


def replaced_for(
    profiles: frozenset[str] | set[str], catalog: dict[str, Requirement] | None = None
) -> dict[str, Requirement]:
    """Core requirement ID -> the profile requirement that replaces it for a host claiming
    `profiles` (a profile rule saying "This profile replaces CFG-1 ...")."""
    found: dict[str, Requirement] = {}
    for req in (catalog if catalog is not None else REQUIREMENTS).values():
        if req.profile is None or req.profile not in profiles:
            continue
        for match in _REPLACES.finditer(req.rule):
            for rid in re.findall(r"[A-Z]+-\d+", match.group(1)):
                found[rid] = req
    return found


def requirement(id: str) -> Requirement:  # noqa: A002 - the contract's name
    """The requirement with this ID; KeyError naming the ID and where to look otherwise."""
    try:
        return REQUIREMENTS[id]
    except KeyError:
        raise KeyError(
            f"unknown requirement ID {id!r}: not in the catalog "
            f"(see `mcp-host-conformance requirements` for the {len(REQUIREMENTS)} IDs)"
        ) from None
