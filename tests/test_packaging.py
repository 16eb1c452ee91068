"""The package as it installs: the repository's top-level folders mapped under
`mcp_host_conformance` by pyproject.toml (no symbolic link anywhere), the same mapping in a
checkout that nothing installed, and a wheel that holds every module where its import name
says.

Strategy: the wheel is built from a copy of the tracked files (what a fresh clone has) by
the setuptools of this environment (its PEP 517 backend, as pip calls it), and its file
list is compared with the repository's: each part's Python files, its data files, py.typed,
and nothing of the project's own tests but the zoo.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

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


def test_the_wheel_holds_every_module_under_its_import_name(tmp_path: Path) -> None:
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
