"""The package is typed: `py.typed` ships (PEP 561), so a host project's own mypy checks its
adapter against the contract's types."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import ModuleType

from mcp_host_conformance import PARTS

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "mcp_host_conformance"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_typecheck_lays_out_every_module_as_installed(tmp_path: Path) -> None:
    # mypy reads the laid-out tree (it cannot follow package-dir): every module of every
    # part must be there under its import name, or mypy would skip it silently.
    typecheck = _script("typecheck")
    typecheck.lay_out(tmp_path)
    for part, folder in PARTS.items():
        ours = {p.relative_to(REPO / folder) for p in (REPO / folder).rglob("*.py")}
        ours = {p for p in ours if "__pycache__" not in p.parts}
        laid = {
            p.relative_to(tmp_path / PACKAGE / part)
            for p in (tmp_path / PACKAGE / part).rglob("*.py")
        }
        assert ours == laid, part
    assert (tmp_path / PACKAGE / "py.typed").is_file()


def test_the_typecheck_is_strict_on_the_harness() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = [o for o in config["overrides"] if o.get("disallow_untyped_defs")]
    assert strict and "mcp_host_conformance.harness.*" in strict[0]["module"]
