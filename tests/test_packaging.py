"""The package as it installs: the repository's top-level folders mapped under
`mcp_host_conformance` by pyproject.toml (no symbolic link anywhere), the same mapping in a
checkout that nothing installed, and a wheel that holds every module where its import name
says.

Strategy: the wheel is built from a copy of the tracked files (what a fresh clone has) by
the setuptools of this environment (its PEP 517 backend, as pip calls it), and its file
list is compared with the repository's: each part's Python files, its data files, py.typed,
and nothing of the project's own tests but the zoo; its metadata with pyproject.toml's.
In tox's `packaging` environment ($MCP_BUILT_DIST names its `python -m build` output: an
sdist and the wheel built from that sdist, both past `twine check --strict`) the same checks
read that wheel instead, and it is installed into a clean virtualenv by the GitHub Action's
own install step, then the suite runs from it through the action's steps.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from configparser import ConfigParser
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from mcp_host_conformance import PARTS

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = "mcp_host_conformance"


def _tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=REPOSITORY, capture_output=True, text=True, check=True
    )
    return listed.stdout.splitlines()


def test_no_symbolic_link_is_tracked() -> None:
    links = [line.split("\t", 1)[1] for line in _tracked() if line.startswith("120000 ")]
    assert links == [], f"symbolic links in the repository: {links}"


def test_the_checkout_mapping_is_the_one_pyproject_declares() -> None:
    declared = tomllib.loads((REPOSITORY / "pyproject.toml").read_text("utf-8"))["tool"][
        "setuptools"
    ]["package-dir"]
    expected = {f"{PACKAGE}.{part}": folder for part, folder in PARTS.items()}
    assert declared == {PACKAGE: PACKAGE, **expected}


def test_a_checkout_imports_with_nothing_installed() -> None:
    # `python -S`: no site-packages, so no install maps anything (as for the stdio mock).
    code = (
        "import sys, importlib.util; sys.path.insert(0, sys.argv[1]);"
        "import mcp_host_conformance.mocks.stdio_server, mcp_host_conformance.zoo;"
        "import mcp_host_conformance.harness.verdicts.requirements;"
        "import mcp_host_conformance.reference_client.transports.sse;"
        "names = ['harness', 'mocks', 'conformance', 'reference_client', 'zoo'];"
        "[print(importlib.util.find_spec('mcp_host_conformance.' + n).origin) for n in names]"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code, str(REPOSITORY)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    expected = [str(REPOSITORY / PARTS[n] / "__init__.py") for n in PARTS]
    assert done.stdout.split() == expected


def _expected_files() -> set[str]:
    expected = {f"{PACKAGE}/__init__.py", f"{PACKAGE}/__main__.py", f"{PACKAGE}/py.typed"}
    data = (".py", ".json", ".toml", ".md", ".mjs", ".ini")
    for line in _tracked():
        path = line.split("\t", 1)[1]
        for part, folder in PARTS.items():
            if path.startswith(folder + "/") and path.endswith(data):
                inside = path[len(folder) + 1 :]
                if inside.endswith(".py") or "/" not in inside or inside.startswith("data/"):
                    expected.add(f"{PACKAGE}/{part}/{inside}")
    return expected


BUILT_DIST = "MCP_BUILT_DIST"


def _build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    for line in _tracked():
        path = line.split("\t", 1)[1]
        target = source / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPOSITORY / path, target)
    # The build backend itself (PEP 517), as pip or build would call it: a tox-uv
    # environment has no pip, and this needs no network.
    (tmp_path / "dist").mkdir()
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])",
            str(tmp_path / "dist"),
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel under test: the packaging environment's (built from its sdist), else one
    built here from the tracked files."""
    built = os.environ.get(BUILT_DIST)
    if built:
        (found,) = Path(built).glob("*.whl")
        (sdist,) = Path(built).glob("*.tar.gz")
        assert sdist.name.startswith(found.name.split("-py3")[0]), (sdist, found)
        return found
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_every_module_under_its_import_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = {n for n in archive.namelist() if not n.split("/")[0].endswith(".dist-info")}
    python = {n for n in names if n.endswith(".py")}
    expected = _expected_files()
    assert {n for n in expected if n.endswith(".py")} == python
    assert f"{PACKAGE}/py.typed" in names
    assert f"{PACKAGE}/harness/data/requirements.md" in names
    assert f"{PACKAGE}/harness/data/official_runner.mjs" in names
    assert f"{PACKAGE}/harness/data/pytest.ini" in names  # a run's own pytest configuration
    assert not [n for n in names if n.startswith(f"{PACKAGE}/") is False], names
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/")]


def _metadata(wheel: Path) -> tuple[Message, str]:
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        points = info.replace("METADATA", "entry_points.txt")
        return Parser().parsestr(archive.read(info).decode()), archive.read(points).decode()


def test_the_wheels_metadata_is_pyprojects(wheel: Path) -> None:
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text("utf-8"))["project"]
    metadata, points = _metadata(wheel)
    assert metadata["Name"] == project["name"]
    assert metadata["Version"] == project["version"]
    assert metadata["Requires-Python"] == project["requires-python"]
    assert metadata["License-Expression"] == project["license"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    required = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert _requirements(required) == _requirements(project["dependencies"])
    entry_points = ConfigParser()
    entry_points.read_string(points)
    assert dict(entry_points["console_scripts"]) == project["scripts"]
    for group, declared in project["entry-points"].items():
        assert dict(entry_points[group]) == declared, group


def _requirements(texts: list[str]) -> dict[str, str]:
    """Requirements by name, each its version specifiers in one order."""
    found = [Requirement(text) for text in texts]
    return {r.name: ",".join(sorted(str(s) for s in r.specifier)) for r in found}


@pytest.mark.skipif(
    not os.environ.get(BUILT_DIST),
    reason=f"needs tox's packaging environment (${BUILT_DIST}, and PyPI for the dependencies)",
)
def test_the_wheel_installs_into_a_clean_virtualenv_and_runs_through_the_action(
    wheel: Path, tmp_path: Path
) -> None:
    """The GitHub Action's install step puts the built wheel into a fresh virtualenv (pip,
    the dependencies from PyPI); its run step runs two cases of the suite from there, outside
    the checkout, against a broken client: the reports are written, the JUnit names are the
    rules and cases (no path of the virtualenv), the job fails as it should."""
    import venv

    sys.path.insert(0, str(REPOSITORY / "scripts"))
    import action_steps

    clean = tmp_path / "clean"
    venv.create(clean, with_pip=True)
    python = clean / "bin" / "python"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    result = action_steps.run_action(
        {
            "install": "true",
            "suite": str(wheel),
            "python": str(python),
            "client": "connects-on-add",
            "args": "-p no:randomly -k 'test_adding_a_server_does_not_connect or "
            "test_listing_shows_no_secret'",
        },
        workspace=workspace,
    )
    assert result.status == 1, result
    assert result.outputs["run"]["exit-status"] == "1"
    assert "- **CFG-1** (MUST)" in result.summary
    reports = workspace / "mcp-host-conformance"
    assert {p.name for p in reports.iterdir()} == {
        "report.json",
        "report.html",
        "summary.md",
        "junit.xml",
    }
    junit = (reports / "junit.xml").read_text("utf-8")
    assert 'classname="CFG-1" name="test_configuration::test_adding_a_server_does_not_connect"' in (
        junit
    )
    names = re.findall(r'<testcase classname="([^"]*)" name="([^"]*)"', junit)
    assert len(names) == 2 and not [n for pair in names for n in pair if "/" in n or ".py" in n]
    where = subprocess.run(
        [str(python), "-c", "import mcp_host_conformance.harness as h; print(h.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=workspace,
    )
    assert where.stdout.startswith(str(clean)), where.stdout  # the wheel's, not the checkout's
