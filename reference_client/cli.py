"""The command line: `mcp-reference-host` (also `python -m mcp_host_conformance.reference_client`).

Strategy: a thin layer of argparse over the configuration store, the session log and the
Host; every rule lives elsewhere. `main` takes its environment and streams as parameters so
tests and the harness adapter drive it in-process exactly as a user would from a shell.

Secrets never come from argv, where shell history, `ps` and logs would keep them: `--header
NAME` prompts for the value with echo off, `--header-from-env NAME=VAR` (and
`--env-from-env`) reads it from an environment variable for scripts. An argument that looks
like `Name: value` is refused without being repeated. Everything printed about servers is
passed through a redactor built from the configured secrets, so no command can show one.

Exit codes: 0 success, 1 a runtime problem (unreadable configuration, unknown session...),
2 a usage error. An error is one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from mcp_host_conformance.reference_client.config import (
    ConfigError,
    ConfigStore,
    HttpServerConfig,
    StdioServerConfig,
    destination,
    secrets_of,
    url_refusal,
)
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.sessions import SessionError, SessionLog, list_sessions
from mcp_host_conformance.reference_client.terminal import TerminalUI, read_secret

__all__ = ["main"]

PROG = "mcp-reference-host"
DEFAULT_MODEL_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BANNER = (
    "mcp-reference-host chat. Type your question; /exit or Ctrl-D leaves, "
    "Ctrl-C cancels a running call."
)

_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UsageError(Exception):
    """Bad command line; exit code 2."""


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse that writes to our streams and raises instead of exiting the process."""

    def __init__(self, *args, out: TextIO, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._out = out

    def _print_message(self, message: str, file=None) -> None:  # noqa: ARG002
        if message:
            self._out.write(message)

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            self._out.write(message)
        raise _Exit(status)

    def error(self, message: str):
        if message.startswith("unrecognized arguments"):
            # They may hold a secret typed in the wrong place: do not repeat them.
            message = "unrecognized arguments (not repeated here in case they hold a secret)"
        raise UsageError(f"{message} (see {self.prog} --help)")


def _pair(text: str, flag: str) -> tuple[str, str]:
    name, sep, var = text.partition("=")
    if not sep or not name or not var:
        raise UsageError(f"{flag} takes NAME=VAR, the name and the environment variable to read")
    return name, var


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
    commands = parser.add_subparsers(dest="top_command", metavar="COMMAND", parser_class=make)
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
        type=float,
        default=10.0,
        metavar="S",
        help="seconds allowed for each server to connect and list its tools (default: 10)",
    )
    chat.add_argument(
        "--call-timeout",
        type=float,
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
    commands.add_parser(
        "driver",
        help="serve the conformance driver protocol on stdio (for the test suite)",
        description="Serve the conformance suite's driver protocol over stdin/stdout.",
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


# ---- mcp add / list / remove ------------------------------------------------------------


def _secret_values(
    names: list[str],
    from_env: list[str],
    *,
    kind: str,
    flag: str,
    pattern: re.Pattern[str],
    environ: Mapping[str, str],
    stdin: TextIO,
    stdout: TextIO,
) -> dict[str, str]:
    values: dict[str, str] = {}
    for name in names:
        if not pattern.match(name):
            raise UsageError(
                f"{flag} takes a {kind} name only "
                f"(like {'X-Api-Key' if kind == 'header' else 'API_TOKEN'}); "
                f"type the value at the hidden prompt, or use {flag}-from-env NAME=VAR. "
                "Never put a secret on the command line."
            )
    pairs = [_pair(text, f"{flag}-from-env") for text in from_env]
    for name, var in pairs:
        if not pattern.match(name):
            raise UsageError(f"{flag}-from-env: {name!r} is not a valid {kind} name")
        value = environ.get(var)
        if not value:
            raise UsageError(f"{flag}-from-env: the environment variable {var} is not set")
        values[name] = value
    for name in names:
        value = read_secret(
            f"Value for {kind} {name} (typing is hidden): ", stdin=stdin, stdout=stdout
        )
        if value is None or not value:
            raise UsageError(f"no value was given for {kind} {name}")
        values[name] = value
    for name, value in values.items():
        if "\r" in value or "\n" in value or "\0" in value:
            raise UsageError(f"the value of {kind} {name} contains a line break or NUL")
    return values


def _add(args, environ: Mapping[str, str], stdin: TextIO, stdout: TextIO) -> int:
    store = ConfigStore(environ)
    if (args.url is None) == (args.command is None):
        raise UsageError("give either a URL (remote server) or --command CMD (stdio server)")
    if args.url is not None:
        if args.arg or args.env or args.env_from_env:
            raise UsageError("--arg, --env and --env-from-env are for stdio servers (--command)")
        try:
            parts = urlsplit(args.url)
            has_userinfo = parts.username is not None or parts.password is not None
        except ValueError:
            raise UsageError("the URL is not valid") from None
        if has_userinfo:
            raise UsageError("the URL must not contain a user name or password; use --header")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError("the URL must be an https:// URL with a host name")
        headers = _secret_values(
            args.header,
            args.header_from_env,
            kind="header",
            flag="--header",
            pattern=_HEADER_NAME,
            environ=environ,
            stdin=stdin,
            stdout=stdout,
        )
        server: HttpServerConfig | StdioServerConfig = HttpServerConfig(
            args.name, args.url, headers
        )
        names, label = list(headers), "headers"
    else:
        if args.header or args.header_from_env:
            raise UsageError("--header and --header-from-env are for remote servers (URL)")
        if not args.command:
            raise UsageError("--command needs the program to run")
        env = _secret_values(
            args.env,
            args.env_from_env,
            kind="variable",
            flag="--env",
            pattern=_ENV_NAME,
            environ=environ,
            stdin=stdin,
            stdout=stdout,
        )
        server = StdioServerConfig(args.name, args.command, list(args.arg), env)
        names, label = list(env), "variables"
    redactor = Redactor(secrets_of([server]))
    path = store.add(server)
    lines = [f"Added MCP server {server.name}: {destination(server)}"]
    if names:
        lines.append(f"  {label}: {', '.join(names)} (values stored, not shown)")
    lines.append(f"Wrote {path} (mode 0600).")
    if isinstance(server, HttpServerConfig):
        refusal = url_refusal(server.url)
        if refusal:
            lines.append(f"Warning: this server will be refused at connection: {refusal}.")
    lines.append("Not connected yet: it will be connected the next time chat starts.")
    stdout.write(redactor.redact("\n".join(lines)) + "\n")
    return 0


def _list(environ: Mapping[str, str], stdout: TextIO) -> int:
    servers = ConfigStore(environ).load()
    if not servers:
        stdout.write(f"No MCP servers configured. Add one with: {PROG} mcp add NAME URL\n")
        return 0
    lines = []
    for server in servers:
        if isinstance(server, HttpServerConfig):
            extra = f"  headers: {', '.join(server.headers)}" if server.headers else ""
        else:
            extra = f"  variables: {', '.join(server.env)}" if server.env else ""
        kind = "http " if isinstance(server, HttpServerConfig) else "stdio"
        lines.append(f"{server.name}  {kind}  {destination(server)}{extra}")
    # Only names are printed; the redactor is the guarantee (CFG-4).
    stdout.write(Redactor(secrets_of(servers)).redact("\n".join(lines)) + "\n")
    return 0


def _remove(name: str, environ: Mapping[str, str], stdout: TextIO) -> int:
    if ConfigStore(environ).remove(name):
        stdout.write(f"Removed MCP server {name}.\n")
        return 0
    raise ConfigError(f"no server named {name!r}; see `{PROG} mcp list`")


# ---- sessions ---------------------------------------------------------------------------


def _first_question(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            for raw in f:
                try:
                    item = json.loads(raw)
                except (ValueError, RecursionError):
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
        stdout.write(f"{session_id}{suffix}\n")
    stdout.write(f"Resume one with: {PROG} chat --resume ID\n")
    return 0


# ---- chat -------------------------------------------------------------------------------


async def _chat(args, environ: Mapping[str, str], stdin: TextIO, stdout: TextIO) -> int:
    from mcp_host_conformance.reference_client.host import (
        Host,  # the engine; imported only when chatting
    )

    model_key = environ.get(args.model_key_env, "")
    if not model_key:
        raise UsageError(
            f"the model API key is not set: export {args.model_key_env} "
            "(or name another variable with --model-key-env)"
        )
    model_url = args.model_url or environ.get("OPENAI_BASE_URL") or DEFAULT_MODEL_URL
    servers = ConfigStore(environ).load()
    redactor = Redactor([*secrets_of(servers), model_key])
    ui = TerminalUI(stdin, stdout)

    history = None
    if args.resume:
        session, history, warnings = SessionLog.open(environ, args.resume, redactor=redactor)
        ui.show(f"Resuming session {session.id} ({len(history)} items).")
        for warning in warnings:
            ui.show(redactor.redact(f"Warning: {warning}"))
    else:
        session = SessionLog.create(environ, redactor=redactor)

    host = Host(
        servers,
        model_url=model_url,
        model_key=model_key,
        environ=environ,
        cwd=Path.cwd(),
        ui=ui,
        connect_timeout=args.connect_timeout,
        call_timeout=args.call_timeout,
        ca_file=args.ca_file,
        session=session,
        history=history,
    )
    asking = False

    def on_interrupt() -> None:
        if asking:
            host.cancel()
        else:
            ui.show("\n(type /exit or press Ctrl-D to leave)")

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        handles_sigint = True
    except (RuntimeError, ValueError, NotImplementedError):
        handles_sigint = False  # not the main thread (e.g. driven in-process)
    try:
        await host.start()  # prints one status line per server
        ui.show(BANNER)
        ui.show(f"Session {session.id}")
        while True:
            question = await ui.question("You> ")
            if question is None:
                ui.show("")
                break
            question = question.strip()
            if question == "/exit":
                break
            if not question:
                continue
            asking = True
            try:
                await host.ask(question)
            finally:
                asking = False
    finally:
        if handles_sigint:
            loop.remove_signal_handler(signal.SIGINT)
        await host.close()
        session.close()
        ui.show(f"Session saved. Resume with: {PROG} chat --resume {session.id}")
    return 0


# ---- entry point ------------------------------------------------------------------------


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one command. Errors go to `stderr` (default: `stdout` when it is given, so an
    in-process caller sees everything, else sys.stderr)."""
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
            if args.mcp_command == "add":
                return _add(args, environ, stdin, stdout)
            if args.mcp_command == "list":
                return _list(environ, stdout)
            return _remove(args.name, environ, stdout)
        if args.top_command == "sessions":
            return _sessions(environ, stdout)
        if args.top_command == "chat":
            return asyncio.run(_chat(args, environ, stdin, stdout))
        from mcp_host_conformance.reference_client.adapter import driver_main

        return driver_main() or 0
    except _Exit as done:
        return done.status
    except UsageError as error:
        stderr.write(f"{PROG}: error: {error}\n")
        return 2
    except (ConfigError, SessionError) as error:
        stderr.write(f"{PROG}: error: {error}\n")
        return 1
    except KeyboardInterrupt:
        stderr.write("\n")
        return 130
    finally:
        _CURRENT_OUT.stream = previous_out
        stdout.flush()
        stderr.flush()
