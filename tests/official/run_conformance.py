"""Run the official MCP conformance framework's server scenarios against our HTTP mock.

Strategy: the framework (`@modelcontextprotocol/conformance`, pinned in package.json
beside this file, installed by `npm ci --prefix tests/official`) is software nobody here
wrote, so it checks our mock's protocol behaviour without our own assumptions. It runs
unmodified on the Node 22 of the pinned `node` npm package (every version of its CLI
needs `fs.globSync`, which Node 20 lacks). In `server` mode it is only a client: it
connects to the URL we give it, which is always our mock on 127.0.0.1.

One mock (`scenario-tools.json`: the fixture tools those scenarios call, with the exact
replies the scenario sources describe) serves every scenario, one CLI run per scenario,
in each of the mock's response modes (SSE, then JSON): they are different code paths.
`test_reconnection` (server-sse-polling) polls: its call's stream is primed and closed,
and the result waits for the GET with Last-Event-ID (SSE even in JSON mode).
A scenario passes only if the CLI exits 0, its `checks.json` holds at least one SUCCESS
and no FAILURE or WARNING, and the mock's journal shows the request the scenario is
about (and, for server-sse-polling, a resuming GET): a run that never reached the mock
cannot pass.

By hand, from the repository root:
    npm ci --prefix tests/official --no-audit --no-fund
    python tests/official/run_conformance.py [--scenario NAME]... [--response-mode sse|json|both]
        [--verbose] [--keep DIR]
Exit code: 0 all passed, 1 a scenario failed, 2 the framework is not installed as pinned.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: `mocks` lives at the root
    sys.path.insert(0, str(ROOT))

from mcp_host_conformance.mocks.http_server import HttpMock  # noqa: E402
from mcp_host_conformance.mocks.journal import Journal  # noqa: E402
from mcp_host_conformance.mocks.spec import load_spec  # noqa: E402

PACKAGE = "@modelcontextprotocol/conformance"
NODE_PACKAGE = "node"
NODE_MODULES = HERE / "node_modules"
SPEC_FILE = HERE / "scenario-tools.json"
SCENARIO_TIMEOUT = 60.0  # seconds for one CLI run; a healthy one takes about half a second

# scenario -> (JSON-RPC method, tool name or None): the request the mock must have seen
SCENARIOS: dict[str, tuple[str, str | None]] = {
    "server-initialize": ("initialize", None),
    "ping": ("ping", None),
    "tools-list": ("tools/list", None),
    "tools-call-simple-text": ("tools/call", "test_simple_text"),
    "tools-call-image": ("tools/call", "test_image_content"),
    "tools-call-audio": ("tools/call", "test_audio_content"),
    "tools-call-embedded-resource": ("tools/call", "test_embedded_resource"),
    "tools-call-mixed-content": ("tools/call", "test_multiple_content_types"),
    "tools-call-error": ("tools/call", "test_error_handling"),
    "server-sse-polling": ("tools/call", "test_reconnection"),
    "server-sse-multiple-streams": ("tools/list", None),
}
# scenarios that must also have resumed a stream: a GET carrying Last-Event-ID
RESUMING = {"server-sse-polling"}


class SetupError(Exception):
    """The framework or its Node cannot run as pinned; the message says what to do."""


@dataclass
class ScenarioResult:
    name: str
    returncode: int | None  # None: timed out
    checks: list[dict[str, Any]] = field(default_factory=list)
    output: str = ""
    problem: str | None = None  # None means passed

    @property
    def passed(self) -> bool:
        return self.problem is None


# ---- pure rules --------------------------------------------------------------------------


def checks_problem(returncode: int | None, checks: list[dict[str, Any]]) -> str | None:
    """Why a scenario run does not count as passed, or None if it does."""
    if returncode is None:
        return f"the CLI did not finish within {SCENARIO_TIMEOUT:g} s"
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if bad:
        return "; ".join(
            f"{c.get('status')} {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
            for c in bad
        )
    if returncode != 0:
        return f"the CLI exited with {returncode}"
    if not any(c.get("status") == "SUCCESS" for c in checks):
        return "the CLI reported no successful check"
    return None


def journal_problem(scenario: str, rpc: list[tuple[str | None, Any]]) -> str | None:
    """Why the mock's journal (JSON-RPC method and params, in order) does not show the
    scenario's request, or None if it does."""
    method, tool = SCENARIOS[scenario]
    for got_method, params in rpc:
        if got_method != method:
            continue
        if tool is None or (isinstance(params, dict) and params.get("name") == tool):
            return None
    wanted = f"{method} of {tool}" if tool else method
    return f"the mock never received {wanted} (it got: {[m for m, _ in rpc]})"


def resumption_problem(scenario: str, resuming_gets: int) -> str | None:
    """Why the journal does not show the stream resumption the scenario is about."""
    if scenario in RESUMING and resuming_gets == 0:
        return "the mock never received a GET with Last-Event-ID (no stream was resumed)"
    return None


def pin_problem(pinned: dict[str, str], installed: dict[str, str | None]) -> str | None:
    """A mismatch between package.json's exact pins and what node_modules holds."""
    for name, version in pinned.items():
        got = installed.get(name)
        if got is None:
            return f"{name} is not installed"
        if got != version:
            return f"{name} {got} is installed but package.json pins {version}"
    return None


def summary_lines(results: list[ScenarioResult]) -> list[str]:
    """The closing summary: each failure with its reason, then the counts."""
    lines = [f"FAILED {r.name}: {r.problem}" for r in results if not r.passed]
    failed = len(lines)
    lines.append(f"official conformance: {len(results) - failed} passed, {failed} failed")
    return lines


# ---- the installed framework -------------------------------------------------------------


def _package_json(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def installed_framework() -> tuple[Path, Path, str]:
    """(node binary, CLI entry script, "name@version" of each pin); raises SetupError
    unless node_modules holds exactly what package.json pins."""
    pinned = (_package_json(HERE) or {}).get("dependencies", {})
    installed = {}
    for name in pinned:
        meta = _package_json(NODE_MODULES / name)
        installed[name] = meta.get("version") if meta else None
    problem = pin_problem(pinned, installed)
    if problem:
        raise SetupError(f"{problem}; run: npm ci --prefix {HERE.relative_to(ROOT)}")
    node = NODE_MODULES / NODE_PACKAGE / "bin" / "node"
    if not os.access(node, os.X_OK):
        raise SetupError(
            f"{node} is missing: the `node` package's install script did not run "
            f"(it must be allowed: see allowScripts in package.json)"
        )
    meta = _package_json(NODE_MODULES / PACKAGE) or {}
    bin_field = meta.get("bin")
    entry = bin_field if isinstance(bin_field, str) else (bin_field or {}).get("conformance")
    if not entry:
        raise SetupError(f"{PACKAGE}'s package.json names no `conformance` command")
    versions = ", ".join(f"{name}@{version}" for name, version in pinned.items())
    return node, NODE_MODULES / PACKAGE / entry, versions


# ---- running -----------------------------------------------------------------------------


def _rpc_since(journal: Journal, start: int) -> list[tuple[str | None, Any]]:
    return [(e.method, e.params) for e in journal.entries(kind="rpc")[start:]]


def _resuming_gets(journal: Journal) -> int:
    return journal.count(
        kind="http", where=lambda e: e.http_method == "GET" and "last-event-id" in e.headers
    )


def _read_checks(output_dir: Path, old: set[Path]) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []
    for path in sorted(set(output_dir.rglob("checks.json")) - old):  # a kept dir has older runs
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, list):
            checks.extend(c for c in data if isinstance(c, dict))
    return checks


def run_scenario(
    node: Path, cli: Path, url: str, scenario: str, journal: Journal, output_dir: Path
) -> ScenarioResult:
    before = len(journal.entries(kind="rpc"))
    resumed_before = _resuming_gets(journal)
    output_dir.mkdir(parents=True, exist_ok=True)
    old = set(output_dir.rglob("checks.json"))
    env = dict(os.environ)
    # anything the CLI might spawn as `node` gets Node 22 too
    env["PATH"] = f"{node.parent}{os.pathsep}{env.get('PATH', '')}"
    argv = [str(node), str(cli), "server", "--url", url, "--scenario", scenario]
    argv += ["--output-dir", str(output_dir)]
    try:
        done = subprocess.run(
            argv,
            env=env,
            cwd=HERE,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SCENARIO_TIMEOUT,
        )
        returncode: int | None = done.returncode
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:  # run() has killed the child already
        returncode = None
        output = _text(exc.stdout) + _text(exc.stderr)
    try:
        checks = _read_checks(output_dir, old)
    except (OSError, ValueError) as exc:
        checks, output = [], output + f"\n(unreadable checks.json: {exc})"
    problem = (
        checks_problem(returncode, checks)
        or journal_problem(scenario, _rpc_since(journal, before))
        or resumption_problem(scenario, _resuming_gets(journal) - resumed_before)
    )
    return ScenarioResult(scenario, returncode, checks, output, problem)


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def run(
    scenarios: list[str],
    spec_file: Path,
    output_root: Path,
    verbose: bool = False,
    modes: tuple[str, ...] = ("sse",),
) -> list[ScenarioResult]:
    """Each scenario against a fresh mock per response mode ("sse", "json")."""
    node, cli, versions = installed_framework()
    spec = load_spec(spec_file)
    results = []
    for mode in modes:
        spec.response_mode = mode
        with HttpMock(spec) as mock:
            assert mock.url is not None and mock.url.startswith("http://127.0.0.1:"), mock.url
            print(f"official conformance: {versions} against {mock.url} ({spec_file.name}, {mode})")
            for scenario in scenarios:
                out = output_root / mode / scenario
                result = run_scenario(node, cli, mock.url, scenario, mock.journal, out)
                result.name = f"{scenario} [{mode}]"
                if verbose or not result.passed:
                    print(result.output.rstrip())
                print(f"{'PASS' if result.passed else 'FAIL'} {result.name}", flush=True)
                results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="run_conformance.py",
        description=(
            "Run the official MCP conformance framework (server mode) against the HTTP mock."
        ),
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(SCENARIOS),
        help="a scenario to run (repeatable); default: all of them",
    )
    parser.add_argument(
        "--response-mode",
        choices=("sse", "json", "both"),
        default="both",
        help="the mock's Streamable HTTP response mode (default: both, one after the other)",
    )
    parser.add_argument("--spec", type=Path, default=SPEC_FILE, help="the mock's spec file")
    parser.add_argument("--keep", type=Path, help="keep the framework's checks.json files here")
    parser.add_argument(
        "--verbose", action="store_true", help="print the CLI's output for every scenario"
    )
    args = parser.parse_args(argv)
    scenarios = args.scenario or list(SCENARIOS)
    modes = ("sse", "json") if args.response_mode == "both" else (args.response_mode,)
    try:
        if args.keep:
            results = run(scenarios, args.spec, args.keep.resolve(), args.verbose, modes)
        else:
            with tempfile.TemporaryDirectory(prefix="official-conformance-") as tmp:
                results = run(scenarios, args.spec, Path(tmp), args.verbose, modes)
    except SetupError as exc:
        print(f"official conformance: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(results)))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
