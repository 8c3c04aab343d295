"""minikafka's module import graph: no cycles between modules or between top-level
subpackages, and the pure core reaches no I/O module through the modules it imports.

The graph is read from the source with ``ast``, not by importing anything.  Every import
counts: module level, inside functions, under ``if TYPE_CHECKING:``.  An edge goes to the
module an import names: ``import minikafka.a.b`` -> ``minikafka.a.b``; ``from .a import
b`` -> ``minikafka.a.b`` when ``b`` is a submodule, ``minikafka.a`` when it is a name
defined there.  Importing a submodule also runs its parent packages' ``__init__``; for
the purity check the packages that hold a pure module are checked with it (the root
``minikafka`` package is a lazy facade over the client and is left out).
"""
from __future__ import annotations

import ast
import sys
from collections import deque
from functools import cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from test_purity import FILES as PURE_FILES  # noqa: E402
from test_purity import FORBIDDEN_MODULES, ROOT  # noqa: E402

PACKAGE = "minikafka"


def module_name(path: Path, root: Path = ROOT, package: str = PACKAGE) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(source: str, module: str, package: bool, modules: set[str],
               filename: str = "<string>") -> tuple[set[str], dict[str, int]]:
    """(the ``minikafka`` modules ``source`` imports, {other top-level module: first line}).

    ``module`` is the importing module's dotted name and ``package`` whether it is a
    package's ``__init__`` (relative imports resolve from it rather than its parent);
    ``modules`` is every module of the tree, to tell submodules from names."""
    tree = ast.parse(source, filename)
    here = module.split(".") if package else module.split(".")[:-1]
    internal: set[str] = set()
    external: dict[str, int] = {}

    def deepest(name: str) -> str | None:
        parts = name.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in modules:
                return candidate
            parts.pop()
        return None

    def add(name: str, lineno: int) -> None:
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            target = deepest(name)
            if target is not None and target != module:
                internal.add(target)
        else:
            external.setdefault(name.split(".")[0], lineno)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 >= len(here):
                    raise ValueError(f"{filename}:{node.lineno}: relative import beyond the top package")
                base = here[:len(here) - (node.level - 1)]
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module or ""
            for alias in node.names:
                sub = f"{base_name}.{alias.name}"
                if alias.name != "*" and sub in modules:
                    add(sub, node.lineno)
                else:
                    add(base_name, node.lineno)
    return internal, external


@cache
def graph() -> tuple[dict[str, set[str]], dict[str, dict[str, int]], dict[str, Path]]:
    """(module -> minikafka modules it imports, module -> {external module: line}, module -> file
    relative to the repository)."""
    files = {module_name(p): p.relative_to(ROOT.parent) for p in sorted(ROOT.rglob("*.py"))}
    modules = set(files)
    edges: dict[str, set[str]] = {}
    external: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges[name], external[name] = imports_of((ROOT.parent / path).read_text(encoding="utf-8"), name,
                                                 is_package(path), modules, path.as_posix())
    return edges, external, files


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one node, or with a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        # iterative DFS: (node, iterator over its successors)
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in edges.get(node, ()):
                        found.append(sorted(component))
    return sorted(found)


def shortest_path(edges: dict[str, set[str]], start: str, goal: str, within: set[str] | None = None) -> list[str]:
    """Breadth-first path from ``start`` to ``goal`` (``[start, ..., goal]``), through ``within`` only."""
    came: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges.get(node, ())):
            if within is not None and nxt not in within:
                continue
            if nxt == goal:
                path = [nxt, node]
                back = came[node]
                while back is not None:
                    path.append(back)
                    back = came[back]
                return path[::-1]
            if nxt not in came:
                came[nxt] = node
                queue.append(nxt)
    return []


def describe_cycle(edges: dict[str, set[str]], component: list[str]) -> str:
    """The shortest cycle through each module of a strongly connected component (each
    cycle once), under a heading naming the component when it is bigger than one cycle."""
    members = set(component)
    cycles: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for node in component:
        cycle = shortest_path(edges, node, node, members)[:-1]
        turn = cycle.index(min(cycle))
        key = tuple(cycle[turn:] + cycle[:turn])
        if key not in seen:
            seen.add(key)
            cycles.append(list(key))
    lines = [" -> ".join(c + [c[0]]) for c in cycles]
    if len(cycles) == 1 and len(cycles[0]) == len(component):
        return lines[0]
    return f"a knot of {len(component)} modules ({', '.join(component)}):\n      " + "\n      ".join(lines)


def module_cycles(edges: dict[str, set[str]]) -> list[str]:
    return [describe_cycle(edges, c) for c in strongly_connected(edges)]


def top_package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def package_edges(edges: dict[str, set[str]]) -> tuple[dict[str, set[str]], dict[tuple[str, str], tuple[str, str]]]:
    """Top-level subpackage graph, and one module edge behind each package edge."""
    packages: dict[str, set[str]] = {}
    witness: dict[tuple[str, str], tuple[str, str]] = {}
    for source, targets in sorted(edges.items()):
        a = top_package(source)
        packages.setdefault(a, set())
        for target in sorted(targets):
            b = top_package(target)
            if a != b and PACKAGE not in (a, b):
                packages[a].add(b)
                witness.setdefault((a, b), (source, target))
    return packages, witness


def package_cycles(edges: dict[str, set[str]]) -> list[str]:
    packages, witness = package_edges(edges)
    found = []
    for component in strongly_connected(packages):
        cycle = shortest_path(packages, component[0], component[0], set(component))
        steps = [f"{a} -> {b} ({' imports '.join(witness[a, b])})" for a, b in zip(cycle, cycle[1:])]
        found.append("\n    ".join(steps))
    return found


def pure_modules() -> list[str]:
    """The pure core (test_purity.FILES) and the packages above its modules, but the root."""
    names = {module_name(p) for p in PURE_FILES}
    for name in list(names):
        parts = name.split(".")
        for i in range(2, len(parts)):
            names.add(".".join(parts[:i]))
    return sorted(names)


def purity_violations(edges: dict[str, set[str]], external: dict[str, dict[str, int]], files: dict[str, Path],
                      starts: list[str], forbidden: set[str]) -> list[str]:
    """Each forbidden module reached from ``starts``, with the chain of imports that reaches it."""
    found = []
    seen: dict[str, list[str]] = {}
    queue = deque()
    for start in starts:
        if start in files and start not in seen:
            seen[start] = [start]
            queue.append(start)
    while queue:
        node = queue.popleft()
        for bad, line in sorted(external.get(node, {}).items()):
            if bad in forbidden:
                found.append(" -> ".join(seen[node] + [bad]) + f"  ({files[node].as_posix()}:{line})")
        for nxt in sorted(edges.get(node, ())):
            if nxt not in seen:
                seen[nxt] = seen[node] + [nxt]
                queue.append(nxt)
    return found


# --- the tree ---------------------------------------------------------------------------


def test_no_module_cycles():
    edges, _, _ = graph()
    cycles = module_cycles(edges)
    if cycles:
        pytest.fail(f"{len(cycles)} import cycle(s) between modules:\n  " + "\n  ".join(cycles), pytrace=False)


def test_no_package_cycles():
    edges, _, _ = graph()
    cycles = package_cycles(edges)
    if cycles:
        pytest.fail(f"{len(cycles)} import cycle(s) between subpackages:\n  " + "\n  ".join(cycles), pytrace=False)


def test_the_pure_core_reaches_no_io_module():
    edges, external, files = graph()
    starts = pure_modules()
    assert "minikafka.controller.core" in starts and "minikafka.zk.layout" in starts and "minikafka.auth.acls" in starts
    found = purity_violations(edges, external, files, starts, FORBIDDEN_MODULES)
    if found:
        pytest.fail("the pure core reaches I/O modules:\n  " + "\n  ".join(found), pytrace=False)


def test_the_graph_sees_the_tree():
    edges, external, files = graph()
    assert "minikafka.zk.layout" in edges["minikafka.controller.core"]
    assert "minikafka.errors" in edges["minikafka.groups.group"]
    assert "asyncio" in external["minikafka.broker.server"]


# --- the checker itself, on small made-up trees -----------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]):
    root = tmp_path / "minikafka"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(paths)
    edges, external = {}, {}
    for name, path in paths.items():
        edges[name], external[name] = imports_of(path.read_text(), name, is_package(path), modules)
    return edges, external, {n: p.relative_to(tmp_path) for n, p in paths.items()}


@pytest.mark.parametrize("source, module, package, expected", [
    ("from . import b", "minikafka.p.a", False, {"minikafka.p.b"}),
    ("from .b import thing", "minikafka.p.a", False, {"minikafka.p.b"}),
    ("from .. import q", "minikafka.p.a", False, {"minikafka.q"}),
    ("from ..q.c import x", "minikafka.p.a", False, {"minikafka.q.c"}),
    ("from ..q import c, name", "minikafka.p.a", False, {"minikafka.q.c", "minikafka.q"}),
    ("from . import b", "minikafka.p", True, {"minikafka.p.b"}),
    ("from .b import x", "minikafka.p", True, {"minikafka.p.b"}),
    ("import minikafka.q.c", "minikafka.p.a", False, {"minikafka.q.c"}),
    ("import minikafka.q.c.missing", "minikafka.p.a", False, {"minikafka.q.c"}),
    ("from minikafka.q import c", "minikafka.p.a", False, {"minikafka.q.c"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B", "minikafka.p.a", False,
     {"minikafka.p.b"}),
    ("def f():\n    from ..q import c\n    return c", "minikafka.p.a", False, {"minikafka.q.c"}),
    ("from .a import x", "minikafka.p.a", False, set()),  # itself
])
def test_imports_resolve(source, module, package, expected):
    modules = {"minikafka", "minikafka.p", "minikafka.p.a", "minikafka.p.b", "minikafka.q", "minikafka.q.c"}
    assert imports_of(source, module, package, modules)[0] == expected


def test_external_imports_are_top_level_names():
    _, external = imports_of("import os.path\nfrom time import monotonic\nfrom .time import x\n"
                             "def f():\n    import asyncio\n", "minikafka.p.a", False, {"minikafka.p.a"})
    assert set(external) == {"os", "time", "asyncio"}


def test_finds_a_typing_only_cycle(tmp_path):
    edges, _, _ = _tree(tmp_path, {
        "__init__.py": "", "p/__init__.py": "",
        "p/a.py": "from .b import B\n",
        "p/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n",
        "p/c.py": "def f():\n    from . import a\n",
        "p/d.py": "from . import a\n",
    })
    cycles = module_cycles(edges)
    assert cycles == ["minikafka.p.a -> minikafka.p.b -> minikafka.p.c -> minikafka.p.a"]


def test_finds_a_self_import_is_not_a_cycle(tmp_path):
    edges, _, _ = _tree(tmp_path, {"__init__.py": "", "p/__init__.py": "", "p/a.py": "from . import a\n"})
    assert module_cycles(edges) == []


def test_finds_a_package_cycle_without_a_module_cycle(tmp_path):
    edges, _, _ = _tree(tmp_path, {
        "__init__.py": "", "p/__init__.py": "", "q/__init__.py": "",
        "p/a.py": "from ..q import c\n", "q/c.py": "", "q/d.py": "from ..p.b import x\n", "p/b.py": "x = 1\n",
    })
    assert module_cycles(edges) == []
    cycles = package_cycles(edges)
    assert len(cycles) == 1
    assert "minikafka.p -> minikafka.q (minikafka.p.a imports minikafka.q.c)" in cycles[0]
    assert "minikafka.q -> minikafka.p (minikafka.q.d imports minikafka.p.b)" in cycles[0]


def test_a_package_init_importing_its_modules_is_no_cycle(tmp_path):
    edges, _, _ = _tree(tmp_path, {
        "__init__.py": "", "p/__init__.py": "from .a import A\n", "p/a.py": "from .b import B\nA = B\n",
        "p/b.py": "B = 1\n",
    })
    assert module_cycles(edges) == [] and package_cycles(edges) == []


def test_purity_is_transitive_and_names_the_chain(tmp_path):
    edges, external, files = _tree(tmp_path, {
        "__init__.py": "", "core/__init__.py": "", "util/__init__.py": "",
        "core/a.py": "from ..util import b\n",
        "util/b.py": "def f():\n    from . import c\n",
        "util/c.py": "import json\nimport time\n",
        "core/clean.py": "import json\n",
    })
    found = purity_violations(edges, external, files, ["minikafka.core.a"], FORBIDDEN_MODULES)
    assert found == ["minikafka.core.a -> minikafka.util.b -> minikafka.util.c -> time  (minikafka/util/c.py:2)"]
    assert purity_violations(edges, external, files, ["minikafka.core.clean"], FORBIDDEN_MODULES) == []
