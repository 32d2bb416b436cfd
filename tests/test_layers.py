"""The package is a stack of stages in the order data flows, and a module imports only its own stage
and the ones below it: a line moves down the stages, never back up to one it left."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "logphase"

# the stages, lowest first (README, "Layout"); the modules at the package's top (its public faces:
# __init__, testing, replay, the pytest plugin) stand with the faces
STAGES = ("vocabulary", "packs", "reading", "recognising", "diagnosing", "folding", "reporting", "engine", "faces")
# a folder a reader takes in at a glance
MOST_MODULES = 12


def _stage_of(module: str) -> int:
    """The stage of a dotted module name under logphase (top-level modules are faces)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in STAGES:
        return STAGES.index(parts[1])
    if len(parts) == 2 and parts[1] in STAGES:  # the stage's package itself
        return STAGES.index(parts[1])
    return STAGES.index("faces")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every logphase module ``path`` imports, at any depth (in functions and TYPE_CHECKING too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("logphase"):
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names if node.module == "logphase")
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("logphase"))
    return found


def test_every_module_is_in_a_stage_folder_or_a_top_level_face() -> None:
    for path in PACKAGE.rglob("*.py"):
        folder = path.relative_to(PACKAGE).parts
        assert len(folder) == 1 or folder[0] in STAGES, f"{path}: not in a stage folder"


def test_imports_go_only_down_the_stages() -> None:
    upward: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _stage_of(_module_name(path))
        for line, module in _imports(path):
            if module == "logphase" or module.startswith("logphase.__"):
                continue  # the version and the lazy public names
            if _stage_of(module) > own:
                upward.append(f"{path.relative_to(PACKAGE)}:{line} ({STAGES[own]}) imports {module} ({STAGES[_stage_of(module)]})")
    assert not upward, "imports up the stages:\n" + "\n".join(upward)


def test_a_pack_s_rows_speak_only_the_vocabulary_and_the_packs() -> None:
    """A pack is data: its pack.py (grammars/<pack>/, and the toy pack of the tests) imports nothing
    above the packs' stage."""
    rows = [*PACKAGE.parent.glob("grammars/*/pack.py"), Path(__file__).parent / "toy_pack" / "pack.py"]
    assert len(rows) >= 4
    for path in rows:
        for line, module in _imports(path):
            assert _stage_of(module) <= STAGES.index("packs"), f"{path}:{line} imports {module}"


def test_no_stage_folder_is_a_crowd() -> None:
    for stage in STAGES:
        modules = [p for p in (PACKAGE / stage).glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= MOST_MODULES, f"{stage}/ holds {len(modules)} modules"


def test_each_stage_says_its_place_in_the_order() -> None:
    """Each stage's package docstring names its number in the order data flows."""
    for number, stage in enumerate(STAGES[1:-1], 1):
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert re.match(rf"Stage {number}, {stage}\b", doc), (stage, doc[:60])


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The test above would fail on a stage that imports one above it."""
    module = tmp_path / "probe.py"
    module.write_text("from logphase.engine.engine import Engine\n", encoding="utf-8")
    [(_, imported)] = _imports(module)
    assert _stage_of(imported) > _stage_of("logphase.reading.lines")
