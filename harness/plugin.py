"""The pytest plugin (entry point `pytest11`): options, markers, the client under test.

Strategy: a thin plugin in the style of respx's and anyio's. Options live in one group,
markers are registered in `pytest_configure` (so `--strict-markers` accepts them), and
the fixtures live in `mcp_host_conformance.harness.fixtures`, imported here so
`pytest --pyargs mcp_host_conformance.conformance` works from any directory. The plugin
is loaded for every pytest run in an environment where the package is installed, so it
stays inert until a conformance case is collected: only then is the client loaded (once
per process) and described. The reporting side (outcomes, tables, JSON, baseline, exit
status) is `mcp_host_conformance.harness.reporting.ReportingPlugin`, registered here
when it is importable.

A conformance case is any test with a `requirements` marker, or any test in a module of a
directory named `conformance`; the latter must carry the marker.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_host_conformance.harness.adapter import Adapter, Description
from mcp_host_conformance.harness.fixtures import *  # noqa: F403 - the fixtures cases use
from mcp_host_conformance.harness.hostrun import HarnessTimeout, bounded
from mcp_host_conformance.harness.loader import LoadError, load_adapter

GROUP = "mcp-host-conformance"
TIMEOUT_SCALE_ENV = "MCP_HOST_CONFORMANCE_TIMEOUT_SCALE"

MARKERS = {
    "requirements": (
        "requirements(*ids): the requirement IDs a conformance case checks, "
        "e.g. requirements('APR-2')"
    ),
    "profile": (
        "profile(name): the case belongs to an optional profile; "
        "not applicable unless the client claims it"
    ),
    "slow": "slow: the case waits for a real default timeout; runs only with --run-slow",
    "needs_cancel": (
        "needs_cancel: the case cancels a call; not applicable unless describe().can_cancel"
    ),
}

_ADAPTER = pytest.StashKey[Adapter]()
_DESCRIPTION = pytest.StashKey[Description]()
_DESCRIBE_BOUND = 30.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "MCP host conformance")
    group.addoption(
        "--client",
        default=None,
        help=(
            "the client under test: module:attr or an adapter entry-point name "
            "(group mcp_host_conformance.adapters); "
            "default: $MCP_HOST_CONFORMANCE_CLIENT or 'reference'"
        ),
    )
    group.addoption(
        "--client-cmd",
        default=None,
        help="a command that speaks the driver protocol (a host in any language), e.g. "
        "'go run ./cmd/conformance-driver'",
    )
    group.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="also run the cases that wait for real default timeouts",
    )
    group.addoption(
        "--report-json", default=None, metavar="PATH", help="write the JSON report to PATH"
    )
    group.addoption(
        "--expected-failures",
        default=None,
        metavar="PATH",
        help="a baseline file of requirement or case IDs expected to fail",
    )
    group.addoption(
        "--timeout-scale",
        type=float,
        default=None,
        metavar="FACTOR",
        help="multiply the suite's scaled timeouts and bounds (slow machines); "
        f"default ${TIMEOUT_SCALE_ENV} or 1",
    )


def pytest_configure(config: pytest.Config) -> None:
    for text in MARKERS.values():
        config.addinivalue_line("markers", text)
    try:
        from mcp_host_conformance.harness.reporting import ReportingPlugin
    except ImportError:
        return
    if not config.pluginmanager.has_plugin("mcp-host-conformance-reporting"):
        config.pluginmanager.register(ReportingPlugin(config), "mcp-host-conformance-reporting")


def strict_mode(config: pytest.Config) -> bool:
    """Whether SHOULD failures fail the run: pytest's own `--strict` (pytest owns that option
    name; the plugin reads it rather than defining a second one)."""
    try:
        if config.getini("strict"):  # pytest >= 9: --strict sets the "strict" ini value
            return True
    except ValueError:  # pytest 8 has no "strict" ini value
        pass
    return bool(config.getoption("strict", False))


def timeout_scale(config: pytest.Config) -> float:
    value = config.getoption("--timeout-scale")
    if value is None:
        try:
            value = float(os.environ.get(TIMEOUT_SCALE_ENV, "1") or 1)
        except ValueError:
            raise pytest.UsageError(f"${TIMEOUT_SCALE_ENV} must be a number") from None
    if value <= 0:
        raise pytest.UsageError("--timeout-scale must be positive")
    return value


# ---- the client under test -----------------------------------------------------------------


def client_adapter(config: pytest.Config) -> Adapter:
    """The adapter of this run, loaded once per process (each xdist worker loads its own)."""
    if _ADAPTER not in config.stash:
        try:
            config.stash[_ADAPTER] = load_adapter(
                config.getoption("--client"), config.getoption("--client-cmd")
            )
        except LoadError as exc:
            raise pytest.UsageError(f"mcp-host-conformance: {exc}") from None
    return config.stash[_ADAPTER]


def client_description(config: pytest.Config) -> Description:
    if _DESCRIPTION not in config.stash:
        adapter = client_adapter(config)
        config.stash[_DESCRIPTION] = bounded("describe()", adapter.describe, _DESCRIBE_BOUND)
    return config.stash[_DESCRIPTION]


def is_case(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("requirements") is not None
        or "conformance" in Path(str(item.path)).parent.parts
    )


def requirement_ids(item: pytest.Item) -> list[str]:
    """Every ID named by the item's requirements markers, in order."""
    ids: list[str] = []
    for mark in item.iter_markers("requirements"):
        for arg in mark.args:
            for rid in [arg] if isinstance(arg, str) else list(arg):
                if rid not in ids:
                    ids.append(rid)
    return ids


def _targets_conformance(config: pytest.Config) -> bool:
    if config.getoption("--client") or config.getoption("--client-cmd"):
        return True
    return any("conformance" in str(arg) for arg in config.args)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if not _targets_conformance(config):
        return None
    try:
        d = client_description(config)
    except (
        pytest.UsageError,
        HarnessTimeout,
        Exception,
    ) as exc:  # the header must not hide the error
        return [f"mcp-host-conformance: client could not be described: {exc}"]
    profiles = ", ".join(sorted(d.profiles)) or "none"
    return [
        f"mcp-host-conformance: client {d.name} {d.version} (profiles: {profiles}; "
        f"default timeouts connect {d.connect_timeout:g}s, call {d.call_timeout:g}s; "
        f"timeout scale {timeout_scale(config):g})"
    ]


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if any(is_case(item) for item in items):
        client_adapter(config)  # a client that cannot be loaded is a usage error, said once


def _unknown_ids(ids: list[str]) -> list[str]:
    try:
        from mcp_host_conformance.harness.requirements import REQUIREMENTS
    except ImportError:  # pragma: no cover - the catalog ships with the harness
        return []
    return [rid for rid in ids if rid not in REQUIREMENTS]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not is_case(item):
        return
    ids = requirement_ids(item)
    if not ids:
        pytest.fail(
            f"{item.nodeid}: a conformance case must name the requirements it checks "
            "with @pytest.mark.requirements('ID', ...)",
            pytrace=False,
        )
    unknown = _unknown_ids(ids)
    if unknown:
        pytest.fail(f"{item.nodeid}: unknown requirement ID(s) {', '.join(unknown)}", pytrace=False)
    from mcp_host_conformance.harness.outcomes import NOT_APPLICABLE_PREFIX

    profile_marks = list(item.iter_markers("profile"))
    needs_cancel = item.get_closest_marker("needs_cancel") is not None
    if profile_marks or needs_cancel:
        d = client_description(item.config)
        for mark in profile_marks:
            for profile in mark.args:
                if profile not in d.profiles:
                    pytest.skip(f"{NOT_APPLICABLE_PREFIX}profile {profile} not claimed by {d.name}")
        if needs_cancel and not d.can_cancel:
            pytest.skip(
                f"{NOT_APPLICABLE_PREFIX}{d.name} cannot cancel a call "
                "(describe().can_cancel is false)"
            )
    if item.get_closest_marker("slow") is not None and not item.config.getoption("--run-slow"):
        pytest.skip("slow: waits for a real default timeout; run with --run-slow")
