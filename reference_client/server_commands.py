"""`mcp add`, `mcp list`, `mcp remove`: the user's configuration commands (CFG-*, CRED-5).

Strategy: these commands are the only way servers (and their secrets) enter the
configuration, so they check everything a connection would later trip over, and say what
is wrong: the URL's form (`config.url_problem`), header names and values HTTP can carry
(`config.header_problem`), variable names. Adding never connects (CFG-1); a plain-HTTP URL
to a remote host is saved with a warning, because refusing it is the connection's rule
(NET-1). Secrets never come from argv: `--header NAME` prompts with echo off
(`console.read_secret`), `--header-from-env NAME=VAR` reads a variable. Everything printed
goes through a redactor built from the configured secrets, so no command can show one, and
through `display.terminal_safe`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from mcp_host_conformance.reference_client.config import (
    ConfigError,
    ConfigStore,
    HttpServerConfig,
    StdioServerConfig,
    destination,
    env_problem,
    header_problem,
    secrets_of,
    url_problem,
    url_refusal,
)
from mcp_host_conformance.reference_client.console import read_secret
from mcp_host_conformance.reference_client.display import terminal_safe
from mcp_host_conformance.reference_client.profiles import (
    PINNING,
    PROFILES,
    VERIFIED_ADD,
    SettingsStore,
)
from mcp_host_conformance.reference_client.redaction import Redactor
from mcp_host_conformance.reference_client.tool_approvals import ApprovalStore

__all__ = [
    "PROG",
    "UsageError",
    "add_server",
    "allow_addresses",
    "list_servers",
    "profiles_command",
    "remove_server",
]

PROG = "mcp-reference-host"
# Only the name's shape, to tell a name from a misplaced value; config checks it fully.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class UsageError(Exception):
    """Bad command line; exit code 2."""


def _pair(text: str, flag: str) -> tuple[str, str]:
    name, sep, var = text.partition("=")
    if not sep or not name or not var:
        raise UsageError(f"{flag} takes NAME=VAR, the name and the environment variable to read")
    return name, var


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
        if not pattern.fullmatch(name):
            raise UsageError(
                f"{flag} takes a {kind} name only "
                f"(like {'X-Api-Key' if kind == 'header' else 'API_TOKEN'}); "
                f"type the value at the hidden prompt, or use {flag}-from-env NAME=VAR. "
                "Never put a secret on the command line."
            )
    pairs = [_pair(text, f"{flag}-from-env") for text in from_env]
    for name, var in pairs:
        if not pattern.fullmatch(name):
            raise UsageError(
                f"{flag}-from-env: {terminal_safe(name, one_line=True)[:64]!r} "
                f"is not a valid {kind} name"
            )
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
        problem = header_problem(name, value) if kind == "header" else env_problem(name, value)
        if problem is None and ("\r" in value or "\n" in value):
            problem = f"the value of {kind} {name} contains a line break"
        if problem:
            raise UsageError(problem)
    return values


def add_server(
    args: argparse.Namespace, environ: Mapping[str, str], stdin: TextIO, stdout: TextIO
) -> int:
    """`mcp add NAME URL ...` or `mcp add NAME --command CMD ...`; never connects."""
    store = ConfigStore(environ)
    if (args.url is None) == (args.command is None):
        raise UsageError("give either a URL (remote server) or --command CMD (stdio server)")
    server: HttpServerConfig | StdioServerConfig
    if args.url is not None:
        if args.arg or args.env or args.env_from_env:
            raise UsageError("--arg, --env and --env-from-env are for stdio servers (--command)")
        problem = url_problem(args.url)
        if problem:
            raise UsageError(problem)
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
        server = HttpServerConfig(
            args.name, args.url, headers, bool(args.oauth), oauth_client(args, environ)
        )
        names, label = list(headers), "headers"
    else:
        if args.header or args.header_from_env:
            raise UsageError("--header and --header-from-env are for remote servers (URL)")
        if not args.command:
            raise UsageError("--command needs the program to run")
        if "\0" in args.command or any("\0" in arg for arg in args.arg):
            raise UsageError("the command or an argument contains a NUL character")
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
    settings = SettingsStore(environ).load()
    tools = None
    if settings.has(VERIFIED_ADD):
        check_short_name(server.name)
        store.check_new(server)  # a duplicate name is refused before connecting
        if not getattr(server, "oauth", False):  # an OAuth server is synced once authorized
            tools = sync_new_server(server, environ, settings, redactor, args)
    path = store.add(server)
    lines = [f"Added MCP server {server.name}: {destination(server)}"]
    if names:
        lines.append(f"  {label}: {', '.join(names)} (values stored, not shown)")
    lines.append(f"Wrote {path} (mode 0600).")
    if getattr(server, "oauth", False):
        lines.append(
            "OAuth: you will authorize this host in your browser the next time chat starts."
        )
    if tools is not None:
        lines += listed_tools(server, tools, environ, settings.has(PINNING))
    else:
        if isinstance(server, HttpServerConfig):
            refusal = url_refusal(server.url)
            if refusal:
                lines.append(f"Warning: this server will be refused at connection: {refusal}.")
        lines.append("Not connected yet: it will be connected the next time chat starts.")
    stdout.write(terminal_safe(redactor.redact("\n".join(lines))) + "\n")
    return 0


def oauth_client(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, str]:
    """The configured OAuth client of `mcp add --oauth` (empty: dynamic registration)."""
    client: dict[str, str] = {}
    given = [
        args.oauth_client_id,
        args.oauth_client_secret_from_env,
        args.oauth_client_metadata_url,
    ]
    if any(given) and not args.oauth:
        raise UsageError("--oauth-client-* options need --oauth")
    if args.oauth_client_id:
        client["client_id"] = args.oauth_client_id
    if args.oauth_client_secret_from_env:
        secret = environ.get(args.oauth_client_secret_from_env)
        if not secret:
            raise UsageError(
                f"the environment variable {args.oauth_client_secret_from_env} is not set"
            )
        client["client_secret"] = secret
    if args.oauth_client_metadata_url:
        if not args.oauth_client_metadata_url.startswith("https://"):
            raise UsageError("a client ID metadata document URL must use HTTPS")
        client["client_metadata_url"] = args.oauth_client_metadata_url
    return client


def check_short_name(name: str) -> None:
    """Profile verified-add (SYNC-2): only short lowercase names; UsageError otherwise."""
    from mcp_host_conformance.reference_client.verified_add import short_name_problem

    problem = short_name_problem(name)
    if problem:
        raise UsageError(f"{terminal_safe(name, one_line=True)[:80]!r}: {problem}")


def sync_new_server(
    server: HttpServerConfig | StdioServerConfig,
    environ: Mapping[str, str],
    settings: Any,
    redactor: Redactor,
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """Profile verified-add (SYNC-1): list the new server's tools now; if that fails,
    nothing is saved (ConfigError, exit status 1)."""
    from mcp_host_conformance.reference_client.verified_add import (  # connects: only here
        DEFAULT_SYNC_TIMEOUT,
        first_sync,
    )

    try:
        return first_sync(
            server,
            environ=environ,
            settings=settings,
            redactor=redactor,
            ca_file=getattr(args, "ca_file", None),
            timeout=getattr(args, "connect_timeout", None) or DEFAULT_SYNC_TIMEOUT,
        )
    except ConfigError as error:
        raise ConfigError(
            f"nothing saved: the first sync of {server.name} failed: {redactor.redact(str(error))}"
        ) from None


def listed_tools(
    server: HttpServerConfig | StdioServerConfig,
    tools: list[dict[str, Any]],
    environ: Mapping[str, str],
    pinning: bool,
) -> list[str]:
    """The lines that list a just-synced server's tools; with pinning they are recorded as
    waiting for approval (PIN-2)."""
    names = [terminal_safe(str(t.get("name")), one_line=True) for t in tools]
    lines = [f"Listed {len(tools)} tools: {', '.join(names) or '(none)'}"]
    if pinning:
        approvals = ApprovalStore(environ)
        approvals.save(
            approvals.load().forget(server.name).seen(server.name, destination(server), tools)
        )
        lines.append(
            "Every tool starts disabled: review and approve them in chat (/review) before "
            "they can be called."
        )
    return lines


def list_servers(environ: Mapping[str, str], stdout: TextIO) -> int:
    """`mcp list`: names and destinations, and only the names of headers and variables."""
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
        lines.append(
            terminal_safe(f"{server.name}  {kind}  {destination(server)}{extra}", one_line=True)
        )
    # Only names are printed; the redactor is the guarantee (CFG-4).
    stdout.write(Redactor(secrets_of(servers)).redact("\n".join(lines)) + "\n")
    return 0


def remove_server(name: str, environ: Mapping[str, str], stdout: TextIO) -> int:
    """`mcp remove NAME` (its tool approvals go with it, if any were kept)."""
    if ConfigStore(environ).remove(name):
        from mcp_host_conformance.reference_client.oauth_flow import forget_tokens

        forget_tokens(environ, name)
        approvals = ApprovalStore(environ)
        if approvals.path.exists():
            approvals.save(approvals.load().forget(name))
        stdout.write(terminal_safe(f"Removed MCP server {name}.", one_line=True) + "\n")
        return 0
    raise ConfigError(f"no server named {name!r}; see `{PROG} mcp list`")


def allow_addresses(addresses: Iterable[str], environ: Mapping[str, str], stdout: TextIO) -> int:
    """`mcp allow-address ADDRESS...`: exact addresses allowed although private (PRIV-1)."""
    settings = SettingsStore(environ).allow(addresses)
    stdout.write(
        terminal_safe(
            "Allowed addresses (connected to although private): "
            + (", ".join(settings.allowed_addresses) or "none"),
            one_line=True,
        )
        + "\n"
    )
    return 0


def profiles_command(
    action: str, names: list[str], environ: Mapping[str, str], stdout: TextIO
) -> int:
    """`profiles [list|enable|disable] [NAME...|all]`: the optional profiles switched on."""
    store = SettingsStore(environ)
    wanted = list(PROFILES) if names == ["all"] else names
    if action == "enable":
        settings = store.enable(wanted)
    elif action == "disable":
        settings = store.disable(wanted)
    else:
        settings = store.load()
    for profile in PROFILES:
        mark = "on " if settings.has(profile) else "off"
        stdout.write(f"{mark}  {profile}\n")
    return 0
