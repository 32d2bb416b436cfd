"""A pack's frame table mined from its server's releases: ``grammars/<pack>/functions.json``.

``scripts/mine_sglang.py`` and ``scripts/mine_vllm.py`` walk the start-up call graph of each
release from the server's phase roots (``scripts/sglang_phases.py``, ``scripts/vllm_phases.py``)
and write one file of one layout: wheel path -> qualified name -> {phase, first, last, and the flags
below}. Every pack reads its file here, the same way, under its hand rows (``ServerFunction`` rows
in its ``pack.py``), which win: a mined function a hand row names is left out, and a frame of a
hand row decides before any mined one (``diagnosing/functions.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from logphase.packs.derived import cached, digest
from logphase.packs.rows import ServerFunction
from logphase.vocabulary.phases import Phase

__all__ = ["mined_functions"]

# what makes a mined function no evidence (functions.json's flags): reached from several phases
# ("also", "tied": a helper whose phase is its caller's), placed differently by different releases
# ("changes"), running through later phases ("spans", "until": SGLang's Scheduler.__init__)
_NO_EVIDENCE = frozenset({"also", "tied", "changes", "spans", "until"})
_MinedRows = dict[tuple[str, str], set[tuple[Phase, str | None]]]
_Functions = dict[str, dict[str, dict[str, object]]]  # functions.json's "functions": file -> function -> row


def mined_functions(table: Path, hand: tuple[ServerFunction, ...]) -> tuple[ServerFunction, ...]:
    """The rows of a pack's mined frame table ``table`` (its functions.json) that are evidence, under
    the pack's ``hand`` rows. A name that two files of the same name (or two classes of one file)
    place in different phases is no evidence either (``_evidence_rows`` says what else is not)."""
    source = table.read_bytes()
    # kept on disk with the hash of the file and of the hand rows (the mining reads ~0.5 MB of JSON
    # and thousands of rows: a tenth of a second a start)
    key = digest([source, repr(hand)])
    name = f"{table.parent.name}-mined-functions"
    return cached(name, key, lambda: _mine_rows(json.loads(source), hand), _mined_rows)


def _spanning_classes(functions: _Functions) -> set[str]:
    """Classes whose constructor runs through later phases (SGLang's ModelRunner and Scheduler,
    vLLM's EngineCore and WorkerProc): the call graph gives their methods the constructor's phase,
    launch, whenever they run."""
    return {
        q.rpartition(".")[0]
        for rows in functions.values()
        for q, row in rows.items()
        if q.endswith(".__init__") and _NO_EVIDENCE & {"spans", "until"} & row.keys()
    }


def _evidence_rows(functions: _Functions, hand: tuple[ServerFunction, ...]) -> _MinedRows:
    """(name, file) -> the (phase, constructor's class) of each mined function that is evidence
    and that no hand row names (by name for a row of any file, by name and file, or its class)."""
    named = {f.name for f in hand if f.file is None} | {f"{f.name}@{f.file}" for f in hand} | {f"@{f.cls}" for f in hand if f.cls}
    spanning = _spanning_classes(functions)
    found: _MinedRows = {}
    for path, rows in functions.items():
        file = path.rsplit("/", 1)[-1]
        for qualified, row in rows.items():
            owner, _, name = qualified.rpartition(".")
            cls = owner.rsplit(".", 1)[-1] if name == "__init__" and owner else None
            # a constructor built at launch may run the later phases: the call graph cannot tell
            at_launch = row["phase"] == Phase.LAUNCH.value and (owner in spanning or name == "__init__")
            if _NO_EVIDENCE & row.keys() or at_launch or {name, f"{name}@{file}", f"@{cls}"} & named:
                continue
            found.setdefault((name, file), set()).add((Phase(str(row["phase"])), cls))
    return found


def _mine_rows(data: dict[str, _Functions], hand: tuple[ServerFunction, ...]) -> list[list[str | None]]:
    """The rows ``mined_functions`` keeps, as JSON: [name, phase, file, class]."""
    rows: list[list[str | None]] = []
    for (name, file), found in sorted(_evidence_rows(data["functions"], hand).items()):
        phases = {phase for phase, _ in found}
        classes = sorted({cls for _, cls in found if cls is not None})
        constructor = name == "__init__"
        if len(phases) != 1 or (constructor and (len(classes) != 1 or any(cls is None for _, cls in found))):
            continue
        rows.append([name, phases.pop().value, file, classes[0] if constructor else None])
    return rows


def _mined_rows(data: object) -> tuple[ServerFunction, ...]:
    if not isinstance(data, list):
        raise TypeError("mined functions: not a list")
    phases = {phase.value: phase for phase in Phase}
    rows = tuple(ServerFunction(name, phases[phase], file, cls, False, True) for name, phase, file, cls in data)
    if not all(isinstance(f.name, str) and isinstance(f.file, str) for f in rows):
        raise TypeError("mined functions: a name that is not text")
    return rows
