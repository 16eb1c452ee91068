"""A driver whose adapter has none of the optional parts (no project_config, no question
callback): served over the driver protocol for test_driver.py."""

from __future__ import annotations

import sys

from mcp_host_conformance.harness.contract.adapter import Description, Shown
from mcp_host_conformance.harness.contract.driver_server import serve


class BareAdapter:
    def describe(self):
        return Description(name="bare", version="0")

    def add_server(self, home, server):
        return Shown(text="")

    def remove_server(self, home, name):
        return Shown(text="")

    def list_servers(self, home):
        return Shown(text="")

    def start(self, options):
        raise RuntimeError("not needed here")


if __name__ == "__main__":
    sys.exit(serve(BareAdapter()))
