"""The client under test of a run: loaded once, described once, its failure said once.

Strategy: the plugin (before the first case), the fixtures (`adapter`, `description`) and
the reporting (the client's name in the summary) all need the same client, so it is kept
here, in the pytest config's stash, one per process. Loading and describing happen
together (`prepare`): a client that cannot be loaded, a driver that fails its handshake,
or a client that cannot describe itself stops the run before any case with ONE line
(`pytest.UsageError`), and the failure is remembered so nothing retries it per case.
Under pytest-xdist the controller hands its description to the workers
(`description_for_workers` / `description_from_controller`), so a run asks `describe`
once; each worker still loads its own adapter (a driver process per worker).

Every bound scales with `--timeout-scale` (or $MCP_HOST_CONFORMANCE_TIMEOUT_SCALE),
including a driver's own call and handshake bounds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Final

import pytest

from mcp_host_conformance.harness.cases.hostrun import bounded
from mcp_host_conformance.harness.cases.items import option
from mcp_host_conformance.harness.cases.observe import declare_vocabulary
from mcp_host_conformance.harness.contract.adapter import Adapter, Description
from mcp_host_conformance.harness.contract.driver_wire import WireError, decode, encode
from mcp_host_conformance.harness.run.loader import ClientChoiceError, LoadError, load_adapter
from mcp_host_conformance.harness.verdicts.safe_text import visible

__all__ = [
    "DESCRIBE_BOUND",
    "TIMEOUT_SCALE_ENV",
    "WORKER_KEY",
    "client_adapter",
    "client_description",
    "client_unusable",
    "close_client",
    "forget_adapter",
    "described",
    "description_for_workers",
    "one_line",
    "prepare",
    "timeout_scale",
]

TIMEOUT_SCALE_ENV: Final = "MCP_HOST_CONFORMANCE_TIMEOUT_SCALE"
# Seconds (x scale) for describe, a driver's start and handshake included.
DESCRIBE_BOUND: Final = 90.0
WORKER_KEY: Final = "mcp_host_conformance_description"
_MESSAGE_LIMIT: Final = 600


@dataclass
class _Client:
    adapter: Adapter | None = None
    description: Description | None = None
    problem: str | None = None  # why it cannot be used; said once, never retried
    vocabulary_read: bool = False  # its status vocabulary declared to `observe`
    mistaken: bool = False  # the problem is how the client was named, not the client


_STATE = pytest.StashKey[_Client]()


def one_line(text: str) -> str:
    """An error for the terminal: one line, control characters visible, bounded."""
    flat = " | ".join(part.strip() for part in text.splitlines() if part.strip())
    flat = visible(flat)
    return flat if len(flat) <= _MESSAGE_LIMIT else flat[: _MESSAGE_LIMIT - 3] + "..."


def timeout_scale(config: pytest.Config) -> float:
    value: float | None = option(config, "timeout_scale", None)
    if value is None:
        raw = os.environ.get(TIMEOUT_SCALE_ENV, "") or "1"
        try:
            value = float(raw)
        except ValueError:
            raise pytest.UsageError(
                f"mcp-host-conformance: ${TIMEOUT_SCALE_ENV} must be a number, not {raw[:40]!r}"
            ) from None
    if not value > 0 or value == float("inf"):
        raise pytest.UsageError("mcp-host-conformance: --timeout-scale must be a positive number")
    return value


def _state(config: pytest.Config) -> _Client:
    if _STATE not in config.stash:
        config.stash[_STATE] = _Client()
    return config.stash[_STATE]


def _fail(state: _Client, text: str, *, mistaken: bool = False) -> pytest.UsageError:
    state.problem = f"mcp-host-conformance: {one_line(text)}"
    state.mistaken = mistaken
    return pytest.UsageError(state.problem)


def client_unusable(config: pytest.Config) -> bool:
    """Whether this run stopped because its client could not be loaded or described (not
    because the options named no client: that is a usage error like any other)."""
    state = config.stash.get(_STATE, None)
    return state is not None and state.problem is not None and not state.mistaken


def client_adapter(config: pytest.Config) -> Adapter:
    """The adapter of this run, loaded once per process."""
    state = _state(config)
    if state.problem is not None:
        raise pytest.UsageError(state.problem)
    if state.adapter is None:
        try:
            state.adapter = load_adapter(
                option(config, "client", None),
                option(config, "client_cmd", None),
                timeout_scale=timeout_scale(config),
            )
        except ClientChoiceError as exc:
            raise _fail(state, str(exc), mistaken=True) from None
        except LoadError as exc:
            raise _fail(state, str(exc)) from None
    return state.adapter


def description_from_controller(config: pytest.Config) -> Description | None:
    """The description the xdist controller handed to this worker, if any."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    raw = workerinput.get(WORKER_KEY)
    if raw is None:
        return None
    try:
        return decode(Description, raw)
    except WireError:
        return None


def client_description(config: pytest.Config) -> Description:
    """The client's describe(), asked once per run (the controller's, in an xdist worker)."""
    state = _state(config)
    if state.problem is not None:
        raise pytest.UsageError(state.problem)
    if state.description is None:
        state.description = description_from_controller(config)
    if state.description is None:
        adapter = client_adapter(config)
        try:
            state.description = bounded(
                "describe()", adapter.describe, DESCRIBE_BOUND * timeout_scale(config)
            )
        except (Exception, SystemExit) as exc:  # anything: it cannot be tested without it
            raise _fail(state, _describe_problem(exc)) from None
        if not isinstance(state.description, Description):
            found = type(state.description).__name__
            state.description = None
            raise _fail(state, f"the client's describe() returned a {found}, not a Description")
    if not state.vocabulary_read:
        try:  # the host's own words for statuses, read by every case of this process
            declare_vocabulary(state.description.status_vocabulary)
        except ValueError as exc:
            raise _fail(state, f"the client's describe(): {exc}") from None
        state.vocabulary_read = True
    return state.description


def _describe_problem(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the client could not describe itself: it called sys.exit({exc.code!r})"
    text = str(exc) or type(exc).__name__
    if "handshake" in text:
        return text
    return f"the client could not describe itself: {text}"


def prepare(config: pytest.Config) -> Description:
    """Load and describe the client (once); UsageError with one line if it cannot be."""
    return client_description(config)


def described(config: pytest.Config) -> Description | None:
    """The description if the client was described in this process (never describes)."""
    return _state(config).description if _STATE in config.stash else None


def description_for_workers(config: pytest.Config) -> dict[str, Any] | None:
    """The description in the form a worker's `workerinput` carries, if known."""
    found = described(config)
    return None if found is None else dict(encode(found))


def forget_adapter(config: pytest.Config) -> None:
    """In a worker forked from the run (harness.workers): the parent's adapter is not this
    process's (its driver process, its event-loop thread) and is neither used nor closed
    here; the first case loads one of this process's own. The description stays."""
    if _STATE in config.stash:
        config.stash[_STATE].adapter = None


def close_client(config: pytest.Config) -> None:
    """Close the adapter at the end of the run if it can be closed (a driver's process)."""
    if _STATE not in config.stash:
        return
    adapter = config.stash[_STATE].adapter
    close = getattr(adapter, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - the run is over; the process is killed at exit anyway
            pass
