"""The suite installed beside a host project: the project's own pytest sessions are what they
would be without it, and `mcp-host-conformance run` works from the project's root.

Strategy: a small host project is made in a temporary folder with everything that once broke:
its own tests in a folder named `conformance`, a `requirements` marker of its own, a conftest
defining `--run-slow` and fixtures named `host` and `model`, `addopts = "--cov=myhost"`
(pytest-cov is installed here), its package under `src/` (on its own `pythonpath`) with an
adapter only `--client-path src` makes importable to a run, and its baseline in a subfolder.
The project's own session in this environment (every installed plugin autoloaded, the suite
among the installed packages) is compared, test by test, with the same session where no
plugin of the environment loads but pytest-cov: what the project sees where the suite is not
installed. Every run is a process of its own, started from the project's root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BOUND = 300.0
ONE_CASE = "test_adding_a_server_does_not_connect"
RESTARTING_CASE = "test_reopened_session_replays_call_and_paired_output"  # a restarted host

PYPROJECT = """
[project]
name = "myhost"
version = "1.0"

[tool.pytest.ini_options]
addopts = "--cov=myhost --cov-report= -p no:randomly -p no:cacheprovider --strict-markers"
pythonpath = ["src"]
markers = ["requirements(*refs): the clauses of our own specification a test checks"]
"""

ADAPTER = """
import dataclasses

from mcp_host_conformance.reference_client.adapter import ReferenceAdapter


class Adapter(ReferenceAdapter):
    # the reference host, under this project's name: the run must have imported it from src/
    def describe(self):
        return dataclasses.replace(super().describe(), name="myhost")
"""

BASE = {
    "pyproject.toml": PYPROJECT,
    "src/myhost/__init__.py": 'NAME = "myhost"\n',
    "src/myhost/conformance_adapter.py": ADAPTER,
    "tests/test_unit.py": "import myhost\n\ndef test_our_package():\n    assert myhost.NAME\n",
    # a deselected case of the run: neither stale nor unknown
    "ci/expected-failures.txt": "test_approval::test_anything_but_yes_denies\n",
}

# What once broke a project's own session, one piece each (a project may have them all).
PIECES: dict[str, dict[str, str]] = {
    "conformance-folder": {
        "conformance/__init__.py": "",
        "conformance/test_spec.py": """
            def test_our_own_conformance_test():
                assert True
        """,
    },
    "requirements-marker": {
        "tests/test_marked.py": """
            import pytest

            @pytest.mark.requirements("SPEC-4.2")
            def test_a_clause_of_our_spec():
                assert True
        """,
    },
    "run-slow-option": {
        "conftest.py": """
            def pytest_addoption(parser):
                parser.addoption("--run-slow", action="store_true", help="our slow tests")
        """,
        "tests/test_option.py": """
            def test_our_option(request):
                assert request.config.getoption("--run-slow") is False
        """,
    },
    "own-fixtures": {
        "tests/conftest.py": """
            import pytest

            @pytest.fixture
            def host():
                return "our host"

            @pytest.fixture
            def model():
                return "our model"
        """,
        "tests/test_fixtures.py": """
            import pytest

            def test_ours(host, model):
                assert (host, model) == ("our host", "our model")

            @pytest.mark.parametrize("name", ["secrets", "case", "home", "http_mock", "timeouts"])
            def test_no_fixture_of_the_suite(request, name):
                with pytest.raises(pytest.FixtureLookupError):
                    request.getfixturevalue(name)
        """,
    },
}


def _project(tmp_path: Path, pieces: list[str]) -> Path:
    root = tmp_path / "myhost"
    files = dict(BASE)
    for piece in pieces:
        files.update(PIECES[piece])
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def _env(**extra: str) -> dict[str, str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "MCP_HOST_", "COV_", "COVERAGE_")) and k != "PYTHONPATH"
    }
    return {**clean, "PYTHONDONTWRITEBYTECODE": "1", **extra}


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BOUND, check=False
    )


def _outcomes(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The session's verdict per test (pytest's -rA lines) and its final count."""
    lines = done.stdout.splitlines()
    verdicts = sorted(
        line
        for line in lines
        if line.split(" ", 1)[0] in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
    )
    counts = [line.strip("= ").rsplit(" in ", 1)[0] for line in lines if line.startswith("=")]
    return [*verdicts, counts[-1] if counts else f"no summary (exit {done.returncode})"]


@pytest.mark.parametrize("pieces", [[p] for p in PIECES] + [list(PIECES)], ids=[*PIECES, "all"])
def test_the_projects_own_session_is_unchanged_by_the_suite_installed(
    tmp_path: Path, pieces: list[str]
) -> None:
    project = _project(tmp_path, pieces)
    pytest_cmd = [sys.executable, "-m", "pytest", "-rA"]
    beside = _run(pytest_cmd, project, _env())
    alone = _run(
        [*pytest_cmd, "-p", "pytest_cov.plugin"], project, _env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    )
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr[-2000:]
    assert _outcomes(beside) == _outcomes(alone), beside.stdout[-3000:] + beside.stderr[-2000:]
    assert beside.returncode == 0


@pytest.mark.parametrize("shown", ["--markers", "--fixtures", "--help"])
def test_the_project_sees_no_marker_fixture_or_option_of_the_suite(
    tmp_path: Path, shown: str
) -> None:
    project = _project(tmp_path, list(PIECES))
    done = _run([sys.executable, "-m", "pytest", shown], project, _env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for ours in ("mcphc", "mcp_host_conformance", "MCP host conformance", "mcp-host-conformance"):
        assert ours not in done.stdout, ours


def test_run_works_from_the_projects_root(tmp_path: Path) -> None:
    """The project's pytest configuration (`--cov=myhost`, a conftest's `--run-slow`, its
    `conformance/` folder), $PYTEST_ADDOPTS of its CI, the place of its baseline: none of
    them reaches the run; the adapter is imported from `--client-path src`, in the run and in
    the host it restarts."""
    project = _project(tmp_path, list(PIECES))
    command = Path(sys.executable).with_name("mcp-host-conformance")
    done = _run(
        [
            str(command),
            "run",
            "--client",
            "myhost.conformance_adapter:Adapter",
            "--client-path",
            "src",
            "--expected-failures",
            "ci/expected-failures.txt",
            "--report-json",
            "report.json",
            "--serial",
            "--",
            "-k",
            f"{ONE_CASE} or {RESTARTING_CASE}",
        ],
        project,
        _env(PYTEST_ADDOPTS="--cov=myhost -p no:randomly"),
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    report = json.loads((project / "report.json").read_text())
    assert report["client"]["name"] == "myhost"
    assert sorted(c["id"] for c in report["cases"]) == [
        f"test_configuration::{ONE_CASE}",
        f"test_sessions::{RESTARTING_CASE}",
    ]
    assert all(c["outcome"] == "passed" for c in report["cases"]), report["cases"]
    assert "test_spec" not in output and "test_unit" not in output  # not the project's tests
    assert not (project / ".pytest_cache").exists(), "the run writes nothing of pytest's there"


def test_requirements_works_from_the_projects_root(tmp_path: Path) -> None:
    project = _project(tmp_path, list(PIECES))
    done = _run(
        [sys.executable, "-m", "mcp_host_conformance", "requirements", "--json"],
        project,
        _env(PYTEST_ADDOPTS="--cov=myhost"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    listing = json.loads(done.stdout)["requirements"]
    by_id = {entry["id"]: entry for entry in listing}
    assert f"test_configuration::{ONE_CASE}" in by_id["CFG-1"]["cases"]
    assert not any("test_spec" in c for entry in listing for c in entry["cases"])
