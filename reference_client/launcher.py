"""The `mcp-reference-host` program: the command line, wired to the driver.

Strategy: the `driver` command serves the harness adapter over the driver protocol, and
the adapter configures the host through the command line, as a user would. So the command
line (`cli`) cannot import the adapter without a cycle; this module, the program's entry
point, is the one place that knows both, and hands the driver to `cli.main`.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_host_conformance.reference_client import cli

__all__ = ["main"]


def _serve_driver(profiles: bool = False) -> int:
    from mcp_host_conformance.reference_client.adapter import driver_main  # imports harness

    return driver_main(profiles)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `mcp-reference-host ARGV...` in this process, with the real streams."""
    return cli.main(argv, serve_driver=_serve_driver)
