"""Standalone mock model: `python -m mcp_host_conformance.mocks.responses`.

Serves the Responses API, Chat Completions and the Anthropic Messages API on one port.
Prints one JSON line with the OpenAI base URL (`url`), the Anthropic one
(`anthropic_url`), the key and the journal URL, then serves until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

from mcp_host_conformance.mocks.json_input import MAX_JSON_BYTES, read_json
from mcp_host_conformance.mocks.responses.mock import MockResponses
from mcp_host_conformance.mocks.responses.script import script_from_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_host_conformance.mocks.responses",
        description="The mock model (OpenAI Responses, Chat Completions, Anthropic Messages), "
        "standalone.",
    )
    parser.add_argument("--script", help="JSON file holding a list of steps (default: autopilot)")
    parser.add_argument("--api-key", help="the key to accept (default: random)")
    args = parser.parse_args(argv)
    steps = None
    if args.script:
        try:
            with open(args.script, "rb") as f:
                steps = script_from_json(read_json(f.read(MAX_JSON_BYTES + 1)))
        except (OSError, ValueError) as exc:  # JsonInputError is a ValueError
            print(
                f"mcp_host_conformance.mocks.responses: bad --script {args.script}: {exc}",
                file=sys.stderr,
            )
            return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with MockResponses(api_key=args.api_key) as model:
        model.script(steps)
        line = {
            "name": "responses",
            "url": model.url,
            "anthropic_url": model.anthropic_url,
            "api_key": model.api_key,
            "journal": model.journal_url,
        }
        try:
            print(json.dumps(line), flush=True)
            stop.wait()
        except KeyboardInterrupt:
            pass
        except BrokenPipeError:  # nobody reads where the service is: stop quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
