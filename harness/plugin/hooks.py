"""The pytest plugin: options, markers, the client under test.

Strategy: a thin plugin in the style of respx's and anyio's, loaded only when a session
asks for the suite: `mcp-host-conformance run` names it (`-p
mcp_host_conformance.harness.plugin.hooks`), as a plain pytest run of the suite must; no entry
point loads it into every pytest session of the environment, so a host project's own tests
never meet its options, markers or fixtures. Options live in one group and markers are
registered in `pytest_configure` (so `--strict-markers` accepts them), all prefixed `mcphc`
(`harness.cases.items`) so they cannot collide with a project's own; the fixtures live in
`mcp_host_conformance.harness.plugin.fixtures`, imported here. Once a run targets the suite
(a client option, the suite's package among the arguments, or a conformance case collected),
the client is loaded and described once before any case
(`mcp_host_conformance.harness.run.client_under_test`): a client that cannot be loaded, a
driver that fails its handshake, a client that cannot describe itself end the run with
one line. The reporting side (outcomes, tables, JSON, baseline, exit status) is
`mcp_host_conformance.harness.reports.reporting.ReportingPlugin`, registered here; what a case
is, is `mcp_host_conformance.harness.cases.items`. During a conformance run SIGTERM unwinds the
run as Ctrl-C does (`mcp_host_conformance.harness.run.cleanup`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Final

import pytest

from mcp_host_conformance.harness.cases.hostrun import RefusedAtAdd, Timeouts
from mcp_host_conformance.harness.cases.items import (
    EXPLORE_SCENARIOS,
    EXPLORE_SEED,
    MARK_EXPLORER,
    MARK_NEEDS_CANCEL,
    MARK_PROFILE,
    MARK_REQUIREMENTS,
    MARK_SLOW,
    SUITE_PACKAGE,
    flag,
    in_suite,
    is_case,
    option,
    requirement_ids,
)
from mcp_host_conformance.harness.monitors.watch import watch
from mcp_host_conformance.harness.oauth.browser_watch import guard_browser
from mcp_host_conformance.harness.plugin.attempts import pytest_runtest_protocol  # noqa: F401
from mcp_host_conformance.harness.plugin.fixtures import *  # noqa: F403 - the fixtures cases use
from mcp_host_conformance.harness.plugin.fixtures import Case
from mcp_host_conformance.harness.reports.interruption import NAME as INTERRUPTION
from mcp_host_conformance.harness.reports.interruption import InterruptionWatch
from mcp_host_conformance.harness.reports.reporting import (
    FINDINGS,
    MONITOR_VERDICT,
    ReportingPlugin,
)
from mcp_host_conformance.harness.run.cleanup import (
    SigtermHandler,
    install_sigterm,
    restore_sigterm,
    start_run,
    sweep,
)
from mcp_host_conformance.harness.run.client_path import add_client_path
from mcp_host_conformance.harness.run.client_under_test import (
    TIMEOUT_SCALE_ENV,
    WORKER_KEY,
    client_description,
    close_client,
    described,
    description_for_workers,
    prepare,
    timeout_scale,
)
from mcp_host_conformance.harness.run.starvation import clock_boost, inconclusive, verdict_of
from mcp_host_conformance.harness.run.workers import add_option as add_workers_option
from mcp_host_conformance.harness.run.workers import check_options as check_workers_options
from mcp_host_conformance.harness.run.workers import pytest_runtestloop  # noqa: F401 - the hook
from mcp_host_conformance.harness.verdicts.outcomes import (
    NOT_APPLICABLE_PREFIX,
    NOT_OBSERVABLE_PREFIX,
    ConformanceFailure,
    Finding,
    HarnessFailure,
    MonitorFailure,
    skip_outcome,
)
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS, replaced_for
from mcp_host_conformance.harness.verdicts.safe_text import inline

GROUP: Final = "mcp-host-conformance"
EXPLORE_SHRINK: Final = 12
REPORTING: Final = "mcp-host-conformance-reporting"

MARKERS: Final = {
    MARK_REQUIREMENTS: (
        f"{MARK_REQUIREMENTS}(*ids): the requirement IDs a conformance case checks, "
        f"e.g. {MARK_REQUIREMENTS}('APR-2')"
    ),
    MARK_PROFILE: (
        f"{MARK_PROFILE}(name): the case belongs to an optional profile; "
        "not applicable unless the client claims it"
    ),
    MARK_SLOW: (
        f"{MARK_SLOW}: the case waits for a real default timeout; runs only with {flag('run_slow')}"
    ),
    MARK_NEEDS_CANCEL: (
        f"{MARK_NEEDS_CANCEL}: the case cancels a call; not applicable unless describe().can_cancel"
    ),
    MARK_EXPLORER: (
        f"{MARK_EXPLORER}: the scenario explorer's case: it names no rule of its own; what the "
        "rule monitors see in its generated sessions fails their rules"
    ),
}
SLOW_SKIP: Final = (
    "slow: waits for a real default timeout; run with --run-slow "
    f"(plain pytest: {flag('run_slow')})"
)

_SIGTERM = pytest.StashKey[SigtermHandler]()
_BROWSER = pytest.StashKey[Callable[[], None]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(
        GROUP, "MCP host conformance (`mcp-host-conformance run` gives these without the prefix)"
    )
    add_workers_option(group)
    group.addoption(
        flag("client"),
        default=None,
        help=(
            "the client under test: module:attr or an adapter entry-point name "
            "(group mcp_host_conformance.adapters); "
            "default: $MCP_HOST_CONFORMANCE_CLIENT or 'reference'"
        ),
    )
    group.addoption(
        flag("client_cmd"),
        default=None,
        help="a command that speaks the driver protocol (a host in any language), e.g. "
        "'go run ./cmd/conformance-driver'",
    )
    group.addoption(
        flag("client_path"),
        action="append",
        default=[],
        metavar="DIR",
        help="a folder to import the --mcphc-client adapter from, put first on sys.path (in "
        "this process and in restarted hosts); repeatable",
    )
    group.addoption(
        flag("run_slow"),
        action="store_true",
        default=False,
        help="also run the cases that wait for real default timeouts",
    )
    group.addoption(
        flag("report_json"), default=None, metavar="PATH", help="write the JSON report to PATH"
    )
    group.addoption(
        flag("report_html"),
        default=None,
        metavar="PATH",
        help="write the HTML report to PATH (one page: summary by area, every failure)",
    )
    group.addoption(
        flag("report_markdown"),
        default=None,
        metavar="PATH",
        help="write a Markdown summary to PATH (for a CI job summary)",
    )
    group.addoption(
        flag("expected_failures"),
        default=None,
        metavar="PATH",
        help="a baseline file of requirement or case IDs expected to fail",
    )
    group.addoption(
        flag("no_monitors"),
        action="store_true",
        default=False,
        help="do not run the rule monitors after each case (each rule is then checked by its "
        "own cases only)",
    )
    group.addoption(
        flag("explore_scenarios"),
        type=int,
        default=None,
        metavar="N",
        help=f"the explorer case runs N generated scenarios (default {EXPLORE_SCENARIOS}; "
        "0 skips it)",
    )
    group.addoption(
        flag("explore_seconds"),
        type=float,
        default=None,
        metavar="S",
        help="the explorer case runs scenarios for S seconds instead of a number of them",
    )
    group.addoption(
        flag("explore_seed"),
        type=int,
        default=EXPLORE_SEED,
        metavar="N",
        help=f"the explorer's seed (default {EXPLORE_SEED}: every run explores the same)",
    )
    group.addoption(
        flag("explore_shrink"),
        type=int,
        default=EXPLORE_SHRINK,
        metavar="N",
        help="the explorer spends at most N runs in all shrinking what it found "
        f"(default {EXPLORE_SHRINK})",
    )
    group.addoption(
        flag("explore_replay"),
        metavar="FILE",
        default=None,
        help="the explorer case replays this scenario file (a folder: every *.json file in "
        "it) instead of exploring",
    )
    group.addoption(
        flag("explore_dir"),
        metavar="DIR",
        default=None,
        help="where the explorer writes the shortest scenario of each violation "
        "(default: mcphc-scenarios in the current directory, made only when one is found)",
    )
    group.addoption(
        flag("timeout_scale"),
        type=float,
        default=None,
        metavar="FACTOR",
        help="multiply the suite's scaled timeouts and bounds, a driver's included (slow "
        f"machines); default ${TIMEOUT_SCALE_ENV} or 1",
    )


def targets_suite(config: pytest.Config) -> bool:
    """Whether this run is meant to run conformance cases (before anything is collected)."""
    if option(config, "client", None) or option(config, "client_cmd", None):
        return True
    for arg in config.args:
        text = str(arg)
        if SUITE_PACKAGE in text or in_suite(config.invocation_params.dir / text.split("::")[0]):
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    check_workers_options(config)
    add_client_path(option(config, "client_path", []))
    for text in MARKERS.values():
        config.addinivalue_line("markers", text)
    if not config.pluginmanager.has_plugin(REPORTING):
        config.pluginmanager.register(
            ReportingPlugin(
                config, describe=lambda: described(config), junit=targets_suite(config)
            ),
            REPORTING,
        )
    if not config.pluginmanager.has_plugin(INTERRUPTION):
        config.pluginmanager.register(InterruptionWatch(config), INTERRUPTION)
    if targets_suite(config):
        config.stash[_SIGTERM] = install_sigterm()
        config.stash[_BROWSER] = guard_browser()  # CRED-6; and no real browser ever opens
        start_run()  # whatever the run starts ends with it, setsid or not (run.cleanup)


def pytest_unconfigure(config: pytest.Config) -> None:
    close_client(config)
    sweep()
    if _SIGTERM in config.stash:
        restore_sigterm(config.stash[_SIGTERM])
    if _BROWSER in config.stash:
        config.stash[_BROWSER]()


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if targets_suite(config) and not hasattr(config, "workerinput"):
        prepare(config)  # one clear line and no case run if the client cannot be used


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, controller side: hand the description to each worker."""
    found = description_for_workers(node.config)
    if found is not None:
        node.workerinput[WORKER_KEY] = found


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    d = described(config)
    if d is None:
        return None
    profiles = ", ".join(inline(p) for p in sorted(d.profiles)) or "none"
    from mcp_host_conformance.harness.sandbox.network import observe

    network = observe()
    return [
        f"mcp-host-conformance: client {inline(d.name)} {inline(d.version)} (profiles: {profiles}; "
        f"default timeouts connect {d.connect_timeout:g}s, call {d.call_timeout:g}s; "
        f"timeout scale {timeout_scale(config):g})",
        f"mcp-host-conformance: network {network.mode}"
        + (f" ({network.reason})" if network.reason else " (loopback and the suite's addresses)"),
    ]


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if any(is_case(item) for item in items):
        if not hasattr(config, "workerinput"):
            prepare(config)  # said once, before any case, if it was not said at start
        if config.stash.get(_SIGTERM, None) is None:
            config.stash[_SIGTERM] = install_sigterm()
            start_run()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """After a case's body: the rule monitors read what it made (`watch_case`).

    A case that needs a server configured which a verified-add host refused to save (its
    first sync failed, SYNC-1) cannot be set up on such a host: not applicable, with why.
    A monitor's findings fail other rules than the case's own: a case whose own checks
    passed, or that ended not applicable or skipped, raises them as a MonitorFailure that
    keeps its own outcome; a case that failed keeps its failure, and its findings travel
    beside it."""
    own: BaseException | None = None
    result: Any = None
    try:
        result = yield
    except (KeyboardInterrupt, SystemExit):
        raise
    except RefusedAtAdd as exc:
        if not is_case(item):
            raise
        own = pytest.skip.Exception(f"{NOT_APPLICABLE_PREFIX}{exc}")
    except MonitorFailure as exc:
        if not is_case(item):
            raise
        # a case that judges through the monitors itself (the explorer): its findings are
        # the monitors', its own checks passed
        item.stash[FINDINGS] = exc.findings
        _monitors_fail(item, MonitorFailure(exc.findings))
    except BaseException as exc:
        own = exc
    died = _mocks_died(item)
    if died:  # what the case saw, pass or fail, is the dead mock's doing, not the host's
        raise HarnessFailure(f"the harness's mock {died} stopped during the case") from own
    findings = watch_case(item)
    failed = _failed_rules(item, own, findings)
    verdict_of(item, failed)
    why = inconclusive(item, failed) if failed else ""
    if why:  # a second attempt failed otherwise, on a clock starved again: no verdict
        item.stash[FINDINGS] = []
        raise pytest.skip.Exception(f"{NOT_OBSERVABLE_PREFIX}{why}") from own
    if isinstance(own, pytest.skip.Exception) and findings:
        reason = str(own.msg)
        _monitors_fail(item, MonitorFailure(findings, own=skip_outcome(reason), reason=reason))
    if own is not None:
        raise own
    if findings:
        _monitors_fail(item, MonitorFailure(findings))
    return result


def _failed_rules(
    item: pytest.Item, own: BaseException | None, findings: list[Finding]
) -> frozenset[str]:
    """The rules a case's attempt failed: those its failure names (else its own), and those
    its monitors' findings name."""
    failed = {finding.rule for finding in findings}
    if isinstance(own, ConformanceFailure):
        failed.update(own.ids)
    elif own is not None and not isinstance(own, pytest.skip.Exception):
        failed.update(requirement_ids(item))
    return frozenset(failed)


def _mocks_died(item: pytest.Item) -> str:
    """The names of the case's served mocks that stopped by themselves, or ''."""
    case = getattr(item, "funcargs", {}).get("case")
    if not is_case(item) or not isinstance(case, Case):
        return ""
    return ", ".join(
        inline(str(getattr(getattr(mock, "spec", None), "name", None) or type(mock).__name__))
        for mock in case.mocks
        if getattr(mock, "died", False)
    )


def _monitors_fail(item: pytest.Item, failure: MonitorFailure) -> None:
    # A failure of pytest's own kind, without a traceback: the findings are the message, and
    # the report keeps the case's own outcome (reporting reads the stash).
    item.stash[MONITOR_VERDICT] = failure
    pytest.fail(str(failure), pytrace=False)


def watch_case(item: pytest.Item) -> list[Finding]:
    """Stop the case's sessions and run every rule monitor over what it made (its findings
    are kept in the item's stash for the report); [] for a test that is no case, made no
    `case`, or when monitors are off."""
    case = getattr(item, "funcargs", {}).get("case")
    if not is_case(item) or not isinstance(case, Case) or option(item.config, "no_monitors", False):
        return []
    case.stop_hosts()
    grace = max(1.0, 3 * Timeouts.scaled(timeout_scale(item.config) * clock_boost(item)).grace)
    description = client_description(item.config)
    # a host with OAuth that claims no profile for it: what watches a host without OAuth
    # (CRED-6) stands aside, as its case does
    extra = {"oauth"} if description.has_oauth else set()
    observed = case.observed(frozenset(description.profiles) | extra, grace)
    findings, problems = watch(observed)
    for problem in problems:
        warnings.warn(f"mcp-host-conformance: {problem} (in {item.nodeid})", stacklevel=1)
    item.stash[FINDINGS] = findings
    return findings


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not is_case(item):
        return
    ids = requirement_ids(item)
    if item.get_closest_marker(MARK_EXPLORER) is not None:
        if option(item.config, "no_monitors", False):
            pytest.skip(f"{NOT_APPLICABLE_PREFIX}the explorer judges through the rule monitors")
        return
    if not ids:
        pytest.fail(
            f"{item.nodeid}: a conformance case must name the requirements it checks "
            f"with @pytest.mark.{MARK_REQUIREMENTS}('ID', ...)",
            pytrace=False,
        )
    unknown = [rid for rid in ids if rid not in REQUIREMENTS]
    if unknown:
        pytest.fail(f"{item.nodeid}: unknown requirement ID(s) {', '.join(unknown)}", pytrace=False)
    profile_marks = list(item.iter_markers(MARK_PROFILE))
    needs_cancel = item.get_closest_marker(MARK_NEEDS_CANCEL) is not None
    claimed = client_description(item.config).profiles
    if claimed and not profile_marks:
        replaced = replaced_for(claimed)
        if ids and all(rid in replaced for rid in ids):
            by = replaced[ids[0]]
            pytest.skip(
                f"{NOT_APPLICABLE_PREFIX}{', '.join(ids)} is replaced by {by.id} for a host "
                f"that claims the {by.profile} profile"
            )
    if profile_marks or needs_cancel:
        d = client_description(item.config)
        for mark in profile_marks:
            for profile in mark.args:
                if profile not in d.profiles:
                    pytest.skip(
                        f"{NOT_APPLICABLE_PREFIX}profile {profile} not claimed by {inline(d.name)}"
                    )
        if needs_cancel and not d.can_cancel:
            pytest.skip(
                f"{NOT_APPLICABLE_PREFIX}{inline(d.name)} cannot cancel a call "
                "(describe().can_cancel is false)"
            )
    if item.get_closest_marker(MARK_SLOW) is not None and not option(
        item.config, "run_slow", False
    ):
        pytest.skip(SLOW_SKIP)
