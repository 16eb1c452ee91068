"""`python -m mcp_host_conformance.reference_client`:
the same as the `mcp-reference-host` command."""

import sys

from mcp_host_conformance.reference_client.launcher import main

sys.exit(main())
