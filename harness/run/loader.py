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
clear usage error.
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
    "LoadError",
    "adapter_entry_points",
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
        except Exception as exc:  # a broken zoo is its author's to fix; say which one
            raise LoadError(f"loading the zoo {ep.name!r} ({ep.value}) failed: {exc}") from exc
    return found


def _import_attr(spec: str) -> Any:
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path:
        raise LoadError(f"--client {spec!r}: expected module:attr, e.g. mypkg.conformance:Adapter")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise LoadError(f"--client {spec!r}: cannot import module {module_name!r}: {exc}") from exc
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
    except Exception as exc:  # an adapter package that fails to import is the user's to fix
        raise LoadError(
            f"--client {spec!r}: loading entry point {points[spec].value!r} failed: {exc}"
        ) from exc


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
    return obj


def _checked(adapter: object, spec: str) -> Adapter:
    missing = [op for op in _OPERATIONS if not callable(getattr(adapter, op, None))]
    if missing or not isinstance(adapter, Adapter):
        raise LoadError(
            f"--client {spec!r}: {type(adapter).__name__} is not an adapter; missing "
            f"{', '.join(missing)} (see mcp_host_conformance.harness.contract.adapter.Adapter)"
        )
    return adapter


def load_adapter(
    client: str | None = None,
    client_cmd: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    timeout_scale: float = 1.0,
) -> Adapter:
    """The adapter for `client` (module:attr or entry-point name) or `client_cmd` (a driver
    command, whose bounds are multiplied by `timeout_scale`). Unset both: the environment
    variables, then the reference client."""
    env = os.environ if environ is None else environ
    if client and client_cmd:
        raise LoadError("give --client or --client-cmd, not both")
    if not client and not client_cmd:
        client_cmd = env.get(CLIENT_CMD_ENV) or None
        client = None if client_cmd else (env.get(CLIENT_ENV) or DEFAULT_CLIENT)
    if client_cmd:
        try:
            from mcp_host_conformance.harness.run.driver import DriverAdapter
        except ImportError as exc:
            raise LoadError(
                "--client-cmd needs mcp_host_conformance.harness.run.driver, "
                f"which failed to import: {exc}"
            ) from exc
        try:
            return DriverAdapter(client_cmd, timeout_scale=timeout_scale)
        except AdapterError as exc:  # an empty or unparsable command
            raise LoadError(f"--client-cmd: {exc}") from None
    assert client is not None
    return _checked(_instantiate(resolve_client(client), client), client)
