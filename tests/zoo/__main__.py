"""`python -m mcp_host_conformance.zoo NAME ARGS...`: broken client NAME's command line,
as a person runs it.

Strategy: a broken client is the reference client with patches applied in-process, but
some cases run the host's own command in a terminal of their own (CRED-5 types a secret at
`mcp add`). This entry point applies NAME's patches and then runs the reference command
line with ARGS, so such a command shows the same bug as the broken adapter.
"""

from __future__ import annotations

import sys

from mcp_host_conformance.zoo import BROKEN
from mcp_host_conformance.zoo.client import apply


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BROKEN:
        print(
            "usage: python -m mcp_host_conformance.zoo BROKEN-CLIENT "
            "[mcp-reference-host arguments...]",
            file=sys.stderr,
        )
        return 2
    apply(BROKEN[argv[0]])
    from mcp_host_conformance.reference_client.launcher import main as reference_main

    return reference_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
