"""mcp-host-conformance: a conformance suite for MCP hosts.

The installed import names are `mcp_host_conformance.harness` (adapter contract, pytest
plugin, reports), `.conformance` (the cases), `.mocks` (mock MCP servers and the mock
Responses service), `.reference_client` (the reference host) and `.zoo` (broken clients
the suite must catch). In the repository each is a top-level folder; this package only
links them under one name that cannot collide with a host project's own packages.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no `typing` at run time: a stdio mock process imports this package
if TYPE_CHECKING:
    from typing import Any

# httpx imports its command-line client when click and pygments are installed (they are, in
# a test environment: click, pygments, then an ImportError for rich), ~13 ms of CPU in every
# process that imports httpx: the suite's runs and workers, each restarted host, each official
# OAuth scenario's client command. Nothing here runs that client (its own `httpx` command
# does, in a process of its own); marked absent, httpx binds its stub instead. Without effect
# once httpx is imported.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def __getattr__(name: str) -> Any:
    # Looked up on first use: importlib.metadata costs a stdio mock process (which imports
    # this package) more than everything else it imports together.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp-host-conformance")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled checkout
        found = "0+unknown"
    globals()["__version__"] = found
    return found
