"""The installed import names cannot collide with a host project's own packages.

Strategy: a host author runs the suite from their own project, which may well have packages
called `harness`, `mocks` or `conformance`. Make such a project, whose packages are
poisoned (importing anything from them that ours would offer fails loudly), put it first on
sys.path, and run the suite from it both ways a user does: `mcp-host-conformance run` and
`pytest --pyargs`. Their own test, which imports their own `mocks`, runs beside ours.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ONE_CASE = "test_adding_a_server_does_not_connect"

POISON = """
MINE = "{name}"
def __getattr__(attr):
    raise ImportError("the project's own {name} package was imported for " + attr)
"""

OWN_TEST = """
import mocks

def test_my_own_mocks_are_mine():
    assert mocks.MINE == "mocks"
"""


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    for name in ("harness", "mocks", "conformance", "reference_client", "zoo"):
        package = project / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(POISON.format(name=name))
    (project / "tests").mkdir()
    (project / "tests" / "test_mine.py").write_text(OWN_TEST)
    return project


def _env(project: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(project), "PYTHONDONTWRITEBYTECODE": "1"}


def test_the_run_command_works_from_a_project_with_same_named_packages(tmp_path):
    project = _project(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_host_conformance.harness.cli",
            "run",
            "--",
            "-k",
            ONE_CASE,
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "1 passed" in output, output
    assert "project's own" not in output, output


def test_pytest_runs_our_cases_beside_the_projects_own_tests(tmp_path):
    project = _project(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "mcp_host_conformance.harness.plugin.hooks",
            "tests",
            "--pyargs",
            "mcp_host_conformance.conformance",
            "-k",
            f"{ONE_CASE} or test_my_own_mocks_are_mine",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "2 passed" in output, output


def test_the_mocks_command_runs_under_its_new_name(tmp_path):
    project = _project(tmp_path)
    for argv in (
        [sys.executable, "-m", "mcp_host_conformance.mocks", "list"],
        [str(Path(sys.executable).with_name("mcp-mocks")), "list"],
    ):
        done = subprocess.run(
            argv, cwd=project, env=_env(project), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "healthy" in done.stdout
