"""The reference client's package: no import cycles, `harness` only in the adapter, and every
seam the broken-client zoo patches exists and is public.

The import graph is read from the source (every `import` statement, also those inside
functions), so a cycle hidden behind a lazy import counts. A seam is the dotted path a
broken client patches: if a rename left it dangling, the broken client would patch
nothing (or fail at start) and its bug would silently be gone.
"""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import pytest

import mcp_host_conformance.reference_client as package
from mcp_host_conformance.zoo import BROKEN

ROOT = Path(package.__file__).resolve().parent
PREFIX = "mcp_host_conformance.reference_client"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PREFIX, *parts])


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports (absolute names), wherever the import statement is."""
    name = module_name(path)
    package_name = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package_name.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    return {
        name: {m for m in imports_of(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def test_no_import_cycle_in_the_reference_client() -> None:
    edges = graph()
    # Package __init__ modules are imported on the way to any submodule; an edge to one is
    # a real dependency only when it names something defined there, so they are kept.
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(m.removeprefix(PREFIX) for m in cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_only_the_adapter_imports_the_harness() -> None:
    for path in ROOT.rglob("*.py"):
        harness = {m for m in imports_of(path) if m.startswith("mcp_host_conformance.harness")}
        if module_name(path) != f"{PREFIX}.adapter":
            assert not harness, f"{module_name(path)} imports {sorted(harness)}"


def seams() -> list[tuple[str, str]]:
    return sorted({(seam.target, name) for name, c in BROKEN.items() for seam in c.seams})


@pytest.mark.parametrize(("target", "client"), seams())
def test_every_zoo_seam_exists_and_is_public(target: str, client: str) -> None:
    assert target.startswith(PREFIX + "."), f"{client} patches {target}, outside the host"
    try:
        pkgutil.resolve_name(target)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"broken client {client} patches {target}, which does not exist ({exc})")
    for part in target.removeprefix(PREFIX + ".").split("."):
        dunder = part.startswith("__") and part.endswith("__")
        assert dunder or not part.startswith("_"), f"{client} patches a private name: {target}"
