"""Where the reports go: checked before any case runs, written without losing the run.

Strategy: a report path that cannot be written (a directory that does not exist, a path
that is a directory, an empty option from an unset variable) must not be found after the
whole run, as a traceback that also loses the summary. `unwritable_reports` looks at every
report path of the run (`--report-json`, `--report-html`, `--report-markdown`, and pytest's
`--junitxml`) before any case runs and says what is wrong with the first bad one in one
line; it creates nothing.
At the end `write_report` writes one report and says why it could not (a full disk; what it
had written is removed), so the reporting can print one line and keep the summary. The
decisions are plain functions of a path and the file system.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mcp_host_conformance.harness.cases.items import option
from mcp_host_conformance.harness.verdicts.safe_text import inline

__all__ = ["destination_problem", "unwritable_reports", "write_report"]


def destination_problem(path: str, *, makes_directories: bool = False) -> str | None:
    """Why a report cannot be written to `path`, or None; creates nothing. With
    `makes_directories` the writer creates missing directories itself (pytest's JUnit
    report), so the nearest directory that exists must be writable."""
    if not path.strip():
        return "is empty (an unset variable?): name the file, or leave the option out"
    target = Path(path)
    try:
        if target.is_dir():
            return "cannot be written: it is a directory"
        where = target.absolute().parent
        if makes_directories:
            while not where.exists() and where != where.parent:
                where = where.parent
        if not where.exists():
            return f"cannot be written: the directory {inline(where)} does not exist"
        if not where.is_dir():
            return f"cannot be written: {inline(where)} is not a directory"
        if target.exists():
            if not os.access(target, os.W_OK):
                return "cannot be written: permission denied"
        elif not os.access(where, os.W_OK | os.X_OK):
            return f"cannot be written: the directory {inline(where)} is not writable"
    except OSError as exc:  # a name too long, a loop of links
        return f"cannot be written: {exc.strerror or exc}"
    return None


def unwritable_reports(config: pytest.Config, *, junit: bool) -> str | None:
    """The first report path of this run that cannot be written, as one line; None when
    every one can. `junit`: check pytest's `--junitxml` too (in a run of the suite)."""
    paths: list[tuple[str, str, bool]] = []
    for flag, name in (
        ("--report-json", "report_json"),
        ("--report-html", "report_html"),
        ("--report-markdown", "report_markdown"),
    ):
        value: str | None = option(config, name, None)
        if value is not None:
            paths.append((flag, value, False))
    xml: str | None = getattr(config.option, "xmlpath", None)
    if junit and xml is not None:
        # as pytest's junitxml plugin reads it
        paths.append(("--junitxml", os.path.expanduser(os.path.expandvars(xml)), True))
    for flag, path, makes_directories in paths:
        problem = destination_problem(path, makes_directories=makes_directories)
        if problem is not None:
            return f"{flag} {inline(path)}: {problem}; nothing was run"
    return None


def write_report(path: str, text: str) -> str | None:
    """Write `text` to `path` (UTF-8); None, or why it could not be written. A plain file
    cut short (the disk filled while writing) is removed: a reader must not take half a
    report for the run's."""
    try:
        Path(path).write_text(text, "utf-8")
    except OSError as exc:
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):  # never a device (/dev/full) or a link
                os.unlink(path)
        except OSError:  # nothing was made, or it cannot be removed either: said the same
            pass
        return exc.strerror or str(exc)
    return None
