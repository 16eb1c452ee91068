"""The GitHub Action (action.yml): its shell steps run here as a runner runs them
(scripts/action_steps.py), against the reference host and a broken client: the job summary,
the outputs, the reports the upload step names, the job's status; the command line it
builds from its inputs; its inputs reach the shell only through the environment.

The whole suite goes through the same steps in tox's conformance-inprocess (the reference
host) and example-sdk-python (an example host held to its baseline); `packaging` runs its
install step on a built wheel."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "action_steps", REPOSITORY / "scripts" / "action_steps.py"
)
assert _spec is not None and _spec.loader is not None
action_steps = importlib.util.module_from_spec(_spec)
sys.modules["action_steps"] = action_steps  # dataclasses look their module up there
_spec.loader.exec_module(action_steps)

TWO_CASES = "-k 'test_adding_a_server_does_not_connect or test_listing_shows_no_secret'"


def run(tmp_path: Path, **inputs: str):
    given = {"install": "false", "python": sys.executable, **inputs}
    given = {name.replace("_", "-"): value for name, value in given.items()}
    return action_steps.run_action(given, workspace=tmp_path, echo=False)


def steps(result) -> dict[str, object]:
    return {step.name: step for step in result.steps}


def test_inputs_reach_the_shell_only_through_the_environment():
    action = action_steps.read_action()
    text = (REPOSITORY / "action.yml").read_text("utf-8")
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], f"{step['name']} pastes an expression into its script"
    for name in action["inputs"]:
        assert f"inputs.{name} }}}}" in text, f"input {name} is never used"
    assert "profiles" not in action["inputs"]  # claimed by the host's describe(), see the file


@pytest.mark.timeout(300)
def test_against_the_reference_host_the_job_passes_with_its_summary_and_reports(tmp_path):
    result = run(tmp_path, args=TWO_CASES + " -p no:randomly")
    done = steps(result)
    assert result.status == 0, result
    assert result.outputs["run"]["exit-status"] == "0"
    assert result.summary.startswith("## MCP host conformance: ` mcp-reference-host ")
    assert "**PASSED**" in result.summary
    upload = done["Upload the reports"]
    assert upload.uses.startswith("actions/upload-artifact@")
    paths = upload.with_["path"].splitlines()
    assert [Path(p).name for p in paths] == [
        "report.json",
        "report.html",
        "summary.md",
        "junit.xml",
    ]
    assert upload.missing == []
    assert all(Path(p).is_relative_to(tmp_path / "mcp-host-conformance") for p in paths)


@pytest.mark.timeout(300)
def test_a_failing_host_fails_the_job_after_its_summary_and_upload(tmp_path):
    result = run(
        tmp_path,
        client="connects-on-add",
        args="-k test_adding_a_server_does_not_connect -p no:randomly",
        report_html="out/page.html",
    )
    done = steps(result)
    assert result.status == 1
    assert done["Run the suite"].status == 0  # the steps after it run
    assert done["Job summary"].ran and done["Upload the reports"].ran
    assert done["Verdict"].status == 1
    assert result.outputs["run"]["exit-status"] == "1"
    assert "**FAILED**: 1 MUST rule broken" in result.summary
    assert "- **CFG-1** (MUST) Adding a server to the configuration does not connect" in (
        result.summary
    )
    assert done["Upload the reports"].missing == []
    assert (tmp_path / "out" / "page.html").exists()


def test_extra_arguments_are_split_as_words_and_never_evaluated(tmp_path):
    result = run(tmp_path, args="-k 'no such case' $(touch pwned) `touch pwned2`")
    assert result.outputs["run"]["exit-status"] == "5"  # no case selected: a usage error
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    assert "No summary was written (exit status 5)" in result.summary
    assert result.status == 5


FAKE_PYTHON = """#!/bin/bash
# logs its arguments, one per line, a blank line after each call; runs the word splitting
for word in "$@"; do printf '%s\\n' "$word"; done >> "{log}"
echo >> "{log}"
if [ "$1" = -c ] && [[ "$2" == *shlex* ]]; then exec "{python}" "$@"; fi
exit 0
"""


def fake_python(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "calls.log"
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON.format(log=log, python=sys.executable))
    fake.chmod(0o755)
    return fake, log


def calls(log: Path) -> list[list[str]]:
    return [block.splitlines() for block in log.read_text().split("\n\n") if block.strip()]


def test_the_command_line_the_inputs_make(tmp_path):
    fake, log = fake_python(tmp_path)
    result = run(
        tmp_path,
        python=str(fake),
        install="true",
        suite="mcp-host-conformance==9.9",
        client_cmd="node driver.js --flag 'two words'",
        expected_failures="known gaps.txt",
        strict="true",
        timeout_scale="2",
        args="-x -k 'a or b'",
        junit_xml="",
        working_directory=".",
    )
    install, _split, command = calls(log)
    assert install == [
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--quiet",
        "mcp-host-conformance==9.9",
    ]
    assert command[:2] == ["-c", command[1]] and "harness.cli import main" in command[1]
    reports = tmp_path / "mcp-host-conformance"
    assert command[2:] == [
        "run",
        "--client-cmd",
        "node driver.js --flag 'two words'",
        "--expected-failures",
        "known gaps.txt",
        "--strict",
        "--timeout-scale",
        "2",
        "--report-json",
        str(reports / "report.json"),
        "--report-html",
        str(reports / "report.html"),
        "--report-markdown",
        str(reports / "summary.md"),
        "--",
        "-x",
        "-k",
        "a or b",
    ]
    assert result.status == 0  # the fake wrote no report: the summary says so
    assert "No summary was written (exit status 0)" in result.summary


def test_by_default_it_installs_the_suite_from_its_own_checkout(tmp_path):
    fake, log = fake_python(tmp_path)
    run(tmp_path, python=str(fake), install="true")
    install = calls(log)[0]
    assert install[:3] == ["-m", "pip", "install"]
    assert install[-1] == str(REPOSITORY)  # $GITHUB_ACTION_PATH: the action's checkout


def test_an_expression_the_runner_does_not_know_is_an_error(tmp_path):
    action = tmp_path / "action.yml"
    action.write_text(
        (REPOSITORY / "action.yml")
        .read_text("utf-8")
        .replace("${{ inputs.python }}", "${{ env.PYTHON }}", 1)
    )
    with pytest.raises(action_steps.ActionError, match=re.escape("${{ env.PYTHON }}")):
        action_steps.run_action({}, workspace=tmp_path, action_path=action, echo=False)


def test_outputs_are_read_as_github_reads_them(tmp_path):
    output = tmp_path / "output"
    output.write_text("a=1\nlines<<END\nx=y\n\nz\nEND\nb=two=2\n")
    assert action_steps.read_outputs(output) == {"a": "1", "lines": "x=y\n\nz", "b": "two=2"}
    output.write_text("lines<<END\nnever ends\n")
    with pytest.raises(action_steps.ActionError, match="never comes"):
        action_steps.read_outputs(output)


def test_an_undeclared_input_is_an_error(tmp_path):
    with pytest.raises(action_steps.ActionError, match="no such input: profiles"):
        action_steps.run_action({"profiles": "oauth"}, workspace=tmp_path, echo=False)


def test_each_step_gets_its_own_output_and_summary_files(tmp_path):
    fake, _ = fake_python(tmp_path)
    action = tmp_path / "action.yml"
    text = (REPOSITORY / "action.yml").read_text("utf-8")
    action.write_text(
        text.replace(
            'exit "${STATUS:-3}"',
            'echo "late=$GITHUB_ACTION_PATH" >> "$GITHUB_OUTPUT"; '
            'echo tail >> "$GITHUB_STEP_SUMMARY"',
        ).replace("    - name: Verdict\n", "    - name: Verdict\n      id: verdict\n")
    )
    result = action_steps.run_action(
        {"python": str(fake), "install": "false", "junit-xml": ""},
        workspace=tmp_path,
        action_path=action,
        echo=False,
    )
    assert set(result.outputs["run"]) == {"exit-status", "reports"}
    assert result.outputs["verdict"] == {"late": str(tmp_path)}
    assert result.summary.endswith("tail\n")
