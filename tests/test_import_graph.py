"""The package's import graph: no cycle between modules, the dependency direction of
docs/architecture.md (`conformance -> harness -> mocks`; `reference_client` stands alone,
only its adapter module imports the harness), and inside the harness the order of its rooms
(`harness/__init__.py`): a lower room never imports a higher one.

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

from mcp_host_conformance import PARTS as FOLDERS

ROOT = "mcp_host_conformance"
REPOSITORY = Path(__file__).resolve().parents[1]
PARTS = tuple(FOLDERS)

# Which part may import which (besides itself). Whatever is not listed is forbidden.
ALLOWED: dict[str, set[str]] = {
    "mocks": set(),
    "harness": {"mocks"},
    "conformance": {"harness", "mocks"},
    "reference_client": set(),  # except its adapter module, below
    "zoo": {"reference_client", "harness", "mocks"},
}
BRIDGE = f"{ROOT}.reference_client.adapter"  # the one module of the host that knows harness

# The harness's rooms from the bottom up (harness/__init__.py says what each owns); a module
# directly in harness/ (the command) sits above them all.
ROOMS = (
    "contract",
    "verdicts",
    "sandbox",
    "cases",
    "monitors",
    "run",
    "reports",
    "oauth",
    "plugin",
    "explorer",
)
TOP = len(ROOMS)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for part, folder in FOLDERS.items():
        base = REPOSITORY / folder
        for path in sorted(base.rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            names = [part, *path.relative_to(base).with_suffix("").parts]
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


def _room(module: str) -> int | None:
    """The rank of a harness module's room (ROOMS), TOP for a module directly in harness/,
    None outside the harness."""
    names = module.split(".")
    if names[1] != "harness":
        return None
    if len(names) > 3 or (len(names) == 3 and names[2] in ROOMS):
        return ROOMS.index(names[2]) if names[2] in ROOMS else TOP
    return TOP


def _wrong_way(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        part = _part(module)
        for target in sorted(targets):
            other = _part(target)
            if other != part and other not in ALLOWED[part] and module != BRIDGE:
                problems.append(f"{module} -> {target} ({part} may not import {other})")
            low, high = _room(module), _room(target)
            if low is not None and high is not None and high > low:
                problems.append(
                    f"{module} -> {target} (room {ROOMS[low] if low < TOP else 'harness'} "
                    f"is below {ROOMS[high] if high < TOP else 'harness'})"
                )
    return problems


def test_every_harness_module_is_in_a_room() -> None:
    for module, path in MODULES.items():
        names = module.split(".")
        if names[1] == "harness" and len(names) == 3 and names[2] not in ROOMS:
            assert names[2] in {"cli", "data"}, f"{path} is in no room of harness/__init__.py"
    rooms = {m.split(".")[2] for m in MODULES if m.count(".") >= 3 and ".harness." in m}
    assert rooms == set(ROOMS)


def test_imports_go_down_between_parts_and_between_rooms() -> None:
    problems = _wrong_way(GRAPH)
    assert not problems, "imports in the wrong direction:\n" + "\n".join(problems)


def test_a_planted_wrong_way_import_is_seen() -> None:
    # The outcomes (verdicts) importing the plugin, a room far above; and the mocks importing
    # the harness: both must be reported, with the graph otherwise as it is.
    planted = {m: set(t) for m, t in GRAPH.items()}
    planted[f"{ROOT}.harness.verdicts.outcomes"].add(f"{ROOT}.harness.plugin")
    planted[f"{ROOT}.mocks.journal"].add(f"{ROOT}.harness.cases.observe")
    planted[f"{ROOT}.harness.contract.adapter"].add(f"{ROOT}.harness.cli")
    problems = _wrong_way(planted)
    assert any(
        "verdicts.outcomes -> " in p and "room verdicts is below plugin" in p for p in problems
    )
    assert any("mocks.journal -> " in p and "mocks may not import harness" in p for p in problems)
    assert any("contract.adapter -> " in p and "below harness" in p for p in problems)
    assert len(problems) == 3 + len(_wrong_way(GRAPH))
