"""No import cycles in logphase/, function-level imports included: each module's imports are read
with ``ast`` (at module level and inside functions and classes), and the graph of logphase's own
modules must have no cycle. A cycle means two modules that can only be understood (and loaded)
together; a function-level import hides one from Python but not from a reader."""

from __future__ import annotations

import ast
from pathlib import Path

import logphase

PACKAGE = Path(logphase.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """logphase's modules named by one import statement (``from a import b`` names a.b when that
    is a module, else a)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    found = set()
    for alias in node.names:
        if f"{target}.{alias.name}" in known:
            found.add(f"{target}.{alias.name}")
        elif target in known:
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each logphase module -> the logphase modules it imports anywhere in its body (a package's
    own ``__init__`` is not counted as imported by importing one of its modules)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges |= _imported(node, module, path.name == "__init__.py", known)
        graph[module] = edges - {module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path a -> b -> ... -> a, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_checker_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_checker_reads_function_level_and_relative_imports() -> None:
    graph = import_graph()
    assert "logphase.packs.grammars" in graph["logphase.recognising.classify"]
    assert graph["logphase.faces.cli"], "the command line imports its commands"


def test_no_import_cycle_in_logphase() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
