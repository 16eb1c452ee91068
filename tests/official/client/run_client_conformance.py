#!/usr/bin/env python3
"""Run the official MCP conformance framework's client scenarios against the reference host.

Strategy: the framework (`@modelcontextprotocol/conformance`, pinned in package.json beside
this file with the Node 22 it needs, installed by `npm ci --prefix tests/official/client`)
plays the servers and checks what a client does; the client it runs is the reference host
used as a person would (`reference_host_client.py`: `mcp add` of the scenario's URL in a
scratch HOME, then `chat` with the mock model's autopilot, approving every call). Every
client scenario the pinned framework lists is run, one at a time (sse-retry measures the
client's timing, so nothing else runs beside it), and held to a baseline,
`expected-failures.yml`: the scenarios this host fails on purpose, each with its reason
(the seeds leave out elicitation and OAuth; the requirements forbid starting an OAuth flow,
CRED-6). The baseline is in the framework's own format, so
`conformance client --suite all --expected-failures expected-failures.yml` reads it too.

A scenario passes when its checks hold at least one SUCCESS and no FAILURE or WARNING, and
the framework did not report the client itself as failed. Then: a failure not in the
baseline fails the run, so does a baseline entry that now passes (stale) or names no
scenario of the pinned framework; `initialize`, `tools_call` and `sse-retry` may never be
in the baseline.

By hand, from the repository root:
    npm ci --prefix tests/official/client --no-audit --no-fund
    python tests/official/client/run_client_conformance.py [--scenario NAME]... [--keep DIR]
        [--verbose]
Exit code: 0 the baseline holds, 1 it does not, 2 the framework is not installed as pinned
or the baseline is malformed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.oauth.official_client import checks_problem, run_cli

HERE = Path(__file__).resolve().parent
PACKAGE = "@modelcontextprotocol/conformance"
NODE_PACKAGE = "node"
NODE_MODULES = HERE / "node_modules"
BASELINE = HERE / "expected-failures.yml"
CLIENT = HERE / "reference_host_client.py"
REQUIRED = ("initialize", "tools_call", "sse-retry")
SCENARIO_TIMEOUT_MS = 60_000  # the framework's bound for one client run
_ENTRY = re.compile(r"^\s+-\s+(?P<name>[^\s#]+)\s*(?:#\s*(?P<reason>.*\S))?\s*$")


class SetupError(Exception):
    """The framework cannot run as pinned, or the baseline is malformed."""


# ---- pure rules ------------------------------------------------------------------------------


def parse_baseline(text: str) -> dict[str, str]:
    """scenario -> reason, from the `client:` list of an expected-failures YAML file whose
    entries each carry their reason as a comment."""
    found: dict[str, str] = {}
    section: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not line[0].isspace():
            section = stripped.split("#")[0].strip().rstrip(":")
            continue
        if section != "client":
            continue
        entry = _ENTRY.match(line)
        if entry is None:
            raise SetupError(f"line {number}: not a `  - scenario  # reason` entry")
        name, reason = entry.group("name"), entry.group("reason")
        if not reason:
            raise SetupError(f"line {number}: {name} has no reason (add `# why`)")
        if name in found:
            raise SetupError(f"line {number}: {name} is listed twice")
        found[name] = reason
    return found


def baseline_problems(baseline: dict[str, str], scenarios: list[str]) -> list[str]:
    problems = [
        f"{name} is required to pass and may not be in the baseline"
        for name in REQUIRED
        if name in baseline
    ]
    problems += [
        f"{name} is in the baseline but the pinned framework has no such client scenario"
        for name in baseline
        if name not in scenarios
    ]
    problems += [
        f"the pinned framework has no {name} scenario" for name in REQUIRED if name not in scenarios
    ]
    return problems


@dataclass
class Verdict:
    scenario: str
    problem: str | None  # None: passed
    expected: str | None  # the baseline's reason, if listed

    @property
    def ok(self) -> bool:
        return (self.problem is None) == (self.expected is None)

    def line(self) -> str:
        if self.problem is None and self.expected is None:
            return f"passed    {self.scenario}"
        if self.problem is None:
            return f"STALE     {self.scenario}: passes, but the baseline expects a failure"
        if self.expected is not None:
            return f"expected  {self.scenario}: {self.expected}"
        return f"FAILED    {self.scenario}: {self.problem}"


def parse_scenario_list(output: str) -> list[str]:
    """The names in `conformance list --client` output ("  - NAME [versions]")."""
    names = []
    for line in output.splitlines():
        match = re.match(r"^\s+-\s+(\S+)", line)
        if match:
            names.append(match.group(1))
    return names


def pin_problem(pinned: dict[str, str], installed: dict[str, str]) -> str | None:
    for name, version in pinned.items():
        if name not in installed:
            return f"{name} is not installed: run npm ci --prefix {HERE}"
        if installed[name] != version:
            return f"package.json pins {name} {version}, {installed[name]} is installed"
    return None


# ---- running ---------------------------------------------------------------------------------


def _installed() -> dict[str, str]:
    found = {}
    for name in (PACKAGE, NODE_PACKAGE):
        try:
            found[name] = json.loads((NODE_MODULES / name / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            pass
    return found


def framework() -> list[str]:
    pinned = json.loads((HERE / "package.json").read_text())["dependencies"]
    problem = pin_problem(pinned, _installed())
    if problem:
        raise SetupError(problem)
    node = NODE_MODULES / NODE_PACKAGE / "bin" / "node"
    return [str(node), str(NODE_MODULES / PACKAGE / "dist" / "index.js")]


def list_scenarios(cli: list[str]) -> list[str]:
    done = subprocess.run([*cli, "list", "--client"], capture_output=True, text=True, timeout=60)
    names = parse_scenario_list(done.stdout)
    if done.returncode != 0 or not names:
        raise SetupError(f"`conformance list --client` failed: {done.stderr.strip()[:300]}")
    return names


def run_scenario(
    cli: list[str], scenario: str, out_dir: Path, verbose: bool, command: str | None = None
) -> str | None:
    command = command or shlex.join([sys.executable, str(CLIENT)])
    args = [
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
        "--timeout",
        str(SCENARIO_TIMEOUT_MS),
        "--output-dir",
        str(out_dir),
    ]
    # one Node process runs the framework for every scenario (harness/oauth/official_client.py: a
    # start of its CLI is ~0.8 s of CPU); the client command runs here, as it did
    returncode, output = run_cli(
        cli, args, dict(os.environ), Path.cwd(), SCENARIO_TIMEOUT_MS / 1000 + 60
    )
    if verbose:
        print(output)
    checks: list[dict[str, Any]] = []
    for path in out_dir.rglob("checks.json"):
        try:
            checks += json.loads(path.read_text())
        except (OSError, ValueError):
            return f"unreadable {path}"
    return checks_problem(returncode, checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", default=[], help="run only these")
    parser.add_argument("--keep", type=Path, help="keep each scenario's results under DIR")
    parser.add_argument("--verbose", action="store_true", help="print the framework's output")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument(
        "--client-cmd",
        metavar="CMD",
        help="another client command (the framework appends the URL); default: the reference host",
    )
    args = parser.parse_args(argv)
    try:
        cli = framework()
        scenarios = list_scenarios(cli)
        baseline = parse_baseline(args.baseline.read_text())
    except (SetupError, OSError) as exc:
        print(f"official client conformance: cannot run: {exc}")
        return 2
    problems = baseline_problems(baseline, scenarios)
    for problem in problems:
        print(f"BASELINE  {problem}")
    chosen = args.scenario or scenarios
    unknown = [name for name in chosen if name not in scenarios]
    if unknown:
        print(f"official client conformance: no such scenario: {', '.join(unknown)}")
        return 2
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="official-client-") as scratch:
        root = args.keep or Path(scratch)
        for index, scenario in enumerate(chosen):
            out_dir = root / f"{index:02d}"
            out_dir.mkdir(parents=True, exist_ok=True)
            problem = run_scenario(cli, scenario, out_dir, args.verbose, args.client_cmd)
            verdict = Verdict(scenario, problem, baseline.get(scenario))
            verdicts.append(verdict)
            print(verdict.line(), flush=True)
    failed = [v for v in verdicts if not v.ok]
    passed = sum(1 for v in verdicts if v.problem is None)
    expected = sum(1 for v in verdicts if v.ok and v.problem is not None)
    print(
        f"\nofficial client conformance: {passed} passed, {expected} expected failures "
        f"(baseline), {len(failed)} not as the baseline says, {len(problems)} baseline problems"
    )
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
