"""The main command, `mcp-host-conformance`: run the suite, list the requirements.

Strategy: the suite is a pytest plugin plus the `conformance` package, so `run` is `pytest
--pyargs mcp_host_conformance.conformance` with the plugin's options, run in-process (no
second interpreter start), and nothing of the project it is started in: its pytest
configuration, its conftest.py files, $PYTEST_ADDOPTS and its pytest plugins are not read
(`isolated_args`, `_caller_settings_ignored`), the rootdir is the suite's own, and an
adapter is imported from the folders `--client-path` names; the cases run in worker
processes forked from it after collection (harness/run/workers.py; twice the CPUs by default
since they mostly wait; `--serial` for one at a time); the table, the JSON report, the
baseline and the exit status all come from `mcp_host_conformance.harness.reports.reporting`,
so the command and a plain pytest invocation behave the same, but for the exit status:
pytest's codes give one number (4) to every usage error, a client that cannot be loaded
among them, and call an empty selection 5; `run` gives each ending a status of its own
(`Status`, `run_status`: the one mapping, listed by `--help`). `requirements` collects the
same package (collect only) and reads each case's `mcphc_requirements` marker, so the coverage it
shows is the one a run would have. `baseline` writes an expected-failures file from a JSON
report. Building the pytest arguments and rendering the listing are pure functions; only
`main` touches pytest and the terminal. A mistake on the command line is one line on stderr
(exit status 5), not a usage dump.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import functools
import io
import json
import math
import os
import sys
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

import pytest

from mcp_host_conformance.harness.cases.items import (
    EXPLORE_SCENARIOS,
    EXPLORE_SEED,
    SUITE_PACKAGE,
    case_id,
    flag,
    requirement_ids,
    suite_dir,
)
from mcp_host_conformance.harness.reports.progress import CaseLines, asks_for_verbosity
from mcp_host_conformance.harness.run.client_path import client_path_problem
from mcp_host_conformance.harness.run.client_under_test import client_unusable
from mcp_host_conformance.harness.run.closed_output import kept_going
from mcp_host_conformance.harness.run.loader import (
    ClientChoiceError,
    LoadError,
    choose_client,
    zoo_clients,
)
from mcp_host_conformance.harness.sandbox.network import (
    HOST,
    ISOLATED,
    REASON_ENV,
    SealError,
    seal,
    serve_dns,
)
from mcp_host_conformance.harness.verdicts.baseline import baseline_from_report
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS
from mcp_host_conformance.harness.verdicts.safe_text import inline

__all__ = [
    "EXIT_STATUSES",
    "Status",
    "broken_clients_for",
    "build_run_args",
    "collect_cases",
    "isolated_args",
    "main",
    "render_requirements",
    "requirements_listing",
    "run_status",
    "write_baseline",
]

EXPLORE_DEFAULT = 40  # scenarios `explore` runs without --scenarios or --budget
SHRINK_DEFAULT = 60  # runs `explore` may spend shrinking, in all
DEFAULT_CLIENT = "reference"
NETWORK_AUTO = "auto"
# The pytest plugins a run loads, and no others: an environment's other plugins (a host
# project's own, or respx's, installed with this package: 0.3 s of CPU each process) would
# start with every worker and could change how cases run. More can be named after `--`
# (`-p NAME`).
SUITE_PLUGINS = ("mcp_host_conformance.harness.plugin.hooks", "_hypothesis_pytestplugin")
# Workers of a default run: the cases mostly wait, so twice the CPUs overlap the waits; more
# than 8 only adds hosts and mocks competing for the same cores.
MIN_WORKERS = 2
MAX_WORKERS = 8
MAX_REPORT = 64 * 1024 * 1024  # bytes of a JSON report read by `baseline`
# A run's own pytest configuration (given with -c): none of the caller's is read.
RUN_CONFIG: Final = Path(__file__).resolve().parent / "data" / "pytest.ini"
# What pytest reads from the environment besides its arguments: the caller's settings too.
CALLER_SETTINGS: Final = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")


class Status(enum.IntEnum):
    """The command's exit statuses, one meaning each."""

    PASSED = 0
    FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    CLIENT_UNUSABLE = 4
    USAGE_ERROR = 5


EXIT_STATUSES: Final = {
    Status.PASSED: "passed: no MUST case failed (no SHOULD case with --strict), the baseline "
    "is up to date",
    Status.FAILED: "a MUST case failed (a SHOULD case with --strict), or a baseline entry is "
    "stale or unknown",
    Status.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM)",
    Status.INTERNAL_ERROR: "an internal error of the harness (one of its workers, mocks or its "
    "name server failed under a case, which is then not run; a report could not be written at "
    "the end); or --network isolated where the machine cannot seal the run",
    Status.CLIENT_UNUSABLE: "the client could not be loaded or described (a driver: its "
    "handshake failed); no case ran",
    Status.USAGE_ERROR: "a usage error: a bad option (ours or pytest's, after `--`), an empty "
    "--client or --client-cmd, a --client-path that is no folder, an unreadable "
    "expected-failures file, a report path that cannot be written, no case selected",
}

# pytest's exit codes (pytest.ExitCode, by number: 6 is newer than the oldest pytest this
# package takes) as `run` reports them. pytest's 4 is every usage error, a client that cannot
# be loaded or described among them: `run_status` tells the two apart.
_FROM_PYTEST: Final = {
    0: Status.PASSED,  # OK
    1: Status.FAILED,  # TESTS_FAILED
    2: Status.INTERRUPTED,  # INTERRUPTED
    3: Status.INTERNAL_ERROR,  # INTERNAL_ERROR
    4: Status.USAGE_ERROR,  # USAGE_ERROR, or the client's failure
    5: Status.USAGE_ERROR,  # NO_TESTS_COLLECTED: the options selected no case
    6: Status.FAILED,  # MAX_WARNINGS_ERROR: `-- --max-warnings N` failed the run
}


def run_status(pytest_status: int, *, client_failed: bool = False) -> Status:
    """The exit status of `run` for pytest's exit code; `client_failed`: the run stopped
    because its client could not be loaded or described. A code no pytest gives (a plugin's
    own) is an internal error."""
    if pytest_status == 4 and client_failed:
        return Status.CLIENT_UNUSABLE
    return _FROM_PYTEST.get(int(pytest_status), Status.INTERNAL_ERROR)


def _statuses_help() -> str:
    lines = ["exit status:"]
    for status, text in EXIT_STATUSES.items():
        lines += textwrap.wrap(
            text, 78, initial_indent=f"  {int(status)}  ", subsequent_indent=" " * 5
        )
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line: what is wrong and where to look; and no
    abbreviated options (a typo must not silently become another option)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(Status.USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Formatter(argparse.HelpFormatter):
    """Paragraphs reflowed as argparse does; a text of several lines (the exit statuses) kept
    as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mcp-host-conformance",
        description="Conformance suite for MCP hosts: checks a client, rule by rule, "
        "against the host-side requirements. Also `python -m mcp_host_conformance`.",
        epilog=_statuses_help(),
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=version_line())
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )

    run = commands.add_parser(
        "run",
        help="run the suite against a client",
        description=(
            "Run the conformance suite (pytest --pyargs mcp_host_conformance.conformance) "
            "against a client; prints a line per finished case, then a table by requirement "
            "area and the failures. Arguments after `--` go to pytest unchanged, e.g. "
            "`-- -k approval -x` (with -v or -q there, pytest's own progress output instead "
            "of the case lines). The run reads no pytest configuration of the directory it is "
            "started in (pytest.ini, pyproject.toml, conftest.py, $PYTEST_ADDOPTS, "
            "$PYTEST_PLUGINS)."
        ),
        epilog=_statuses_help(),
        formatter_class=_Formatter,
    )
    _client_options(run)
    run.add_argument("--report-json", metavar="PATH", help="write the JSON report to PATH")
    run.add_argument(
        "--report-html",
        metavar="PATH",
        help="write the HTML report to PATH (one page: summary by area, every failure)",
    )
    run.add_argument(
        "--report-markdown",
        metavar="PATH",
        help="write a Markdown summary to PATH: the verdict, the failed rules, the baseline, "
        "the next step (for a CI job summary, e.g. $GITHUB_STEP_SUMMARY)",
    )
    run.add_argument(
        "--expected-failures",
        metavar="PATH",
        help="baseline: a file of requirement or case IDs expected to fail (one per line)",
    )
    run.add_argument("--strict", action="store_true", help="SHOULD failures fail the run")
    run.add_argument(
        "--run-slow",
        action="store_true",
        help="also run the cases that wait for real default timeouts",
    )
    run.add_argument(
        "--explore-scenarios",
        type=int,
        metavar="N",
        help="the explorer's case runs N generated scenarios (docs/explorer.md; default "
        f"{EXPLORE_SCENARIOS}, the same ones on every run; 0 skips it). For a longer "
        "exploration, use the explore command",
    )
    run.add_argument(
        "--explore-seed",
        type=int,
        metavar="N",
        help=f"the seed of the explorer's case (default {EXPLORE_SEED})",
    )
    pace = run.add_mutually_exclusive_group()
    pace.add_argument(
        "-n",
        dest="workers",
        type=_workers,
        metavar="N",
        help="run the cases in N worker processes at once (forked from the run after "
        "collection, harness/run/workers.py); default "
        f"{default_workers()} here (twice the CPUs, {MIN_WORKERS} to {MAX_WORKERS}): cases "
        "mostly wait on timeouts and mocks, so more workers than cores overlap the waiting; "
        "0 runs them one at a time in this process",
    )
    pace.add_argument(
        "--serial",
        action="store_const",
        const=0,
        dest="workers",
        help="one case at a time, in this process (-n 0): for a host that cannot run two "
        "instances at once (docs/adapter.md, Concurrency)",
    )

    explore = commands.add_parser(
        "explore",
        help="drive a client through generated scenarios and shrink what breaks a rule",
        description="Run the scenario explorer (docs/explorer.md) against a client: "
        "generated sessions over the dimension catalogue, every rule monitor checked after "
        "every step; each rule a monitor sees broken is shrunk to the shortest scenario that "
        "still shows it and written to a file, which `--replay FILE` runs again with the same "
        "verdict. The budget is a number of scenarios (--scenarios; the same scenarios for "
        "the same --seed) or a time (--budget, e.g. 5m). Arguments after `--` go to pytest.",
        epilog=_statuses_help(),
        formatter_class=_Formatter,
    )
    _client_options(explore)
    budget = explore.add_mutually_exclusive_group()
    budget.add_argument(
        "--scenarios", type=_positive, metavar="N", help="run N scenarios (default 40)"
    )
    budget.add_argument(
        "--budget",
        type=_duration,
        metavar="TIME",
        help="run scenarios for TIME: seconds, or a number with s, m or h (e.g. 5m)",
    )
    explore.add_argument(
        "--seed", type=int, default=1, metavar="N", help="the seed of the scenarios (default 1)"
    )
    explore.add_argument(
        "--shrink",
        type=_workers,
        default=SHRINK_DEFAULT,
        metavar="N",
        help=f"spend at most N runs in all shrinking what was found (default {SHRINK_DEFAULT}; "
        "0: each violation's scenario is written as it was found)",
    )
    explore.add_argument(
        "--replay",
        metavar="FILE",
        help="run the scenario in FILE (written by an earlier exploration) instead; a "
        "folder: every scenario file in it (*.json), in name order",
    )
    explore.add_argument(
        "--out",
        metavar="DIR",
        default="mcphc-scenarios",
        help="where each violation's shortest scenario is written (default: mcphc-scenarios; "
        "made only when one is found)",
    )
    explore.add_argument("--report-json", metavar="PATH", help="write the JSON report to PATH")
    explore.add_argument(
        "--expected-failures",
        metavar="PATH",
        help="baseline: a file of requirement or case IDs expected to fail (one per line)",
    )

    sealed = commands.add_parser(
        "sealed",
        help="run any command in the sealed network a run uses (e.g. pytest directly)",
        description="Run COMMAND (given after `--`) in a private network namespace with only "
        "loopback, a stand-in remote address and private-range addresses (docs/network.md); "
        "where the machine cannot make one it runs unsealed, saying so in one line on stderr, "
        "or with --require exits 3. "
        "Exit status: the command's; 5 when no command is given.",
    )
    sealed.add_argument("--require", action="store_true", help="exit 3 instead of running unsealed")

    listing = commands.add_parser(
        "requirements",
        help="list every requirement with its level, text and the cases that check it",
        description="List every requirement ID with its level, its text and the cases that "
        "check it (read from the suite's markers); an ID without a case shows as uncovered. "
        "Exit status 3 when the suite cannot be collected.",
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of text")

    baseline = commands.add_parser(
        "baseline",
        help="write an expected-failures file from a JSON report",
        description="Write an expected-failures baseline (for `run --expected-failures`) from "
        "a JSON report (`run --report-json`): the IDs of the cases that failed, warned or were "
        "expected failures, then the requirement IDs a rule monitor saw broken, sorted, one "
        "per line. Exit status 5 (one line) when the report "
        "cannot be read or the baseline cannot be written.",
    )
    baseline.add_argument("report", metavar="REPORT.json", help="a report written by --report-json")
    baseline.add_argument(
        "-o", "--output", metavar="PATH", help="write the baseline to PATH (default: stdout)"
    )
    baseline.add_argument(
        "--requirements",
        action="store_true",
        help="list requirement IDs (every case of a listed requirement may fail) instead of "
        "case IDs",
    )
    return parser


# ---- run ------------------------------------------------------------------------------------


class Refused(Exception):
    """A command cannot do what it was asked: its exit status and the one line saying why."""

    def __init__(self, status: Status, line: str) -> None:
        super().__init__(line)
        self.status = status
        self.line = line


def _client_options(parser: argparse.ArgumentParser) -> None:
    """The options that say which client, how slow a machine, and which network: the same
    for every command that runs a client."""
    who = parser.add_mutually_exclusive_group()
    who.add_argument(
        "--client",
        metavar="NAME|module:attr",
        help="a Python adapter: an entry-point name (group mcp_host_conformance.adapters) or "
        f"module:attr (default: $MCP_HOST_CONFORMANCE_CLIENT or {DEFAULT_CLIENT!r})",
    )
    who.add_argument(
        "--client-cmd",
        metavar="COMMAND",
        help="a driver command speaking the driver protocol (docs/driver-protocol.md), "
        "for a host in any language",
    )
    parser.add_argument(
        "--client-path",
        action="append",
        type=_folder,
        metavar="DIR",
        help="a folder to import the --client adapter from (the folder your adapter's package "
        "is in, e.g. `.` or `src`), put first on the import path of the run and of every "
        "restarted host; repeatable. Nothing else is: the directory the run starts in is not "
        "on it",
    )
    parser.add_argument(
        "--timeout-scale",
        type=_scale,
        metavar="FACTOR",
        help="multiply every timeout and bound of the suite (a driver's included) by FACTOR, "
        "for a slow or loaded machine, e.g. 3; default $MCP_HOST_CONFORMANCE_TIMEOUT_SCALE or 1",
    )
    parser.add_argument(
        "--network",
        choices=(NETWORK_AUTO, ISOLATED, HOST),
        default=NETWORK_AUTO,
        help="seal the run (the host, its driver and children too) in a private network "
        "namespace with only loopback and the suite's own addresses: 'auto' (default) when the "
        "machine allows it, 'isolated' or fail (exit 3), 'host' never; docs/network.md",
    )


def _positive(text: str) -> int:
    value = _workers(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _duration(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (e.g. 90, 90s, 5m)") from None
    if not 0 < value <= 7 * 24 * 3600:
        raise argparse.ArgumentTypeError(f"not a time from 1 s to a week: {text!r}")
    return value


def build_explore_args(options: argparse.Namespace, extra: Sequence[str] = ()) -> list[str]:
    """The pytest arguments of `explore`: the explorer's case alone, in this process."""
    args = [*plugin_args(), *isolated_args(), "--pyargs", f"{SUITE_PACKAGE}.test_explorer"]
    for name, value in (
        ("client", options.client),
        ("client_cmd", options.client_cmd),
        ("report_json", options.report_json),
        ("expected_failures", options.expected_failures),
        ("explore_replay", options.replay),
        ("explore_dir", options.out),
    ):
        if value is not None:
            args += [flag(name), value]
    for folder in options.client_path or ():
        args += [flag("client_path"), folder]
    if options.budget is not None:
        args += [flag("explore_seconds"), f"{options.budget:g}"]
    else:
        args += [flag("explore_scenarios"), str(options.scenarios or EXPLORE_DEFAULT)]
    args += [flag("explore_seed"), str(options.seed), flag("explore_shrink"), str(options.shrink)]
    if options.timeout_scale is not None:
        args += [flag("timeout_scale"), f"{options.timeout_scale:g}"]
    return args + list(extra)


def build_run_args(options: argparse.Namespace, extra: Sequence[str] = ()) -> list[str]:
    """The pytest arguments of `run`."""
    workers = default_workers() if options.workers is None else options.workers
    args = [*plugin_args(), *isolated_args(), "--pyargs", SUITE_PACKAGE]
    # An option given empty is passed on as given, never dropped: the plugin refuses it
    # (an empty --client must not become the reference host).
    for name in (
        "client",
        "client_cmd",
        "report_json",
        "report_html",
        "report_markdown",
        "expected_failures",
    ):
        value = getattr(options, name)
        if value is not None:
            args += [flag(name), value]
    for folder in options.client_path or ():
        args += [flag("client_path"), folder]
    if options.strict:
        args.append("--strict")  # pytest's own flag; the plugin reads it (docs/harness-contract.md)
    if options.run_slow:
        args.append(flag("run_slow"))
    if options.explore_scenarios is not None:
        args += [flag("explore_scenarios"), str(options.explore_scenarios)]
    if options.explore_seed is not None:
        args += [flag("explore_seed"), str(options.explore_seed)]
    if options.timeout_scale is not None:
        args += [flag("timeout_scale"), f"{options.timeout_scale:g}"]
    if workers:
        args += [flag("workers"), str(workers)]
    return args + list(extra)


def plugin_args() -> list[str]:
    """pytest arguments loading only the suite's plugins (workers are the suite's own,
    harness/run/workers.py: no pytest-xdist)."""
    return ["--disable-plugin-autoload", *(a for p in SUITE_PLUGINS for a in ("-p", p))]


def isolated_args() -> list[str]:
    """pytest arguments reading no configuration of the directory a run starts in: the
    suite's own ini file, no conftest.py (the suite has none; a project's would be read from
    the current directory), the rootdir the suite's package is in (so node IDs are
    `conformance/test_x.py::...` wherever it is installed), and no cache written there."""
    return [
        "-c",
        str(RUN_CONFIG),
        "--rootdir",
        str(suite_dir().parent),
        "--noconftest",
        "-p",
        "no:cacheprovider",
    ]


@contextlib.contextmanager
def _caller_settings_ignored() -> Iterator[None]:
    """pytest's environment variables of the caller (a host's CI may set $PYTEST_ADDOPTS for
    its own tests) unset while a run starts, and restored after."""
    saved = {name: os.environ.pop(name) for name in CALLER_SETTINGS if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def version_line() -> str:
    from mcp_host_conformance import __version__

    return f"mcp-host-conformance {__version__}"


def _folder(text: str) -> str:
    problem = client_path_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem.removeprefix("--client-path "))
    return os.path.abspath(text)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_workers() -> int:
    """Twice the CPUs this process may use, within MIN_WORKERS..MAX_WORKERS."""
    return max(MIN_WORKERS, min(MAX_WORKERS, 2 * usable_cpus()))


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _seal_run(mode: str) -> int | None:
    """Seal this process's network as `--network` asks (before pytest starts any thread);
    an exit status when the run must not go on."""
    if mode == HOST:
        os.environ[REASON_ENV] = "not sealed: --network host"
        return None
    try:
        network = seal()
    except SealError as exc:
        sys.stderr.write(f"mcp-host-conformance: {exc}\n")
        return Status.INTERNAL_ERROR
    if mode == ISOLATED and not network.isolated:
        sys.stderr.write(f"mcp-host-conformance: --network isolated: {network.reason}\n")
        return Status.INTERNAL_ERROR
    if network.isolated:
        serve_dns()  # the sealed network's name server, on a thread of this process
    return None


class _RunConfig:
    """A plugin of `run`'s own: keeps the run's pytest config, where the plugin says whether
    a usage error was the client's (`client_unusable`)."""

    def __init__(self) -> None:
        self.config: pytest.Config | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config


def _progress(extra: Sequence[str]) -> tuple[list[object], list[str]]:
    """A line per case instead of pytest's dots and percentages, unless the user asked pytest
    for its own (`-v`, `-q` after `--`): the plugins and the pytest arguments of a run."""
    if asks_for_verbosity(extra):
        return [], list(extra)
    return [CaseLines()], [*CaseLines.PYTEST_ARGS, *extra]


def _run(options: argparse.Namespace, extra: Sequence[str], sealing: bool) -> int:
    plugins, extra = _progress(extra)
    return _pytest_run(options, build_run_args(options, extra), sealing, "run", plugins)


def _explore(options: argparse.Namespace, extra: Sequence[str], sealing: bool) -> int:
    if options.replay is not None:
        replay = Path(options.replay)
        if replay.is_dir() and not any(replay.glob("*.json")):
            sys.stderr.write(
                "mcp-host-conformance explore: error: no scenario file (*.json) in "
                f"{inline(options.replay)}\n"
            )
            return Status.USAGE_ERROR
        if not replay.is_dir() and not replay.is_file():
            sys.stderr.write(
                f"mcp-host-conformance explore: error: no scenario file {inline(options.replay)}\n"
            )
            return Status.USAGE_ERROR
    plugins, extra = _progress(extra)
    return _pytest_run(options, build_explore_args(options, extra), sealing, "explore", plugins)


def _pytest_run(
    options: argparse.Namespace,
    args: list[str],
    sealing: bool,
    name: str,
    plugins: Sequence[object] = (),
) -> int:
    try:
        choose_client(options.client, options.client_cmd)
    except ClientChoiceError as exc:
        sys.stderr.write(f"mcp-host-conformance {name}: error: {exc}\n")
        return Status.USAGE_ERROR
    if sealing:
        refused = _seal_run(options.network)
        if refused is not None:
            return refused
    run = _RunConfig()
    with _caller_settings_ignored(), kept_going() as output:
        pytest_status = int(pytest.main(args, plugins=[run, *plugins]))
    if output.closed_under_us:
        sys.stderr.write(
            f"mcp-host-conformance {name}: the standard output was closed during the run "
            "(its reader went away): what was left to print was dropped\n"
        )
    status = run_status(
        pytest_status, client_failed=run.config is not None and client_unusable(run.config)
    )
    if pytest_status == pytest.ExitCode.NO_TESTS_COLLECTED:
        sys.stderr.write(
            f"mcp-host-conformance {name}: error: no case was selected (see the options after "
            "`--`)\n"
        )
    return status


def _sealed(options: argparse.Namespace, command: Sequence[str]) -> int:
    from mcp_host_conformance.harness.sandbox import network as sandbox

    if not command:
        sys.stderr.write("mcp-host-conformance sealed: give the command after `--`\n")
        return Status.USAGE_ERROR
    return sandbox.main([*(["--require"] if options.require else []), "--", *command])


# ---- requirements ------------------------------------------------------------------------------


class _CaseCollector:
    """A pytest plugin that remembers each collected case's ID and requirement IDs."""

    def __init__(self) -> None:
        self.cases: dict[str, list[str]] = {}

    def pytest_collection_finish(self, session: Any) -> None:
        for item in session.items:
            self.cases[case_id(item)] = requirement_ids(item)


def collect_cases(extra: Sequence[str] = ()) -> dict[str, list[str]]:
    """Case ID -> requirement IDs, by collecting the suite (nothing runs); `Refused` (an
    internal error) if it cannot be collected."""
    collector = _CaseCollector()
    output = io.StringIO()
    with contextlib.redirect_stdout(output), _caller_settings_ignored():
        status = pytest.main(
            [
                "--collect-only",
                "-q",
                *plugin_args(),
                *isolated_args(),
                "--pyargs",
                SUITE_PACKAGE,
                *extra,
            ],
            plugins=[collector],
        )
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        sys.stderr.write(output.getvalue())
        raise Refused(
            Status.INTERNAL_ERROR,
            f"mcp-host-conformance: collecting the suite failed (pytest exit {int(status)})",
        )
    return collector.cases


@functools.lru_cache(maxsize=1)
def _zoo() -> dict[str, Any]:
    # Loaded lazily through the entry-point group, so the harness never imports a zoo itself.
    try:
        return zoo_clients()
    except LoadError as exc:
        sys.stderr.write(f"mcp-host-conformance: {exc}\n")
        return {}


def broken_clients_for(requirement_id: str) -> list[str]:
    """The broken clients that prove a case of this requirement can fail: every client of the
    zoos (entry-point group `mcp_host_conformance.zoos`) whose `fails` set names the ID. Each
    name works with `run --client NAME`."""
    return sorted(
        name for name, client in _zoo().items() if requirement_id in getattr(client, "fails", ())
    )


def requirements_listing(cases: Mapping[str, Iterable[str]]) -> list[dict[str, Any]]:
    """Every catalog requirement with the cases that name it; `covered` False when none."""
    by_requirement: dict[str, list[str]] = {rid: [] for rid in REQUIREMENTS}
    for cid, ids in cases.items():
        for rid in ids:
            if rid in by_requirement and cid not in by_requirement[rid]:
                by_requirement[rid].append(cid)
    return [
        {
            "id": req.id,
            "area": req.area,
            "level": req.level,
            "profile": req.profile,
            "rule": req.rule,
            "observed": req.observed,
            "cases": by_requirement[req.id],
            "covered": bool(by_requirement[req.id]),
            "broken_clients": broken_clients_for(req.id),
        }
        for req in REQUIREMENTS.values()
    ]


def render_requirements(listing: list[dict[str, Any]]) -> str:
    lines = []
    for entry in listing:
        profile = f", profile {entry['profile']}" if entry["profile"] else ""
        lines.append(f"{entry['id']} ({entry['level']}{profile}): {entry['rule']}")
        if entry["cases"]:
            lines += [f"    checked by {cid}" for cid in entry["cases"]]
        else:
            lines.append("    uncovered")
        if entry.get("broken_clients"):
            lines.append(f"    fails against broken clients: {', '.join(entry['broken_clients'])}")
    covered = sum(1 for e in listing if e["covered"])
    lines.append(f"{covered} of {len(listing)} requirements covered")
    return "\n".join(lines)


# ---- baseline ------------------------------------------------------------------------------------


def write_baseline(report_path: str, *, requirements: bool = False) -> str:
    """The baseline text for the report at `report_path`; `Refused` (a usage error) with one
    line if it cannot be read or is not a report."""
    where = inline(report_path)

    def refused(why: str) -> Refused:
        return Refused(Status.USAGE_ERROR, f"mcp-host-conformance baseline: {where} {why}")

    try:
        with open(report_path, "rb") as f:
            data = f.read(MAX_REPORT + 1)
    except OSError as exc:
        raise refused(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_REPORT:
        raise refused(f"is over {MAX_REPORT} bytes")
    try:
        report = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise refused("is not a JSON report (write one with `run --report-json PATH`)") from None
    if not isinstance(report, dict) or not str(report.get("schema", "")).startswith(
        "mcp-host-conformance-report/"
    ):
        raise refused(
            "is not an mcp-host-conformance report (write one with `run --report-json PATH`)"
        )
    return baseline_from_report(report, requirements=requirements)


# ---- entry point ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, *, sealing: bool | None = None) -> int:
    """The command line. `sealing` (default: only when reading the real command line, i.e.
    `argv` is None) lets `run` move this very process into the sealed network; a caller
    that passes `argv` keeps its own process as it is unless it asks for it."""
    if sealing is None:
        sealing = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    options = _parser().parse_args(argv)
    try:
        return _command(options, extra, sealing)
    except Refused as exc:
        sys.stderr.write(exc.line + "\n")
        return exc.status


def _command(options: argparse.Namespace, extra: Sequence[str], sealing: bool) -> int:
    if options.command == "run":
        return _run(options, extra, sealing)
    if options.command == "explore":
        return _explore(options, extra, sealing)
    if options.command == "sealed":
        return _sealed(options, extra)
    if options.command == "baseline":
        text = write_baseline(options.report, requirements=options.requirements)
        if options.output:
            try:
                Path(options.output).write_text(text, "utf-8")
            except OSError as exc:
                raise Refused(
                    Status.USAGE_ERROR,
                    f"mcp-host-conformance baseline: cannot write {inline(options.output)}: "
                    f"{exc.strerror or exc}",
                ) from None
        else:
            sys.stdout.write(text)
        return Status.PASSED
    listing = requirements_listing(collect_cases(extra))
    if options.json:
        print(json.dumps({"requirements": listing}, indent=2))
    else:
        print(render_requirements(listing))
    return Status.PASSED


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
