"""Stage 1, packs: everything logphase knows, one pack per server and one shared by all.

A pack (``rows.Pack``) is data, one folder of ``grammars/``: its grammars and its rows
(``grammars/<name>/pack.py``). The registry (``registry.py``) lists the folders; the stages read
the packs in its order (the shared vocabularies first) and name no server themselves: adding a
server is its folder and one line in the registry. The packs are loaded on first use (``from
logphase.packs import PACKS``): their rows name the event builders, and ``import logphase`` or
``logphase --help`` need none of them.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from logphase.packs.registry import pack_folders
from logphase.packs.rows import Message, Pack, annotated
from logphase.vocabulary.errors import LogphaseError

# the package a pack's pack.py is loaded into, as a module of its own
_LOADED = "logphase.packs.loaded"


class PackError(LogphaseError):
    """A pack folder that cannot be loaded: no ``pack.py``, no ``PACK`` in it, or another pack's name."""


@functools.cache
def packs() -> tuple[Pack, ...]:
    """Every pack, in the order the stages read them."""
    loaded = tuple(_load(folder) for folder in pack_folders())
    names = [pack.name for pack in loaded]
    if len(set(names)) != len(names):
        raise PackError(f"two packs have one name: {names}")
    return loaded


def _load(folder: Path) -> Pack:
    """The ``PACK`` a folder's ``pack.py`` defines (a module of its own: logphase.packs.loaded.<name>)."""
    path = folder / "pack.py"
    name = f"{_LOADED}.{folder.name}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise PackError(f"{folder}: no pack.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    pack = getattr(module, "PACK", None)
    if not isinstance(pack, Pack):
        raise PackError(f"{path}: defines no PACK")
    if pack.name != folder.name:
        raise PackError(f"{path}: PACK is named {pack.name!r}, its folder {folder.name!r}")
    return dataclasses.replace(pack, folder=folder, messages={**_annotated_rows(pack, path), **pack.messages})


def _annotated_rows(pack: Pack, path: Path) -> dict[str, Message]:
    """The rows the pack's grammars write beside their rules (``//@``), as the pack builds them."""
    from logphase.packs.grammars import row_notes

    rows: dict[str, Message] = {}
    for grammar in pack.grammars:
        for rule, note in row_notes(grammar).items():
            if pack.annotated_row is None:
                raise PackError(f"{path}: {grammar}.lark writes a row for {rule!r}, the pack builds none (annotated_row)")
            if rule in pack.messages:
                raise PackError(f"{path}: {rule!r} has a row in pack.py and one in {grammar}.lark")
            try:
                evidence, anywhere = annotated(note)
            except ValueError as why:
                raise PackError(f"{grammar}.lark, {rule}: {why}") from None
            rows[rule] = pack.annotated_row(grammar, evidence, anywhere)
    return rows


def pack_named(name: str) -> Pack | None:
    """The pack of this name (a server's name is its pack's), or None."""
    return next((pack for pack in packs() if pack.name == name), None)


def step_span(server: str | None, step: str) -> str | None:
    """The name the server's own traces give the step the report calls ``step`` (vLLM's 'Load
    weights' for loading_weights), or None when its pack says none."""
    pack = pack_named(server) if server is not None else None
    rows = pack.messages.values() if pack is not None else ()
    return next((row.step.span for row in rows if row.step is not None and row.step.name == step and row.step.span), None)


def rows_module(name: str) -> ModuleType:
    """The module a pack's ``pack.py`` was loaded as (its helpers, for tests and scripts)."""
    packs()
    return sys.modules[f"{_LOADED}.{name}"]


# every pack, in order: the value of packs(), read on first use (module __getattr__ below)
PACKS: tuple[Pack, ...]


def __getattr__(name: str) -> object:
    if name == "PACKS":
        return packs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
