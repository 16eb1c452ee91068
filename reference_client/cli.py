"""The command line: `mcp-reference-host` (also `python -m mcp_host_conformance.reference_client`).

Strategy: a thin layer of argparse over the configuration commands (`server_commands`),
the session list and the engine; every rule lives elsewhere. `main` takes its environment
and streams as parameters so tests and the harness adapter drive it in-process exactly as
a user would from a shell. The `driver` command serves the harness adapter, which itself
runs this command line: so `main` does not import the adapter, it is handed the driver
(`serve_driver`) by the program's entry point (`launcher.main`).

Everything printed passes `display.terminal_safe`; numbers of seconds are checked
(positive and finite); secrets never come from argv (see `server_commands`).

Exit codes: 0 success, 1 a runtime problem (unreadable configuration, unknown session...),
2 a usage error. An error is one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, NoReturn, TextIO

from mcp_host_conformance.reference_client import server_commands, untrusted_json
from mcp_host_conformance.reference_client.config import ConfigError
from mcp_host_conformance.reference_client.console import TerminalUI
from mcp_host_conformance.reference_client.display import terminal_safe
from mcp_host_conformance.reference_client.server_commands import PROG, UsageError
from mcp_host_conformance.reference_client.sessions import SessionError, list_sessions

__all__ = ["PROG", "UsageError", "main", "seconds"]

MAX_SECONDS = 24 * 60 * 60
DEFAULT_MODEL_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BANNER = (
    "mcp-reference-host chat. Type your question; /exit or Ctrl-D leaves, "
    "Ctrl-C cancels a running call, /review reviews tools waiting for approval."
)


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse that writes to our streams and raises instead of exiting the process."""

    def __init__(self, *args: Any, out: TextIO, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._out = out

    def _print_message(self, message: str, file: Any = None) -> None:  # noqa: ARG002
        if message:
            self._out.write(terminal_safe(message))

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._out.write(terminal_safe(message))
        raise _Exit(status)

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            # They may hold a secret typed in the wrong place: do not repeat them.
            message = "unrecognized arguments (not repeated here in case they hold a secret)"
        raise UsageError(f"{message} (see {self.prog} --help)")


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, positive, finite, at most a day."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds greater than 0 and at most {MAX_SECONDS} "
            f"(got {terminal_safe(text, one_line=True)[:20]!r})"
        )
    return value


def _build_parser(out: TextIO) -> argparse.ArgumentParser:
    make = partial(_Parser, out=out)
    fmt = argparse.RawDescriptionHelpFormatter
    parser = make(
        prog=PROG,
        description="A reference MCP host: chat with a model that can call tools on MCP servers, "
        "each call after your approval.",
        epilog="Configuration: $XDG_CONFIG_HOME/mcp-reference-host/servers.json (default "
        "~/.config/...), private (0600). Sessions: ~/.local/share/mcp-reference-host/sessions/.",
        formatter_class=fmt,
    )
    commands = parser.add_subparsers(dest="top_command", metavar="COMMAND", parser_class=make)  # type: ignore[call-overload]
    commands.required = True

    mcp = commands.add_parser(
        "mcp", help="add, list or remove MCP servers", description="Manage the MCP servers."
    )
    mcp_commands = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", parser_class=make)
    mcp_commands.required = True
    add = mcp_commands.add_parser(
        "add",
        help="add a server (does not connect to it)",
        formatter_class=fmt,
        description="Add a remote server (NAME URL) or a local stdio server (NAME --command CMD).\n"
        "Adding does not connect: the first connection happens the next time chat starts.\n"
        "Secrets never go on the command line: --header NAME prompts for the value with echo\n"
        "off; --header-from-env NAME=VAR reads it from the environment variable VAR.",
        epilog="examples:\n"
        "  mcp-reference-host mcp add docs https://docs.example.com/mcp --header X-Api-Key\n"
        "  DOCS_KEY=... mcp-reference-host mcp add docs https://docs.example.com/mcp \\\n"
        "      --header-from-env X-Api-Key=DOCS_KEY\n"
        "  mcp-reference-host mcp add files --command /usr/local/bin/files-server "
        "--arg=--root --arg=/tmp --env-from-env TOKEN=FILES_TOKEN\n"
        "(use --arg=VALUE when VALUE starts with a dash)",
    )
    add.add_argument("name", metavar="NAME", help="a short name for the server, e.g. docs")
    add.add_argument(
        "url", metavar="URL", nargs="?", help="the server's HTTPS URL (remote servers)"
    )
    add.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME",
        help="a header to send, by NAME only; its value is prompted for with echo off",
    )
    add.add_argument(
        "--header-from-env",
        action="append",
        default=[],
        metavar="NAME=VAR",
        help="a header whose value is read from the environment variable VAR",
    )
    add.add_argument("--command", metavar="CMD", help="the program to run (stdio servers)")
    add.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an argument for the program, passed verbatim (no shell); repeat for more",
    )
    add.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="an environment variable for the program; its value is prompted for with echo off",
    )
    add.add_argument(
        "--env-from-env",
        action="append",
        default=[],
        metavar="NAME=VAR",
        help="an environment variable NAME for the program, its value read from VAR",
    )
    add.add_argument(
        "--oauth",
        action="store_true",
        help="the server uses OAuth (profile oauth): authorize in a browser at the next start",
    )
    add.add_argument(
        "--oauth-client-id",
        metavar="ID",
        help="a client id registered for this host at the server's authorization server "
        "(with --oauth; default: dynamic registration)",
    )
    add.add_argument(
        "--oauth-client-secret-from-env",
        metavar="VAR",
        help="that client's secret, read from the environment variable VAR",
    )
    add.add_argument(
        "--oauth-client-metadata-url",
        metavar="URL",
        help="an HTTPS URL of this host's client ID metadata document, presented as its client "
        "id where the authorization server supports that",
    )
    add.add_argument(
        "--ca-file",
        type=Path,
        metavar="PATH",
        help="an extra CA certificate to trust for the first sync (profile verified-add)",
    )
    add.add_argument(
        "--connect-timeout",
        type=seconds,
        metavar="S",
        help="seconds allowed for the first sync (profile verified-add; default: 10)",
    )
    allow = mcp_commands.add_parser(
        "allow-address",
        help="allow exact private addresses (profile private-address-refusal)",
        description="Allow connections to these exact IP addresses although private or "
        "internal addresses are refused (profile private-address-refusal), e.g. a test "
        "harness's 127.0.0.1.",
    )
    allow.add_argument("addresses", metavar="ADDRESS", nargs="+")
    mcp_commands.add_parser(
        "list",
        help="list servers (names and destinations; never header or variable values)",
        description="List the configured servers: names, destinations, and the NAMES of their "
        "headers and variables (never their values).",
    )
    remove = mcp_commands.add_parser(
        "remove", help="remove a server", description="Remove a server from the configuration."
    )
    remove.add_argument("name", metavar="NAME")

    chat = commands.add_parser(
        "chat",
        help="start chatting (connects to every configured server)",
        description="Connect to every configured server, then read questions line by line. "
        "Each MCP call asks for your approval first.",
    )
    chat.add_argument("--resume", metavar="SESSION", help="reopen a saved session (see `sessions`)")
    chat.add_argument(
        "--model-url",
        metavar="URL",
        help=f"Responses API base URL (default: $OPENAI_BASE_URL or {DEFAULT_MODEL_URL})",
    )
    chat.add_argument(
        "--model-key-env",
        metavar="VAR",
        default=DEFAULT_KEY_ENV,
        help=f"the environment variable holding the model API key (default: {DEFAULT_KEY_ENV})",
    )
    chat.add_argument(
        "--connect-timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="seconds allowed for each server to connect and list its tools (default: 10)",
    )
    chat.add_argument(
        "--call-timeout",
        type=seconds,
        default=30.0,
        metavar="S",
        help="seconds allowed for each MCP call before its outcome is unknown (default: 30)",
    )
    chat.add_argument(
        "--ca-file", type=Path, metavar="PATH", help="an extra CA certificate to trust for HTTPS"
    )
    commands.add_parser(
        "sessions", help="list saved sessions", description="List saved sessions, oldest first."
    )
    profiles = commands.add_parser(
        "profiles",
        help="show or switch the optional profiles (pinning, verified-add, ...)",
        description="Show the optional profiles, or switch them on or off. "
        "Profiles: pinning (every tool waits for your approval, and again when its text "
        "changes), verified-add (mcp add lists the tools at once; nothing is saved if that "
        "fails), schema-validation (arguments are checked against the tool's schema), "
        "private-address-refusal (servers at private or internal addresses are refused), "
        "untrusted-marking (results are marked untrusted for the model), "
        "instruction-flagging (tool text that reads like instructions is flagged), "
        "oauth (servers added with --oauth are authorized in a browser).",
    )
    profiles.add_argument(
        "action", nargs="?", choices=("list", "enable", "disable"), default="list"
    )
    profiles.add_argument("names", nargs="*", metavar="PROFILE", help="profile names, or all")
    driver = commands.add_parser(
        "driver",
        help="serve the conformance driver protocol on stdio (for the test suite)",
        description="Serve the conformance suite's driver protocol over stdin/stdout.",
    )
    driver.add_argument(
        "--profiles",
        action="store_true",
        help="with every optional profile switched on, claiming them all",
    )
    return parser


class _CurrentOut(threading.local):
    """The stdout of the `main` call running on this thread: where the shared parser writes."""

    stream: TextIO | None = None

    def write(self, text: str) -> int:
        return (self.stream or sys.stdout).write(text)


_CURRENT_OUT = _CurrentOut()


@lru_cache(maxsize=1)
def _shared_parser() -> argparse.ArgumentParser:
    # Building the parser costs milliseconds (argparse looks up a translation for every
    # string), once per command; parsing keeps no state in it, so one is built per process.
    return _build_parser(_CURRENT_OUT)  # type: ignore[arg-type]


# ---- sessions ---------------------------------------------------------------------------


def _first_question(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            for raw in f:
                try:
                    item = untrusted_json.decode(raw)
                except untrusted_json.UntrustedJsonError:
                    continue
                if isinstance(item, dict) and item.get("role") == "user":
                    content = item.get("content")
                    if isinstance(content, str):
                        text = " ".join(content.split())
                        return text if len(text) <= 60 else text[:57] + "..."
    except OSError:
        return ""
    return ""


def _sessions(environ: Mapping[str, str], stdout: TextIO) -> int:
    found = list_sessions(environ)
    if not found:
        stdout.write("No saved sessions.\n")
        return 0
    for session_id, path in found:
        question = _first_question(path)
        suffix = f"  {json.dumps(question, ensure_ascii=False)}" if question else ""
        stdout.write(terminal_safe(f"{session_id}{suffix}", one_line=True) + "\n")
    stdout.write(f"Resume one with: {PROG} chat --resume ID\n")
    return 0


# ---- chat -------------------------------------------------------------------------------


async def _chat(
    args: argparse.Namespace, environ: Mapping[str, str], stdin: TextIO, stdout: TextIO
) -> int:
    from mcp_host_conformance.reference_client.engine import open_engine  # only when chatting

    model_key = environ.get(args.model_key_env, "")
    if not model_key:
        raise UsageError(
            f"the model API key is not set: export {args.model_key_env} "
            "(or name another variable with --model-key-env)"
        )
    model_url = args.model_url or environ.get("OPENAI_BASE_URL") or DEFAULT_MODEL_URL
    ui = TerminalUI(stdin, stdout)
    engine = open_engine(
        environ=environ,
        model_url=model_url,
        model_key=model_key,
        cwd=Path.cwd(),
        ui=ui,
        resume=args.resume,
        connect_timeout=args.connect_timeout,
        call_timeout=args.call_timeout,
        ca_file=args.ca_file,
    )
    session_id = engine.session_log.id if engine.session_log is not None else ""
    asking = False

    def on_interrupt() -> None:
        if asking:
            engine.cancel()
        else:
            ui.show("\n(type /exit or press Ctrl-D to leave)")

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        handles_sigint = True
    except (RuntimeError, ValueError, NotImplementedError):
        handles_sigint = False  # not the main thread (e.g. driven in-process)
    try:
        await engine.start()  # prints one status line per server
        ui.show(BANNER)
        ui.show(f"Session {session_id}")
        if engine.waiting_tools():
            await engine.review(ui.review_tool)  # profile pinning: the person reviews first
        while True:
            question = await ui.question("You> ")
            if question is None:
                ui.show("")
                break
            question = question.strip()
            if question == "/exit":
                break
            if question == "/review":
                if not await engine.review(ui.review_tool):
                    ui.show("No MCP tool waits for your approval.")
                continue
            if not question:
                continue
            asking = True
            try:
                await engine.ask(question)
            finally:
                asking = False
    finally:
        if handles_sigint:
            loop.remove_signal_handler(signal.SIGINT)
        await engine.close()
        ui.show(f"Session saved. Resume with: {PROG} chat --resume {session_id}")
    return 0


# ---- entry point ------------------------------------------------------------------------


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    serve_driver: Callable[..., int] | None = None,
) -> int:
    """Run one command. Errors go to `stderr` (default: `stdout` when it is given, so an
    in-process caller sees everything, else sys.stderr). `serve_driver` runs the `driver`
    command; without it that command is refused."""
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ if environ is None else environ
    stdin = sys.stdin if stdin is None else stdin
    if stderr is None:
        stderr = stdout if stdout is not None else sys.stderr
    stdout = sys.stdout if stdout is None else stdout
    parser = _shared_parser()
    previous_out, _CURRENT_OUT.stream = _CURRENT_OUT.stream, stdout  # restored: main may nest
    try:
        args = parser.parse_args(argv)
        if args.top_command == "mcp":
            # Looked up in the module at each call: the zoo patches these seams there.
            if args.mcp_command == "add":
                return server_commands.add_server(args, environ, stdin, stdout)
            if args.mcp_command == "list":
                return server_commands.list_servers(environ, stdout)
            if args.mcp_command == "allow-address":
                return server_commands.allow_addresses(args.addresses, environ, stdout)
            return server_commands.remove_server(args.name, environ, stdout)
        if args.top_command == "sessions":
            return _sessions(environ, stdout)
        if args.top_command == "profiles":
            return server_commands.profiles_command(args.action, args.names, environ, stdout)
        if args.top_command == "chat":
            return asyncio.run(_chat(args, environ, stdin, stdout))
        if serve_driver is None:
            raise UsageError(f"the driver is served by the {PROG} program itself")
        return (serve_driver(profiles=True) if args.profiles else serve_driver()) or 0
    except _Exit as done:
        return done.status
    except UsageError as error:
        stderr.write(terminal_safe(f"{PROG}: error: {error}", one_line=True) + "\n")
        return 2
    except (ConfigError, SessionError) as error:
        stderr.write(terminal_safe(f"{PROG}: error: {error}", one_line=True) + "\n")
        return 1
    except KeyboardInterrupt:
        stderr.write("\n")
        return 130
    finally:
        _CURRENT_OUT.stream = previous_out
        stdout.flush()
        stderr.flush()
