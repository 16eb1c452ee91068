"""`python -m reference_client`: the same as the `mcp-reference-host` command."""

import sys

from reference_client.cli import main

sys.exit(main())
