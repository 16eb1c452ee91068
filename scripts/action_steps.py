#!/usr/bin/env python3
"""Run the steps of this repository's GitHub Action (action.yml) here, as a runner would.

Usage:
    python scripts/action_steps.py [--input NAME=VALUE ...] [--workspace DIR] [--action FILE]

Each `run:` step of the composite action is run with `bash --noprofile --norc -eo pipefail`
(GitHub's `shell: bash`) in its working directory, its `env:` and the expressions the action
uses filled in: `${{ inputs.NAME }}` (the action's defaults, then each --input),
`${{ github.action_path }}` and `${{ steps.ID.outputs.NAME }}` (read back from the
step's $GITHUB_OUTPUT, `NAME=VALUE` and `NAME<<DELIMITER` lines alike). $GITHUB_STEP_SUMMARY,
$GITHUB_OUTPUT and $GITHUB_ACTION_PATH are set as a runner sets them. A step's `if:` may be
`always()`, `success()` or `failure()`. A `uses:` step is not run: its `with:` is filled in
and printed, and for actions/upload-artifact every path it would upload is checked to
exist. Any other expression is an error, so the action cannot use what this does not know.

It prints each step, then the job summary the steps wrote, and exits with the first failing
step's status (0 when all passed), as the job would end. tests/test_action.py runs it
against the reference host and a broken client; tox's conformance-inprocess and
example-sdk-python run the whole suite through it; `packaging` installs a built wheel with
its install step.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPOSITORY = Path(__file__).resolve().parent.parent
ACTION = REPOSITORY / "action.yml"
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_CONDITIONS = {"always()", "success()", "failure()"}


class ActionError(Exception):
    """The action uses something a runner here cannot do as GitHub would."""


@dataclass
class StepRun:
    name: str
    ran: bool
    status: int = 0
    uses: str = ""
    with_: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # upload paths that do not exist


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, dict[str, str]]  # step id -> its outputs
    summary: str
    status: int


def read_action(path: Path = ACTION) -> dict[str, Any]:
    action = yaml.safe_load(path.read_text("utf-8"))
    if not isinstance(action, dict) or action.get("runs", {}).get("using") != "composite":
        raise ActionError(f"{path}: not a composite action")
    return action


def inputs_of(action: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    """The defaults, then what was given; an input the action does not declare is an error."""
    declared = action.get("inputs") or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ActionError(f"no such input: {', '.join(unknown)} (declared: {', '.join(declared)})")
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    values.update(given)
    return values


def fill(text: str, context: dict[str, Any]) -> str:
    """`text` with every `${{ ... }}` replaced from `context` (inputs, github, steps)."""

    def value(match: re.Match[str]) -> str:
        words = match.group(1).split(".")
        found: Any = context
        for word in words:
            if not isinstance(found, dict) or word not in found:
                raise ActionError(f"unknown expression here: {match.group(0)}")
            found = found[word]
        return str(found)

    return _EXPRESSION.sub(value, text)


def read_outputs(path: Path) -> dict[str, str]:
    """A step's outputs as GitHub reads $GITHUB_OUTPUT: NAME=VALUE, or NAME<<END, lines, END."""
    outputs: dict[str, str] = {}
    lines = iter(path.read_text("utf-8").splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, end = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == end:
                    break
                body.append(inner)
            else:
                raise ActionError(f"$GITHUB_OUTPUT: {name}'s delimiter {end!r} never comes")
            outputs[name] = "\n".join(body)
        elif "=" in line:
            name, text = line.split("=", 1)
            outputs[name] = text
        elif line.strip():
            raise ActionError(f"$GITHUB_OUTPUT: not an output line: {line!r}")
    return outputs


def _should_run(condition: object, failed: bool) -> bool:
    text = "success()" if condition is None else str(condition).strip()
    text = _EXPRESSION.sub(lambda m: m.group(1), text)
    if text not in _CONDITIONS:
        raise ActionError(f"unknown if: {condition!r}")
    return text == "always()" or (text == "failure()") == failed


def run_action(
    given: dict[str, str],
    *,
    workspace: Path,
    action_path: Path = ACTION,
    env: dict[str, str] | None = None,
    echo: bool = True,
) -> ActionRun:
    """Run the action's steps in `workspace` with the inputs `given`; what each did."""
    action = read_action(action_path)
    context: dict[str, Any] = {
        "inputs": inputs_of(action, given),
        "github": {"action_path": str(action_path.parent)},
        "steps": {},
    }
    base_env = dict(os.environ if env is None else env)
    base_env["GITHUB_ACTION_PATH"] = str(action_path.parent)
    runs: list[StepRun] = []
    summary = ""
    status = 0
    with tempfile.TemporaryDirectory(prefix="action-steps-") as scratch:
        for index, step in enumerate(action["runs"]["steps"]):
            name = str(step.get("name") or step.get("id") or f"step {index + 1}")
            if not _should_run(step.get("if"), failed=status != 0):
                runs.append(StepRun(name, ran=False))
                continue
            if "uses" in step:
                with_ = {k: fill(str(v), context) for k, v in (step.get("with") or {}).items()}
                done = StepRun(name, ran=True, uses=str(step["uses"]), with_=with_)
                if str(step["uses"]).startswith("actions/upload-artifact@"):
                    paths = [p for p in with_.get("path", "").splitlines() if p.strip()]
                    done.missing = [p for p in paths if not (workspace / p).exists()]
                runs.append(done)
                if echo:
                    print(f"== {name}: {step['uses']} (not run here) with {with_}", flush=True)
                continue
            if step.get("shell") != "bash":
                raise ActionError(f"{name}: only `shell: bash` steps are run here")
            output = Path(scratch, f"output-{index}")
            step_summary = Path(scratch, f"summary-{index}")
            output.touch()
            step_summary.touch()
            script = Path(scratch, f"step-{index}.sh")
            script.write_text(fill(str(step["run"]), context), "utf-8")
            step_env = {
                **base_env,
                **{k: fill(str(v), context) for k, v in (step.get("env") or {}).items()},
                "GITHUB_OUTPUT": str(output),
                "GITHUB_STEP_SUMMARY": str(step_summary),
            }
            where = workspace / fill(str(step.get("working-directory", ".")), context)
            if echo:
                print(f"== {name}", flush=True)
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=where,
                env=step_env,
                check=False,
            )
            runs.append(StepRun(name, ran=True, status=done.returncode))
            if "id" in step:
                context["steps"][str(step["id"])] = {"outputs": read_outputs(output)}
            summary += step_summary.read_text("utf-8")
            if done.returncode and not status:
                status = done.returncode
    outputs = {sid: dict(found["outputs"]) for sid, found in context["steps"].items()}
    return ActionRun(runs, outputs, summary, status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--workspace", type=Path, default=Path.cwd())
    parser.add_argument("--action", type=Path, default=ACTION)
    options = parser.parse_args(argv)
    given = {}
    for pair in options.input:
        name, sep, value = pair.partition("=")
        if not sep:
            parser.error(f"--input {pair!r}: NAME=VALUE")
        given[name] = value
    try:
        result = run_action(given, workspace=options.workspace, action_path=options.action)
    except ActionError as exc:
        print(f"action_steps: {exc}", file=sys.stderr)
        return 2
    print("== the job summary the steps wrote:")
    print(result.summary)
    for step in result.steps:
        if step.missing:
            print(f"action_steps: {step.name} would not find {', '.join(step.missing)}")
            return result.status or 1
    return result.status


if __name__ == "__main__":
    raise SystemExit(main())
