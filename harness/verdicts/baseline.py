"""The expected-failures baseline: known gaps a host's CI accepts while they are open.

Strategy: like the official MCP conformance framework's expected-failures list, a baseline
must stay true. A listed failure passes (reported as an expected failure), an unlisted one
fails, a listed ID whose cases now pass fails as stale, and a listed ID that names no
requirement and no case fails as unknown, so the file cannot silently rot. The file format
and both decisions (does this failure match? which entries are stale or unknown?) are pure
functions here; `mcp_host_conformance.harness.reports.reporting` applies them through
pytest's hooks.

File format: UTF-8 text, at most 1 MiB, one requirement ID (`APR-2`) or case ID
(`test_approval::test_empty_answer_denies`) per line; `#` starts a comment; blank lines are
ignored. `baseline_from_report` writes one from a JSON report.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp_host_conformance.harness.verdicts.outcomes import (
    EXPECTED_FAILURE,
    FAILED,
    NOT_APPLICABLE,
    NOT_OBSERVED,
    SKIPPED,
    WARNING,
)
from mcp_host_conformance.harness.verdicts.safe_text import inline

__all__ = [
    "DESELECTED",
    "MAX_BASELINE",
    "Baseline",
    "BaselineError",
    "CaseRecord",
    "audit",
    "baseline_from_report",
    "load_baseline",
    "parse_baseline",
]

MAX_BASELINE: Final = 1024 * 1024  # bytes; a baseline is a list of IDs
DESELECTED: Final = "deselected"  # a CaseRecord outcome: collected, then deselected


class BaselineError(ValueError):
    """The baseline file cannot be read or parsed; the message names the file and line."""


@dataclass(frozen=True)
class Baseline:
    path: str
    entries: dict[str, int] = field(default_factory=dict)  # ID -> line number

    def covers(self, case: str, failing_ids: Sequence[str]) -> bool:
        """Whether a failure of `case` breaking `failing_ids` is expected: the case is listed,
        or every requirement it breaks is listed."""
        if case in self.entries:
            return True
        return bool(failing_ids) and all(rid in self.entries for rid in failing_ids)


def parse_baseline(text: str, path: str = "<baseline>") -> Baseline:
    entries: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) != 1:
            raise BaselineError(
                f"{path}:{number}: one requirement or case ID per line, got {line!r}"
            )
        entries.setdefault(line, number)
    return Baseline(path=path, entries=entries)


def load_baseline(path: str | Path) -> Baseline:
    if not str(path).strip():
        raise BaselineError(
            "the expected-failures path is empty (an unset variable?): name the file, or "
            "leave --expected-failures out"
        )
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BASELINE + 1)
    except OSError as exc:
        raise BaselineError(
            f"cannot read the expected-failures file {path}: {exc.strerror or exc}"
        ) from None
    if len(data) > MAX_BASELINE:
        raise BaselineError(
            f"the expected-failures file {path} is over {MAX_BASELINE} bytes: "
            "is it the right file? (one requirement or case ID per line)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BaselineError(
            f"{path}:{line}: not UTF-8 text (byte {exc.start}): is it the right file? "
            "(one requirement or case ID per line)"
        ) from None
    return parse_baseline(text, str(path))


@dataclass(frozen=True)
class CaseRecord:
    """What the audit needs to know of one case that was collected."""

    id: str  # the case ID
    requirements: tuple[str, ...]
    outcome: str | None  # None when it was collected but not run (deselected)


_FAILING = (FAILED, WARNING, EXPECTED_FAILURE)
_NOT_RUN = (None, NOT_APPLICABLE, NOT_OBSERVED, SKIPPED, DESELECTED)


def audit(
    baseline: Baseline, cases: Iterable[CaseRecord], requirement_ids: Collection[str]
) -> tuple[list[str], list[str]]:
    """(stale, unknown) entries of the baseline, in file order.

    An entry is unknown if it is neither a catalog requirement ID nor the ID of a collected
    case. It is stale if at least one case it names ran and none of them failed. An entry
    whose cases were all skipped, not observed or not applicable is neither: nothing was
    learnt about it."""
    cases = list(cases)
    case_ids = {case.id for case in cases}
    stale: list[str] = []
    unknown: list[str] = []
    for entry in sorted(baseline.entries, key=baseline.entries.__getitem__):
        if entry in requirement_ids:
            matched = [case for case in cases if entry in case.requirements]
        elif entry in case_ids:
            matched = [case for case in cases if case.id == entry]
        else:
            unknown.append(entry)
            continue
        ran = [case for case in matched if case.outcome not in _NOT_RUN]
        if ran and not any(case.outcome in _FAILING for case in ran):
            stale.append(entry)
    return stale, unknown


def _broken(case: Mapping[str, Any]) -> set[str]:
    found = case.get("failed_requirements")
    return {str(r) for r in found} if isinstance(found, list) else set()


def baseline_from_report(report: Mapping[str, Any], *, requirements: bool = False) -> str:
    """A baseline file's text from a JSON report, under a comment naming the client: the IDs
    of the cases that failed, warned or were expected failures, then the requirement IDs
    the rule monitors saw broken (a monitor judges a rule wherever it watches, so its
    finding excuses that rule, never everything its case checks); a case whose broken rules
    are all among those is not listed again. With `requirements`: the requirement IDs whose
    outcome was one of those. Sorted."""
    failing = {FAILED, WARNING, EXPECTED_FAILURE}
    cases = [c for c in report.get("cases") or [] if isinstance(c, Mapping)]
    if requirements:
        entries = sorted(
            rid
            for rid, entry in (report.get("requirements") or {}).items()
            if isinstance(entry, Mapping) and entry.get("outcome") in failing
        )
        watched: list[str] = []
    else:
        watched = sorted(
            {
                str(f.get("rule"))
                for case in cases
                for f in case.get("monitors") or []
                if isinstance(f, Mapping) and f.get("outcome") in failing
            }
        )
        listed = {
            str(case.get("id")): _broken(case)
            for case in cases
            if case.get("outcome") in failing
            and not (_broken(case) and _broken(case) <= set(watched))
        }
        width = max((len(c) for c in listed), default=0)
        # each case line names the rules it broke, as a comment the reader ignores
        entries = [
            f"{c:<{width}}  # {' '.join(sorted(listed[c]))}" if listed[c] else c
            for c in sorted(listed)
        ]
    client = report.get("client") if isinstance(report.get("client"), Mapping) else None
    # the client's own words, kept on the comment's line: a line break in its name would
    # start a line the file's reader takes for an ID
    who = "the client"
    if client:
        who = f"{inline(client.get('name'))} {inline(client.get('version'))}"
    header = [
        f"# Expected failures of {who}: known gaps, one ID per line.",
        "# A listed ID that passes again fails the run as stale: then delete its line.",
    ]
    if watched:
        entries += ["# Rules a monitor saw broken (any case may fail them):", *watched]
    return "\n".join([*header, *entries]) + "\n"
