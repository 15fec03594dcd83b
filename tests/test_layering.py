"""The import structure: no module imports from a layer above its own, and no two modules import each other in a
circle. Reads the sources with `ast` (function-level imports included), imports nothing, so it runs in a second.

Layers, lowest first: common < browser_actors, reward (peers: neither imports the other) < sites < rollout_workers
< learner < bench. A part may use anything below it; what two parts share lives below both.

The actor contracts: a call into an actor goes through a typed handle method (rollout_workers/handles.py for the
browser, reward and inference actors, learner/learner_handle.py for the learner), never by a method name in a
string outside those modules (`call(h, "step")`, `getattr(h, name).remote(...)`, `h.step.remote(...)`); and the
collaborators a reader follows through an iteration are never typed `Any` in rollout_workers/ and learner/.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Where an actor method may be named by a string: the generic call and the typed handles built on it.
CONTRACT_MODULES = {"common.remote", "rollout_workers.handles", "learner.learner_handle"}
# Names of the collaborators that must carry a real type (parameters, attributes, fields; plurals too).
COLLABORATORS = {
    "browser",
    "policy",
    "builder",
    "router",
    "rewarder",
    "learner",
    "engine",
    "sandboxes",
    "pool",
}
TYPED_PACKAGES = ["rollout_workers", "learner"]
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


def _by_line(finding: str) -> tuple[str, int]:
    module, line = finding.split()[0].split(":")
    return module, int(line)


def _is_string(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def string_actor_calls(modules: dict[str, Path]) -> list[str]:
    """Actor calls that name the method by a string, or reach `.remote` through a handle's attribute, outside the
    contract modules. `ray.remote(Cls).options(...).remote(args)` (a launch) is not such a call."""
    bad = []
    for module, path in modules.items():
        if module in CONTRACT_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if name in ("call", "_call") and len(node.args) >= 2 and _is_string(node.args[1]):
                bad.append(f"{module}:{node.lineno} {name}(..., {node.args[1].value!r})")
            elif name in ("call", "_call") and node.args and _is_string(node.args[0]):
                bad.append(f"{module}:{node.lineno} {name}({node.args[0].value!r}, ...)")
            elif isinstance(fn, ast.Attribute) and fn.attr == "remote":
                target = fn.value
                if isinstance(target, ast.Call) and getattr(target.func, "id", "") == "getattr":
                    bad.append(f"{module}:{node.lineno} getattr(...).remote(...)")
                elif isinstance(target, ast.Attribute) and target.attr != "options":
                    bad.append(f"{module}:{node.lineno} .{target.attr}.remote(...)")
    return sorted(bad, key=_by_line)


def _mentions_any(annotation: ast.AST | None) -> bool:
    if annotation is None:
        return False
    if _is_string(annotation):  # a quoted annotation
        return "Any" in annotation.value.replace("AnyStr", "")
    return any(isinstance(n, ast.Name) and n.id == "Any" for n in ast.walk(annotation))


def _collaborator(name: str) -> bool:
    return name.lstrip("_").removesuffix("s") in COLLABORATORS or name.lstrip("_") in COLLABORATORS


def untyped_collaborators(modules: dict[str, Path]) -> list[str]:
    """Parameters, annotated attributes and fields named after a collaborator whose annotation mentions `Any`."""
    bad = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            named: list[tuple[str, ast.AST | None, int]] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                    named.append((a.arg, a.annotation, a.lineno))
            elif isinstance(node, ast.AnnAssign):
                target = node.target
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
                named.append((name, node.annotation, node.lineno))
            bad += [
                f"{module}:{line} {n}: Any"
                for n, ann, line in named
                if _collaborator(n) and _mentions_any(ann)
            ]
    return sorted(bad, key=_by_line)


def test_actor_calls_go_through_the_typed_handles():
    modules = module_files(REPO, [*LAYERS, "scripts"])
    assert set(CONTRACT_MODULES) <= set(modules)
    assert string_actor_calls(modules) == []


def test_no_collaborator_is_typed_any():
    assert untyped_collaborators(module_files(REPO, TYPED_PACKAGES)) == []


def test_the_contract_checks_find_what_they_look_for(tmp_path):
    files = {
        "rollout_workers/__init__.py": "",
        "rollout_workers/a.py": (
            "from typing import Any\n"
            "async def f(browser: Any, policy: 'Any | None', engines: list[Any], n: Any):\n"
            "    await call(browser, 'step', 1)\n"
            "    getattr(browser, 'reset').remote()\n"
            "    browser.final_state.remote()\n"
            "    ray.remote(Cls).options(name='x').remote(1)\n"
            "class W:\n"
            "    router: Any = None\n"
        ),
        "rollout_workers/handles.py": "async def g(h):\n    await call(h, 'step')\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    modules = module_files(tmp_path, ["rollout_workers"])
    assert string_actor_calls(modules) == [
        "rollout_workers.a:3 call(..., 'step')",
        "rollout_workers.a:4 getattr(...).remote(...)",
        "rollout_workers.a:5 .final_state.remote(...)",
    ]
    assert untyped_collaborators(modules) == [
        "rollout_workers.a:2 browser: Any",
        "rollout_workers.a:2 policy: Any",
        "rollout_workers.a:2 engines: Any",
        "rollout_workers.a:8 router: Any",
    ]
