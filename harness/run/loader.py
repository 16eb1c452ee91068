"""Finding the client under test: an in-process adapter, or a driver command.

Strategy: the implementation under test is chosen by an option or an environment
variable (as fsspec's abstract tests and array-api-tests do), never by editing the suite.
`--client` names a Python object as `module:attr` or by an entry-point name in the group
`mcp_host_conformance.adapters`; the object may be an adapter, a class or a factory
taking no arguments. A name not found there is looked up in the zoos: entry points of the
group `mcp_host_conformance.zoos`, each loading a mapping of name -> zero-argument factory
(the project's broken clients are one such zoo). `--client-cmd` starts any program that
speaks the driver protocol (`mcp_host_conformance.harness.run.driver`). Everything that can go
wrong raises `LoadError` with the fix in its message, so the plugin can turn it into one
clear usage error; a module that raises or calls `sys.exit` while it is imported is one of
those. Which client a run tests is decided once (`choose_client`): an option given empty,
or an environment variable set but empty (an unset variable in a CI script), is refused
(`ClientChoiceError`) rather than read as "the default", which would be a green run for
the reference host instead of the one meant.
"""

from __future__ import annotations

import difflib
import importlib
import os
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from mcp_host_conformance.harness.contract.adapter import Adapter, AdapterError

__all__ = [
    "CLIENT_CMD_ENV",
    "CLIENT_ENV",
    "DEFAULT_CLIENT",
    "ENTRY_POINT_GROUP",
    "ZOO_GROUP",
    "ClientChoiceError",
    "LoadError",
    "adapter_entry_points",
    "choose_client",
    "load_adapter",
    "resolve_client",
    "zoo_clients",
]

ENTRY_POINT_GROUP = "mcp_host_conformance.adapters"
ZOO_GROUP = "mcp_host_conformance.zoos"
DEFAULT_CLIENT = "reference"
CLIENT_ENV = "MCP_HOST_CONFORMANCE_CLIENT"
CLIENT_CMD_ENV = "MCP_HOST_CONFORMANCE_CLIENT_CMD"

_OPERATIONS = ("describe", "add_server", "remove_server", "list_servers", "start")


class LoadError(Exception):
    """The client under test could not be loaded; the message says why and what to do."""


class ClientChoiceError(LoadError):
    """The options or the environment do not name one client (one given empty, or both): the
    user's mistake, not the client's failure."""


def _raised(exc: BaseException) -> str:
    """What an exception from a client's own code says, for one line."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def adapter_entry_points() -> dict[str, metadata.EntryPoint]:
    """Installed adapters by entry-point name."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def zoo_clients() -> dict[str, Any]:
    """Every zoo's clients by name (name -> zero-argument factory), loaded lazily. A zoo that
    fails to load raises LoadError."""
    found: dict[str, Any] = {}
    for ep in metadata.entry_points(group=ZOO_GROUP):
        try:
            mapping = ep.load()
            found.update({str(name): factory for name, factory in dict(mapping).items()})
        except (Exception, SystemExit) as exc:  # a broken zoo is its author's to fix; say which
            raise LoadError(
                f"loading the zoo {ep.name!r} ({ep.value}) failed: {_raised(exc)}"
            ) from None
    return found


def _import_attr(spec: str) -> Any:
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path:
        raise LoadError(f"--client {spec!r}: expected module:attr, e.g. mypkg.conformance:Adapter")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise LoadError(f"--client {spec!r}: cannot import module {module_name!r}: {exc}") from exc
    except (Exception, SystemExit) as exc:  # the module's own code failed while it was imported
        raise LoadError(
            f"--client {spec!r}: importing module {module_name!r} failed: {_raised(exc)}"
        ) from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise LoadError(
                f"--client {spec!r}: module {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return obj


def resolve_client(spec: str) -> Any:
    """The object `spec` names: `module:attr`, or an entry-point name."""
    if ":" in spec:
        return _import_attr(spec)
    points = adapter_entry_points()
    if spec not in points:
        zoo = zoo_clients()
        if spec in zoo:
            return zoo[spec]
        known = ", ".join(sorted(points)) or "none"
        close = difflib.get_close_matches(spec, [*points, *zoo], n=3)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise LoadError(
            f"--client {spec!r}: no such client: {hint}installed adapters: {known}"
            f"{f' (and {len(zoo)} broken clients)' if zoo else ''}; "
            "for your own adapter give module:attr, e.g. mypkg.conformance:Adapter"
        )
    try:
        return points[spec].load()
    except (Exception, SystemExit) as exc:  # an adapter package that fails to import
        raise LoadError(
            f"--client {spec!r}: loading entry point {points[spec].value!r} failed: {_raised(exc)}"
        ) from None


def _instantiate(obj: Any, spec: str) -> Any:
    # An adapter object is used as is; a class or a zero-argument factory is called once.
    if not isinstance(obj, type) and all(callable(getattr(obj, op, None)) for op in _OPERATIONS):
        return obj
    if callable(obj):
        try:
            return obj()
        except TypeError as exc:
            raise LoadError(
                f"--client {spec!r}: {obj!r} must be callable without arguments: {exc}"
            ) from exc
        except (Exception, SystemExit) as exc:
            raise LoadError(
                f"--client {spec!r}: making the adapter failed: {_raised(exc)}"
            ) from None
    return obj


def _checked(adapter: object, spec: str) -> Adapter:
    missing = [op for op in _OPERATIONS if not callable(getattr(adapter, op, None))]
    if missing or not isinstance(adapter, Adapter):
        raise LoadError(
            f"--client {spec!r}: {type(adapter).__name__} is not an adapter; missing "
            f"{', '.join(missing)} (see mcp_host_conformance.harness.contract.adapter.Adapter)"
        )
    return adapter


def choose_client(
    client: str | None, client_cmd: str | None, environ: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """The client a run tests, as (client, None) or (None, client_cmd): the options, else
    $MCP_HOST_CONFORMANCE_CLIENT_CMD or $MCP_HOST_CONFORMANCE_CLIENT, else the reference
    client. ClientChoiceError for an option given empty (or blank), a variable set but
    empty, both options, or both variables."""
    if client is not None and client_cmd is not None:
        raise ClientChoiceError("give --client or --client-cmd, not both")
    for flag, given in (("--client", client), ("--client-cmd", client_cmd)):
        if given is not None and not given.strip():
            raise ClientChoiceError(
                f"{flag} is empty (an unset variable?): name the client under test, or leave "
                f"{flag} out to test the reference host"
            )
    if client is not None or client_cmd is not None:
        return client, client_cmd
    env = os.environ if environ is None else environ
    for name in (CLIENT_CMD_ENV, CLIENT_ENV):
        if name in env and not env[name].strip():
            raise ClientChoiceError(
                f"${name} is set but empty (an unset variable?): name the client under test, "
                "or unset it to test the reference host"
            )
    if env.get(CLIENT_CMD_ENV) and env.get(CLIENT_ENV):
        raise ClientChoiceError(
            f"${CLIENT_ENV} and ${CLIENT_CMD_ENV} are both set: unset one of them"
        )
    if env.get(CLIENT_CMD_ENV):
        return None, env[CLIENT_CMD_ENV]
    return env.get(CLIENT_ENV) or DEFAULT_CLIENT, None


def load_adapter(
    client: str | None = None,
    client_cmd: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    timeout_scale: float = 1.0,
) -> Adapter:
    """The adapter for `client` (module:attr or entry-point name) or `client_cmd` (a driver
    command, whose bounds are multiplied by `timeout_scale`), chosen by `choose_client`."""
    client, client_cmd = choose_client(client, client_cmd, environ)
    if client_cmd is not None:
        try:
            from mcp_host_conformance.harness.run.driver import DriverAdapter
        except ImportError as exc:
            raise LoadError(
                "--client-cmd needs mcp_host_conformance.harness.run.driver, "
                f"which failed to import: {exc}"
            ) from exc
        try:
            return DriverAdapter(client_cmd, timeout_scale=timeout_scale)
        except AdapterError as exc:  # an unparsable command
            raise LoadError(f"--client-cmd: {exc}") from None
    assert client is not None
    return _checked(_instantiate(resolve_client(client), client), client)
