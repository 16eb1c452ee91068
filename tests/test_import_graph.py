"""The package's import graph: no cycle between modules, and the dependency direction of
docs/architecture.md (`conformance -> harness -> mocks`; `reference_client` stands alone,
only its adapter module imports the harness).

Strategy: every module of the installed package (`harness`, `mocks`, `conformance`,
`reference_client`, `zoo`) is parsed, not imported, and every import statement counts,
wherever it is: at the top, inside a function (a lazy import hides a cycle, it does not
remove it), under `if TYPE_CHECKING:`, and `importlib.import_module("...")` with a literal
name. An import of a package's submodule is an edge to that submodule; importing a
package's parent is not counted (every submodule import runs its parents' `__init__`,
which would make every package that imports its own submodules a cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mcp_host_conformance

ROOT = "mcp_host_conformance"
PACKAGE_DIR = Path(mcp_host_conformance.__file__).parent
PARTS = ("harness", "mocks", "conformance", "reference_client", "zoo")

# Which part may import which (besides itself). Whatever is not listed is forbidden.
ALLOWED: dict[str, set[str]] = {
    "mocks": set(),
    "harness": {"mocks"},
    "conformance": {"harness", "mocks"},
    "reference_client": set(),  # except its adapter module, below
    "zoo": {"reference_client", "harness", "mocks"},
}
BRIDGE = f"{ROOT}.reference_client.adapter"  # the one module of the host that knows harness

# Cycles being removed by another change (a pair of modules each), with why they are here.


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for part in PARTS:
        base = PACKAGE_DIR / part
        for path in sorted(base.rglob("*.py")):
            relative = path.relative_to(PACKAGE_DIR).with_suffix("")
            names = list(relative.parts)
            if names[-1] == "__init__":
                names = names[:-1]
            found[".".join([ROOT, *names])] = path
    return found


MODULES = _modules()


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = _package_of(module, path).split(".")
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text("utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield submodule if submodule in MODULES else target
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        edges = set()
        for target in _imports(module, path):
            while target and target not in MODULES:  # `import a.b.c` of a non-module name
                target = target.rpartition(".")[0]
            if target and target != module and target != ROOT:
                edges.add(target)
        graph[module] = edges
    return graph


def _part(module: str) -> str:
    return module.split(".")[1]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


GRAPH = _graph()


def test_every_part_of_the_package_is_parsed() -> None:
    assert {_part(m) for m in MODULES} == set(PARTS)
    assert f"{ROOT}.harness.plugin" in MODULES and f"{ROOT}.zoo.client" in MODULES


def test_no_import_cycle_between_modules() -> None:
    problems = []
    for component in _cycles(GRAPH):
        problems.append(" <-> ".join(component))
    assert not problems, "import cycles:\n" + "\n".join(problems)


def test_the_detector_sees_lazy_imports_and_cycles() -> None:
    # A lazy import inside a function is an edge like any other.
    tree = "def f():\n    from mcp_host_conformance.harness import plugin\n"
    parsed = ast.parse(tree)
    imports = [n for n in ast.walk(parsed) if isinstance(n, ast.ImportFrom)]
    assert imports and imports[0].module == "mcp_host_conformance.harness"
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
