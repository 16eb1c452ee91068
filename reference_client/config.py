"""The server configuration in the user's home directory (CFG-1..CFG-5, NET-1).

Strategy: configuration is consent. A server reaches the program only through this file,
which lives under the user's home (XDG_CONFIG_HOME respected) and never in the working
directory, so a project cannot add servers (CFG-2). The file holds header and environment
values, so it is private from the moment it exists: created 0600 in a 0700 directory
(every directory we create is 0700, whatever the umask) and written atomically (temporary
file + rename) so a crash never leaves half a file; looser modes found on disk are
tightened. This module only reads and writes the file; adding a server never connects to
it (CFG-1). The file is read as untrusted input: at most MAX_CONFIG_BYTES, decoded by
`untrusted_json`, every entry checked.

The pure checks a server entry must pass: `url_problem` (the URL is a usable http(s) URL),
`url_refusal` (NET-1: HTTPS, or plain HTTP to loopback only), `header_problem` (a header
HTTP can carry: a token name, a value of visible ASCII and spaces).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from mcp_host_conformance.reference_client import untrusted_json
from mcp_host_conformance.reference_client.display import terminal_safe

__all__ = [
    "APP_DIR",
    "ConfigError",
    "ConfigStore",
    "HttpServerConfig",
    "ServerConfig",
    "StdioServerConfig",
    "config_home",
    "destination",
    "document",
    "header_problem",
    "name_refusal",
    "secrets_of",
    "url_problem",
    "url_refusal",
]

APP_DIR = "mcp-reference-host"
FILE_NAME = "servers.json"
MAX_CONFIG_BYTES = 4 * 1024 * 1024
_VERSION = 1
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token
_HEADER_VALUE = re.compile(r"[\x20-\x7e]*")  # visible ASCII and spaces
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ConfigError(Exception):
    """A configuration problem the user can fix; the message never holds a secret."""


@dataclass
class HttpServerConfig:
    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    # Profile oauth: the server is authorized with OAuth; `oauth_client` holds a configured
    # client (client_id, client_secret, client_metadata_url), empty for dynamic registration.
    oauth: bool = False
    oauth_client: dict[str, str] = field(default_factory=dict)


@dataclass
class StdioServerConfig:
    name: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


ServerConfig = HttpServerConfig | StdioServerConfig


def config_home(environ: Mapping[str, str]) -> Path:
    """XDG_CONFIG_HOME if set to an absolute path, else HOME/.config (never the cwd)."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    home = environ.get("HOME", "")
    if not home or not os.path.isabs(home):
        raise ConfigError("HOME is not set to an absolute path; cannot find the configuration")
    return Path(home) / ".config"


def private_dir(path: Path) -> Path:
    """Create `path` and every missing parent with mode 0700, whatever the umask (mkdir's
    mode is masked by it: under umask 000 `parents=True` makes 0777 parents); tighten
    `path` itself if it is looser. Existing parents are not ours to change."""
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: tightened below if it is `path`
        directory.chmod(0o700)
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        path.chmod(0o700)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Atomically replace `path` with `data`, mode 0600 from creation."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # O_CREAT on an existing temp file keeps its old mode
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def name_refusal(name: str) -> str | None:
    if not name or not name.strip():
        return "the server name is empty"
    if len(name) > 64:
        return "the server name is longer than 64 characters"
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        return "the server name must not contain spaces or control characters"
    return None


def header_problem(name: str, value: str) -> str | None:
    """Why a header cannot be sent as configured, or None. The value is never quoted."""
    if not _HEADER_NAME.fullmatch(name):
        return (
            f"{terminal_safe(name, one_line=True)[:64]!r} is not a valid header name "
            "(letters, digits and !#$%&'*+.^_`|~- only)"
        )
    if not _HEADER_VALUE.fullmatch(value):
        return (
            f"the value of header {name} holds a character HTTP headers cannot carry "
            "(only visible ASCII characters and spaces; no line breaks, tabs or non-ASCII)"
        )
    return None


def env_problem(name: str, value: str) -> str | None:
    """Why an environment variable cannot be given to a stdio server, or None."""
    if not _ENV_NAME.fullmatch(name):
        return f"{terminal_safe(name, one_line=True)[:64]!r} is not a valid variable name"
    if "\0" in value:
        return f"the value of variable {name} holds a NUL character"
    return None


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_URL_FORM = (
    "a server URL uses HTTPS, like https://docs.example.com/mcp "
    "(plain http:// is accepted only for localhost and loopback addresses)"
)


def _host_problem(host: str) -> str | None:
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    try:
        host.encode("idna")
    except UnicodeError:
        return f"the URL's host name {host!r} is not valid"
    if not all(label and not label.startswith("-") for label in host.rstrip(".").split(".")):
        return f"the URL's host name {host!r} is not valid"
    return None


def url_problem(url: str) -> str | None:
    """What makes `url` unusable as a server URL, said so a person can fix it, or None.

    Checks the form only (scheme, host, port, no spaces or control characters, no user
    name or password); whether plain HTTP is allowed is `url_refusal`'s decision.
    """
    if not url:
        return f"the URL is empty; {_URL_FORM}"
    if any(ch.isspace() for ch in url) or terminal_safe(url, one_line=True) != url:
        return "the URL contains a space or a control character"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return f"the URL is not valid; {_URL_FORM}"
    if not parts.scheme or not url.lower().startswith(f"{parts.scheme.lower()}://"):
        return f"the URL has no scheme; {_URL_FORM}"
    if parts.scheme.lower() not in ("https", "http"):
        return f"the URL's scheme {parts.scheme[:20]!r} is not supported; {_URL_FORM}"
    if parts.username is not None or parts.password is not None:
        return "the URL must not contain a user name or password; configure a header instead"
    if not host:
        return f"the URL has no host name; {_URL_FORM}"
    problem = _host_problem(host)
    if problem:
        return problem
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (port is None and parts.netloc.endswith(":")):
        return "the URL's port is not a number from 1 to 65535"
    return None


def url_refusal(url: str) -> str | None:
    """Why a server URL is refused at connection (NET-1), or None when it is acceptable."""
    problem = url_problem(url)
    if problem:
        return problem
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme.lower() == "http" and not _is_loopback(host):
        return (
            "plain HTTP is refused for a non-loopback host; use HTTPS "
            "(plain http:// is allowed only for localhost, 127.0.0.0/8 and ::1)"
        )
    return None


def destination(server: ServerConfig) -> str:
    """Where a server's calls go: its URL, or its command line as the user would type it."""
    if isinstance(server, HttpServerConfig):
        return server.url
    return shlex.join([server.command, *server.args])


# "Bearer abc123", "Token abc123": the credential a server might echo back is the part after
# the scheme, so it is a secret of its own beside the whole value.
_AUTH_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9._~+-]*\s+(\S.*)$")


def secrets_of(servers: Iterable[ServerConfig]) -> list[str]:
    """Every configured header and environment value (and a header's credential after its
    auth scheme, if it has one)."""
    found: list[str] = []
    for server in servers:
        is_http = isinstance(server, HttpServerConfig)
        values = server.headers if isinstance(server, HttpServerConfig) else server.env
        if isinstance(server, HttpServerConfig) and server.oauth_client.get("client_secret"):
            found.append(server.oauth_client["client_secret"])
        for value in values.values():
            if not value:
                continue
            found.append(value)
            scheme = _AUTH_SCHEME.match(value) if is_http else None
            if scheme and len(scheme.group(1)) >= 8:
                found.append(scheme.group(1))
    return found


def _to_json(server: ServerConfig) -> dict:
    if isinstance(server, HttpServerConfig):
        entry: dict = {"name": server.name, "type": "http", "url": server.url}
        entry["headers"] = server.headers
        if server.oauth:
            entry["auth"] = "oauth"
            entry["oauth_client"] = server.oauth_client
        return entry
    return {
        "name": server.name,
        "type": "stdio",
        "command": server.command,
        "args": server.args,
        "env": server.env,
    }


def _str_dict(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _from_json(entry: object, index: int) -> ServerConfig:
    problem = f"server entry {index + 1} is malformed"
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ConfigError(problem)
    if entry.get("type") == "http":
        url, headers = entry.get("url"), entry.get("headers", {})
        oauth, client = entry.get("auth") == "oauth", entry.get("oauth_client", {})
        if not isinstance(url, str) or not _str_dict(headers) or not _str_dict(client):
            raise ConfigError(problem)
        return HttpServerConfig(entry["name"], url, dict(headers), oauth, dict(client))
    if entry.get("type") == "stdio":
        command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
        if (
            not isinstance(command, str)
            or not isinstance(args, list)
            or not all(isinstance(a, str) for a in args)
            or not _str_dict(env)
        ):
            raise ConfigError(problem)
        return StdioServerConfig(entry["name"], command, list(args), dict(env))
    raise ConfigError(problem)


def document(servers: Iterable[ServerConfig]) -> str:
    """The configuration file's text for these servers (what `ConfigStore.save` writes)."""
    body = {"version": _VERSION, "servers": [_to_json(s) for s in servers]}
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


class ConfigStore:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self.directory = config_home(environ) / APP_DIR
        self.path = self.directory / FILE_NAME

    def load(self) -> list[ServerConfig]:
        try:
            with open(self.path, "rb") as f:
                raw = f.read(MAX_CONFIG_BYTES + 1)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from None
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{self.path} is larger than 4 MiB; fix or remove it")
        self._tighten()
        try:
            document = untrusted_json.decode(raw)
        except untrusted_json.UntrustedJsonError as exc:
            # The message names the file and the kind of damage, never its content: it
            # holds secrets.
            raise ConfigError(f"{self.path} is not usable JSON ({exc}); fix or remove it") from None
        if not isinstance(document, dict) or not isinstance(document.get("servers"), list):
            raise ConfigError(f"{self.path} has no list of servers; fix or remove it")
        try:
            return [_from_json(entry, i) for i, entry in enumerate(document["servers"])]
        except ConfigError as exc:
            raise ConfigError(f"{self.path}: {exc}; fix or remove it") from None

    def _tighten(self) -> None:
        for path, mode in ((self.directory, 0o700), (self.path, 0o600)):
            try:
                if stat.S_IMODE(path.stat().st_mode) != mode:
                    path.chmod(mode)
            except FileNotFoundError:
                pass

    def save(self, servers: list[ServerConfig]) -> Path:
        data = document(servers).encode("utf-8")
        private_dir(self.directory)
        write_private(self.path, data)
        return self.path

    def check_new(self, server: ServerConfig) -> list[ServerConfig]:
        """The servers configured now, if `server` may be added to them; ConfigError for an
        invalid or duplicate name."""
        refusal = name_refusal(server.name)
        if refusal:
            raise ConfigError(f"cannot add the server: {refusal}")
        servers = self.load()
        if any(existing.name == server.name for existing in servers):
            raise ConfigError(
                f"a server named {server.name!r} already exists; remove it first "
                f"(mcp remove {server.name})"
            )
        return servers

    def add(self, server: ServerConfig) -> Path:
        """Add a server (never connecting to it). Refuses a duplicate or invalid name."""
        servers = self.check_new(server)
        servers.append(server)
        return self.save(servers)

    def remove(self, name: str) -> bool:
        servers = self.load()
        kept = [server for server in servers if server.name != name]
        if len(kept) == len(servers):
            return False
        self.save(kept)
        return True
