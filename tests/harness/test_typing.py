"""The package is typed: `py.typed` ships (PEP 561), so a host project's own mypy checks its
adapter against the contract's types."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

REPO = Path(__file__).resolve().parents[2]


def test_py_typed_is_in_what_the_package_installs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    distribution = Distribution()
    distribution.script_name = "setup.py"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setuptools: [tool.setuptools] support is "beta"
        apply_configuration(distribution, "pyproject.toml")
        build = distribution.get_command_obj("build_py")
        build.build_lib = str(tmp_path)
        build.ensure_finalized()
        build.run()
    assert (tmp_path / "mcp_host_conformance" / "py.typed").is_file()
    assert (tmp_path / "mcp_host_conformance" / "harness" / "adapter.py").is_file()


def test_mypy_with_no_arguments_checks_the_package_strict_on_the_harness() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["packages"] == ["mcp_host_conformance"]
    strict = [o for o in config["overrides"] if o.get("disallow_untyped_defs")]
    assert strict and "mcp_host_conformance.harness.*" in strict[0]["module"]
