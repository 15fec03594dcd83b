"""The import structure: no module imports from a layer above its own, and no two modules import each other in a
circle. Reads the sources with `ast` (function-level imports included), imports nothing, so it runs in a second.

Layers, lowest first: common < browser_actors, reward (peers: neither imports the other) < sites < rollout_workers
< learner < bench. A part may use anything below it; what two parts share lives below both.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS = {
    "common": 0,
    "browser_actors": 1,
    "reward": 1,
    "sites": 2,
    "rollout_workers": 3,
    "learner": 4,
    "bench": 5,
}


def module_files(root: Path, packages: list[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the given top-level folders."""
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _imported_names(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative: resolve against the importing module's package
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")
        anchor = ".".join(parts[: len(parts) - node.level + 1])
        base = f"{anchor}.{base}" if base else anchor
    # `from pkg import sub` imports the submodule `pkg.sub` when there is one, else a name from `pkg`
    return [f"{base}.{a.name}" for a in node.names]


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported module of the repository: first line}; imports of other packages are left out."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported_names(module, path, node):
                while name and name not in modules:  # `a.b.Name` -> the module `a.b`
                    name = name.rpartition(".")[0]
                if name and name != module:
                    edges.setdefault(name, node.lineno)
        graph[module] = edges
    return graph


def upward_imports(graph: dict[str, dict[str, int]], layers: dict[str, int]) -> list[str]:
    """Imports of a higher layer, or of a peer package in the same layer."""
    bad = []
    for module, edges in graph.items():
        own = module.split(".")[0]
        for target, line in edges.items():
            other = target.split(".")[0]
            if other != own and layers[other] >= layers[own]:
                bad.append(f"{module}:{line} imports {target} ({other} is not below {own})")
    return bad


def import_circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    circles.append(sorted(group))
    return circles


def test_no_import_runs_up_the_layers():
    modules = module_files(REPO, list(LAYERS))
    assert len(modules) > 100 and {"common.records", "learner.train", "sites.core"} <= set(modules)
    assert upward_imports(import_graph(modules), LAYERS) == []


def test_no_import_circles():
    modules = module_files(REPO, list(LAYERS))
    assert import_circles(import_graph(modules)) == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """A small tree with one upward import (inside a function), one peer import and one circle."""
    files = {
        "common/__init__.py": "",
        "common/a.py": "def f():\n    from learner import x\n",
        "reward/__init__.py": "",
        "reward/r.py": "import browser_actors.b\n",
        "browser_actors/__init__.py": "",
        "browser_actors/b.py": "from common import a\n",
        "learner/__init__.py": "",
        "learner/x.py": "from . import y\n",
        "learner/y.py": "from learner.x import thing\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph = import_graph(module_files(tmp_path, ["common", "reward", "browser_actors", "learner"]))
    assert upward_imports(graph, LAYERS) == [
        "common.a:2 imports learner.x (learner is not below common)",
        "reward.r:1 imports browser_actors.b (browser_actors is not below reward)",
    ]
    assert import_circles(graph) == [["learner.x", "learner.y"]]
