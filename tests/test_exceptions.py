"""One exception root: every exception class logphase defines derives from LogphaseError, so a
monitor that imports logphase catches whatever logphase raises on purpose with one ``except``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import logphase
from logphase.vocabulary.errors import LogphaseError

PACKAGE = Path(logphase.__file__).parent


def _exception_classes() -> list[tuple[str, str]]:
    """(module, class) of every class in the package that derives from an exception, read with ast
    so that a new module is covered without being listed here."""
    found: list[tuple[str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if any(base.endswith(("Error", "Exception", "Failed")) or base == "LogphaseError" for base in bases):
                    found.append((module, node.name))
    return found


def test_every_exception_logphase_defines_derives_from_logphase_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 5  # the scan finds them (InputError, NotALog, OracleError, NotAReport, StartupFailed)
    for module, name in classes:
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, LogphaseError), f"{module}.{name} does not derive from LogphaseError"


def test_the_root_is_public_and_the_old_bases_still_catch() -> None:
    from logphase.reading.sniff import NotALog
    from logphase.testing import StartupFailed

    assert logphase.LogphaseError is LogphaseError
    assert issubclass(NotALog, ValueError)  # callers that caught ValueError still do
    assert issubclass(StartupFailed, AssertionError)  # pytest still reports it as a failed assertion
