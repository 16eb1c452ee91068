"""mcp-host-conformance: a conformance suite for MCP hosts.

The installed import names are `mcp_host_conformance.harness` (adapter contract, pytest
plugin, reports), `.conformance` (the cases), `.mocks` (mock MCP servers and the mock
Responses service), `.reference_client` (the reference host) and `.zoo` (broken clients
the suite must catch). In the repository each is a top-level folder (the zoo is
`tests/zoo`), mapped under this one name, which cannot collide with a host project's own
packages: by `pyproject.toml` (`package-dir`) in a wheel or an editable install, and by
`_Checkout` below where no install maps them (a process started with `python -S`, as the
stdio mock is, or a checkout on `PYTHONPATH`).
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

# Each part's import name under this package, and its folder in the repository.
PARTS: dict[str, str] = {
    "harness": "harness",
    "mocks": "mocks",
    "conformance": "conformance",
    "reference_client": "reference_client",
    "zoo": "tests/zoo",
}


class _Checkout:
    """Finds the parts of this package in a repository checkout: `mcp_host_conformance.NAME`
    in the folder PARTS names, beside this one. Consulted only after the import system's own
    finders (a wheel holds the parts inside this folder; an editable install maps them)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        head, _, part = fullname.partition(".")
        if head != __name__ or part not in PARTS:
            return None
        import os
        from importlib.machinery import PathFinder

        folder = os.path.join(self.root, *PARTS[part].split("/"))
        return PathFinder.find_spec(fullname, [os.path.dirname(folder)])


def _map_checkout() -> None:
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    in_checkout = not os.path.isdir(os.path.join(here, "harness")) and os.path.isfile(
        os.path.join(root, "harness", "__init__.py")
    )
    if in_checkout and not any(isinstance(f, _Checkout) for f in sys.meta_path):
        sys.meta_path.append(_Checkout(root))


_map_checkout()


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
