"""`python -m mcp_host_conformance`: the `mcp-host-conformance` command.

`python -m` puts the current directory first on `sys.path`; the installed command does not.
It is taken off again (as `python -m pip` does), so both import the same client: an adapter
beside the project is found through `run --client-path DIR`, never by where the run starts.
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from mcp_host_conformance.harness.cli import main  # noqa: E402 - after the path is settled

raise SystemExit(main())
