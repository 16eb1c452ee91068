"""`python -m mcp_host_conformance.mocks`: list the named mocks,
or serve some of them until Ctrl-C / SIGTERM.

Strategy: a thin shell over `mcp_host_conformance.mocks.named`. Each started mock
prints one line once it is ready (with `--json`, one JSON object per line), so a script
can read the lines and point a host at them. Mistakes a person makes (an unknown name, a
malformed spec file) get one line on stderr naming the problem and exit code 2; nothing
is left running.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any

USAGE_ERROR = 2

DESCRIPTION = (
    "Mock MCP servers (Streamable HTTP, HTTPS, stdio) and a mock OpenAI Responses service,\n"
    "each keeping a journal of what it received. All bind 127.0.0.1 on ephemeral ports.\n"
    "\n"
    "  python -m mcp_host_conformance.mocks list                      "
    "every mock, with one line on what it does\n"
    "  python -m mcp_host_conformance.mocks serve healthy tls         "
    "start some; one line per mock once ready\n"
    "  python -m mcp_host_conformance.mocks serve --all --json        "
    "all of them, one JSON object per line\n"
    "  python -m mcp_host_conformance.mocks serve --spec my.toml      "
    "serve your own spec file (JSON or TOML)\n"
    "\n"
    "HTTP mocks serve their journal at GET /__journal and clear it with POST /__reset.\n"
    "A stdio mock is not started here: its line gives the command a host should run, and\n"
    "its journal is a JSON-lines file. Ctrl-C or SIGTERM stops everything."
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, not usage + line
        sys.exit(_fail(f"{message} (see python -m mcp_host_conformance.mocks --help)"))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m mcp_host_conformance.mocks",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,serve}")
    commands.add_parser("list", help="print every mock by name with one line on what it does")
    serve = commands.add_parser("serve", help="start mocks and print where they are")
    serve.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="names from `python -m mcp_host_conformance.mocks list`",
    )
    serve.add_argument("--all", action="store_true", help="start every mock in the catalog")
    serve.add_argument(
        "--spec",
        action="append",
        default=[],
        metavar="FILE",
        help="serve a spec file (JSON or TOML) as an HTTP mock",
    )
    serve.add_argument(
        "--json", action="store_true", help="print one JSON object per mock instead of text"
    )
    return parser


def _version() -> str:
    from mcp_host_conformance import __version__

    return f"mcp-mocks (mcp-host-conformance) {__version__}"


def _fail(message: str) -> int:
    print(f"python -m mcp_host_conformance.mocks: error: {message}", file=sys.stderr)
    return USAGE_ERROR


def _text_line(described: dict[str, Any]) -> str:
    where = described.get("url") or ("command " + shlex.join(described.get("command", [])))
    extras = " ".join(
        f"{k} {v}" for k, v in described.items() if k not in ("name", "kind", "url", "command")
    )
    return f"{described['name']}  {where}  {extras}"


def _list() -> int:
    from mcp_host_conformance.mocks.named import CATALOG

    width = max(len(name) for name in CATALOG)
    for entry in CATALOG.values():
        print(f"{entry.name:<{width}}  {entry.kind:<9}  {entry.summary}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from mcp_host_conformance.mocks.named import CATALOG, start, start_spec
    from mcp_host_conformance.mocks.spec import SpecError, load_spec

    names = list(CATALOG) if args.all else list(args.names)
    unknown = [n for n in names if n not in CATALOG]
    if unknown:
        return _fail(
            f"unknown mock {', '.join(map(repr, unknown))}; "
            "`python -m mcp_host_conformance.mocks list` shows the names"
        )
    specs = []
    for path in args.spec:
        try:
            specs.append(load_spec(path))
        except SpecError as exc:
            return _fail(str(exc))
    if not names and not specs:
        return _fail("nothing to serve: give mock names, --all or --spec FILE")

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    workdir = tempfile.mkdtemp(prefix="mocks-")
    running = []
    try:
        for name in names:
            running.append(start(CATALOG[name], workdir))
            _announce(running[-1].describe(), args.json)
        for spec in specs:
            running.append(start_spec(spec))
            _announce(running[-1].describe(), args.json)
        if not args.json:
            print("ready; Ctrl-C to stop", file=sys.stderr, flush=True)
        stop.wait()
    finally:
        for mock in reversed(running):
            mock.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _announce(described: dict[str, Any], as_json: bool) -> None:
    print(json.dumps(described) if as_json else _text_line(described), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            code = _list()
        else:
            code = _serve(args)  # its `finally` stops every mock, whatever ends it
        # A short listing sits in the buffer until exit; flushing here keeps a closed pipe
        # inside this handler instead of the interpreter's shutdown (exit 120).
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`mcp-mocks list | head -1`): that is its choice, not an
        # error. Point stdout at /dev/null so the interpreter's last flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0


if __name__ == "__main__":
    sys.exit(main())
