"""Names unique across the package: a class, function or constant defined at the top of a module
is defined in no other module, so a name in a traceback, a grep or an import says which one it is.
The exceptions are interfaces several modules implement on purpose, listed below."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import logphase

PACKAGE = Path(logphase.__file__).parent

# names that are an interface: every command module (faces/commands/) has NAME, HELP,
# add_arguments and run; every pack module (packs/) has PACK; runnable modules have main
INTERFACES = {
    "NAME": "faces/commands/",
    "HELP": "faces/commands/",
    "add_arguments": "faces/commands/",
    "run": "faces/commands/",
    "HELP_FORMATTER": "faces/commands/",
    "PACK": "packs/",
    "main": "",
}


def _top_level_names(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_")]


def definitions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _top_level_names(ast.parse(path.read_text(encoding="utf-8"))):
            found[name].append(path.relative_to(PACKAGE).as_posix())
    return found


def test_every_public_name_is_defined_once() -> None:
    found = definitions()
    assert "Report" in found and "Phase" in found  # the scan reads the package
    twice = {
        name: homes
        for name, homes in found.items()
        if len(homes) > 1 and not (name in INTERFACES and all(h.startswith(INTERFACES[name]) for h in homes))
    }
    assert twice == {}


def test_the_interfaces_are_what_they_say() -> None:
    found = definitions()
    commands = {h for h in found["run"] if h.startswith("faces/commands/")}
    assert len(commands) >= 5
    for name in ("NAME", "HELP", "add_arguments"):
        assert {h for h in found[name]} == commands, name
