"""Where a run imports an in-process adapter from: the folders `--client-path` names.

Strategy: the adapter's import path is said on the command line, never found by accident
(the folder pytest happened to pick as its rootdir, or the current directory of `python -m`),
so a run imports the same adapter wherever it is started and wherever its baseline file
lies. The folders go first on `sys.path` of the run (its forked workers inherit it) and of
every restarted host process (`fresh_process`, given them as arguments).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

__all__ = ["add_client_path", "client_path_problem"]


def client_path_problem(folder: str) -> str | None:
    """Why `folder` cannot be a client path (one line), or None."""
    if not folder.strip():
        return "--client-path is empty: name the folder your adapter's package is in"
    if not Path(folder).is_dir():
        shown = folder if len(folder) <= 200 else folder[:200] + "..."
        return f"--client-path {shown!r}: not a folder"
    return None


def add_client_path(folders: Iterable[str]) -> None:
    """Put `folders` (absolute) first on sys.path, in the order given, once each;
    `pytest.UsageError` with one line for a folder that is not one."""
    absolute = []
    for folder in folders:
        problem = client_path_problem(folder)
        if problem is not None:
            raise pytest.UsageError(f"mcp-host-conformance: {problem}")
        absolute.append(os.path.abspath(folder))
    for folder in reversed(absolute):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
