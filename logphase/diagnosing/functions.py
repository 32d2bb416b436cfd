"""The servers' functions by phase: what a traceback's frames say about where it struck.

The rows are the packs' (``logphase/packs/sglang.py``'s ``FUNCTIONS``): one row per function of a
server (and of the libraries it calls only in one phase), by its WHOLE name
as a frame prints it (``File "...", line 1017, in load_model``) or as a statement calls it
(``self.load_model()``). A name is evidence only when it is whole: a frame or a statement cut inside
a name (``self.init_m``, the end of a window) matches no row, so it says nothing. Generic names
(``__init__``, ``configure``) count only in the file the row gives; a constructor's row also names
its class, as a statement calls it (``CudaGraphRunner(``).

Functions that run in several phases (``forward``, ``initialize``, ``run_scheduler_process``,
``barrier``, ``broadcast``) have no row: the frames around them decide.
"""

from __future__ import annotations

import re

from logphase.packs import PACKS, kept_regex
from logphase.packs.rows import ServerFunction
from logphase.vocabulary.phases import Phase

__all__ = ["SERVER_FUNCTIONS", "ServerFunction", "call_phase", "frame_floor", "frame_phase", "table_problems"]


# every pack's functions: a function name belongs to one server's code (or to a library it calls)
SERVER_FUNCTIONS: tuple[ServerFunction, ...] = tuple(f for pack in PACKS for f in pack.functions)

# a frame's function with a file, or without one (None: any file); the hand rows, then the mined
_BY_FRAME: dict[tuple[str, str | None], Phase] = {
    (f.name, f.file): f.phase for f in SERVER_FUNCTIONS if not f.onward and not f.mined
}
_ONWARD: dict[tuple[str, str | None], Phase] = {(f.name, f.file): f.phase for f in SERVER_FUNCTIONS if f.onward}
# the mined rows by pack, each with the paths of its server's code and the files its table knows:
# a frame in one server's code is read by that server's table alone (SGLang's model_runner.py and
# vLLM's are other files); a frame in no server's known path (a shortened paste) by every table that
# knows its file, when they agree (one that knows the file but not the name holds it no evidence)
_MINED: tuple[tuple[re.Pattern[str] | None, dict[tuple[str, str | None], Phase], frozenset[str | None]], ...] = tuple(
    (
        kept_regex.compile("|".join(pack.server_paths)) if pack.server_paths else None,
        {(f.name, f.file): f.phase for f in pack.functions if f.mined},
        frozenset(f.file for f in pack.functions if f.mined),
    )
    for pack in PACKS
    if any(f.mined for f in pack.functions)
)
# what a statement calls: a function by name (rows for any file), or a class by name
_BY_CALL: dict[str, Phase] = {f.name: f.phase for f in SERVER_FUNCTIONS if f.file is None and not f.onward} | {
    f.cls: f.phase for f in SERVER_FUNCTIONS if f.cls is not None
}
# a row for any file is a function of a server (the packs' names are the same phase in each server,
# see vllm.py): in an installed package that is no server's (torch, triton, transformers) a function
# of the same name is another one ('capture' in torch/cuda/graphs.py): a library's frame is evidence
# only by a row that names its file (a known call site: torch's init_process_group)
_LIBRARY = {f.name: f.library for f in SERVER_FUNCTIONS if f.library is not None}
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
_SERVER_PATHS = kept_regex.compile("|".join(p for pack in PACKS if pack.server for p in pack.server_paths) or r"(?!)")
# a whole name followed by its call's parenthesis ('self.load_model(' or 'CudaGraphRunner(')
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")


def frame_phase(function: str | None, path: str, mined: bool | None = None) -> Phase | None:
    """The phase a frame's function runs in; None for a function the table does not know (or a
    frame cut before its function). ``Class.method`` (newer Pythons' qualified names) reads as the
    method, or for a constructor as the class. ``mined``: only the hand rows (False), only the
    rows mined from the call graphs (True), or either, the hand rows first (None)."""
    if not function:
        return None
    file = path.rsplit("/", 1)[-1]
    owner, _, name = function.rpartition(".")
    found = None
    if mined is not True:
        found = _BY_FRAME.get((name, file)) or (_BY_FRAME.get((name, None)) if _owned(name, path) else None)
    if found is None and mined is not False:
        found = _mined_phase(name, file, path)
    if found is None and owner and name == "__init__":
        found = _BY_CALL.get(owner.rsplit(".", 1)[-1])
    return found


def _mined_phase(name: str, file: str, path: str) -> Phase | None:
    """The phase the mined tables give a frame: its server's table when its path is a server's
    code, else the one phase that every table that knows its file gives it."""
    owners = [table for paths, table, _ in _MINED if paths is not None and paths.search(path) is not None]
    if owners:
        found = {table.get((name, file)) for table in owners}
    else:
        found = {table.get((name, file)) for _, table, files in _MINED if file in files}
    return found.pop() if len(found) == 1 else None


def _owned(name: str, path: str) -> bool:
    """Whether a frame at ``path`` may be the function ``name`` that a row names for any file: a
    server's code, the library the row names, or no installed package (a checkout, a script, a
    path a paste shortened)."""
    if _SERVER_PATHS.search(path) is not None or _INSTALLED.search(path) is None:
        return True
    library = _LIBRARY.get(name)
    return library is not None and re.search(rf"[/\\]{re.escape(library)}[/\\]", path) is not None


def frame_floor(function: str | None, path: str) -> Phase | None:
    """The earliest phase a frame's function can be in, for a function that runs several in turn
    (``onward`` rows); None for any other."""
    if not function:
        return None
    return _ONWARD.get((function.rpartition(".")[2], path.rsplit("/", 1)[-1]))


def call_phase(statement: str | None) -> Phase | None:
    """The phase of the call a source line makes: the last whole name called in it that the table
    knows ('self.model = self.loader.load_model(' is weight loading). A name the line ends inside of
    is no call: the input was cut there."""
    for name in reversed(_CALL.findall(statement or "")):
        found = _BY_CALL.get(name.rsplit(".", 1)[-1])
        if found is not None:
            return found
    return None


def table_problems() -> list[str]:
    """What is wrong with the table (the tests call it): a row whose name is no whole Python name,
    a function listed twice, a constructor without its file."""
    problems: list[str] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for row in SERVER_FUNCTIONS:
        if not re.fullmatch(r"[A-Za-z_]\w*|<module>", row.name):
            problems.append(f"{row.name!r}: not a whole function name")
        if row.mined:
            continue  # each pack's mined table is its own, one row a name and file by construction
        if (row.name, row.file, row.cls) in seen:
            problems.append(f"{row.name} ({row.file or 'any file'}): listed twice")
        seen.add((row.name, row.file, row.cls))
        if (row.name, row.file) in _BY_FRAME and _BY_FRAME[(row.name, row.file)] is not row.phase and not row.onward:
            problems.append(f"{row.name} ({row.file or 'any file'}): two phases")
        if row.name == "__init__" and (row.file is None or row.cls is None):
            problems.append(f"__init__ of {row.cls or '?'}: a constructor needs its file and class")
    return problems
