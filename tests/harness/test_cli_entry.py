"""The commands as a user starts them: `--version`, `python -m mcp_host_conformance` (the same
command, importing nothing from the directory it starts in), and a pytest usage error after
`--` (status 5, a usage error, never 4: the client's status)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_host_conformance import __version__
from mcp_host_conformance.harness import cli

BOUND = 120.0
BIN = Path(sys.executable).parent


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MCP_HOST_"))}
    env.pop("PYTHONPATH", None)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BOUND)


def test_every_command_says_its_version(tmp_path):
    for argv, said in (
        ([str(BIN / "mcp-host-conformance"), "--version"], "mcp-host-conformance"),
        ([sys.executable, "-m", "mcp_host_conformance", "--version"], "mcp-host-conformance"),
        ([str(BIN / "mcp-mocks"), "--version"], "mcp-mocks (mcp-host-conformance)"),
    ):
        done = _run(argv, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"{said} {__version__}\n", argv


def test_python_m_is_the_same_command(tmp_path):
    installed = _run([str(BIN / "mcp-host-conformance"), "--help"], tmp_path)
    module = _run([sys.executable, "-m", "mcp_host_conformance", "--help"], tmp_path)
    assert installed.returncode == module.returncode == 0
    assert module.stdout == installed.stdout and "exit status:" in module.stdout


def test_neither_imports_an_adapter_from_the_directory_it_starts_in(tmp_path):
    """`python -m` puts the current directory on the import path, the installed command does
    not: both import a client from `--client-path` only, so a run does not depend on where it
    starts."""
    (tmp_path / "adapter_here.py").write_text("VERSION = 1\n")
    for entry in (
        [str(BIN / "mcp-host-conformance")],
        [sys.executable, "-m", "mcp_host_conformance"],
    ):
        alone = _run([*entry, "run", "--client", "adapter_here:Adapter"], tmp_path)
        assert alone.returncode == cli.Status.CLIENT_UNUSABLE, alone.stdout + alone.stderr
        assert "cannot import module 'adapter_here'" in alone.stdout + alone.stderr
        pathed = _run(
            [*entry, "run", "--client", "adapter_here:Adapter", "--client-path", "."], tmp_path
        )
        assert pathed.returncode == cli.Status.CLIENT_UNUSABLE, pathed.stdout + pathed.stderr
        assert "has no attribute 'Adapter'" in pathed.stdout + pathed.stderr


def test_a_client_path_that_is_no_folder_is_a_usage_error(tmp_path):
    done = _run([str(BIN / "mcp-host-conformance"), "run", "--client-path", "nowhere"], tmp_path)
    assert done.returncode == cli.Status.USAGE_ERROR
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--client-path: 'nowhere': not a folder" in lines[0], lines


def test_a_pytest_usage_error_after_the_separator_is_status_5(tmp_path):
    done = _run([str(BIN / "mcp-host-conformance"), "run", "--", "--no-such-option"], tmp_path)
    assert done.returncode == cli.Status.USAGE_ERROR == 5, done.stdout + done.stderr
    assert "unrecognized arguments: --no-such-option" in done.stderr


def test_explore_gives_its_options_to_the_plugin(tmp_path):
    """`explore` speaks to the plugin through its prefixed options (`--mcphc-explore-seed`...)."""
    done = _run(
        [
            str(BIN / "mcp-host-conformance"),
            *("explore", "--network", "host", "--scenarios", "1", "--seed", "3"),
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "explorer: seed: 3" in done.stdout and "explorer: scenarios: 1" in done.stdout


@pytest.mark.parametrize(
    "make, said", [(None, "no scenario file "), ("dir", "no scenario file (*.json) in ")]
)
def test_a_replay_of_nothing_is_a_usage_error(tmp_path, make, said):
    """`--replay` takes a scenario file or a folder holding some: anything else is one line."""
    target = tmp_path / "scenarios"
    if make == "dir":
        target.mkdir()
    done = _run([str(BIN / "mcp-host-conformance"), "explore", "--replay", str(target)], tmp_path)
    assert done.returncode == cli.Status.USAGE_ERROR
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and said in lines[0], lines
