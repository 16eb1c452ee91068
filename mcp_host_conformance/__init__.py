"""mcp-host-conformance: a conformance suite for MCP hosts.

The installed import names are `mcp_host_conformance.harness` (adapter contract, pytest
plugin, reports), `.conformance` (the cases), `.mocks` (mock MCP servers and the mock
Responses service), `.reference_client` (the reference host) and `.zoo` (broken clients
the suite must catch). In the repository each is a top-level folder; this package only
links them under one name that cannot collide with a host project's own packages.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcp-host-conformance")
except PackageNotFoundError:  # pragma: no cover - running from an uninstalled checkout
    __version__ = "0+unknown"
