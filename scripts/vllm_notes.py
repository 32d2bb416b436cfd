#!/usr/bin/env python3
"""The vLLM notes: the start-up messages of vLLM's catalogue that no grammar rule reads, as data.

The vLLM twin of ``sglang_notes.py`` (same rows, same reader: ``logphase/recognising/notes.py``), for
vLLM's catalogue (``grammars/vllm/catalogue``, ``mine_vllm.py``). vLLM's catalogue has no start-up
call graph: a message's phase is its file's area where the area is one phase
(``knowledge.VLLM_AREA_PHASE``: the configuration and the front end are launch, ``distributed``
distributed_init, the model loaders weight_loading, KV-cache sizing memory_pool, ``compilation``
cuda_graph_capture, the HTTP launcher warmup); messages of the areas of several phases (the engine,
its workers and executors, platforms, helpers) are no note. A message is left out when its text is
too little to be specific, when it is a progress bar, or when the same text is printed while serving
(the ``runtime`` area); printed in several phases, the note takes the earliest.

    python scripts/vllm_notes.py          # rewrites grammars/vllm/notes.json

``python scripts/knowledge.py --update`` runs it, then measures.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knowledge import (  # the scripts folder is not a package: found through sys.path
    PRINTED,
    ROOT,
    START_UP_PHASES,
    VLLM_AREA_PHASE,
    VLLM_NOT_START_UP,
    vllm_catalogue,
    vllm_log_line,
    vllm_noise_reason,
    vllm_render,
    vllm_versions,
)
from sglang_notes import Candidate, dumps, pieces, specific

NOTES = ROOT / "grammars" / "vllm" / "notes.json"
COLUMNS = ("pieces", "phase", "level", "process", "releases")


def _read_by_grammar(version: str, path: str, message: dict) -> bool:
    """Does a grammar rule read the line already (rendered as knowledge.py renders it)?"""
    from logphase.reading.envelope import split_envelope
    from logphase.recognising.classify import classify
    from logphase.vocabulary.events import LineInfo

    text = vllm_render(message)
    if text is None:
        return False
    line = vllm_log_line(version, path, message, text)
    info = LineInfo(line=1, offset=0, raw=line, ts=None, ts_inherited=False, rank=None)
    return classify(split_envelope(line), info) is not None


def _note_parts(version: str, path: str, area: str, message: dict) -> list[str] | None:
    """The message's pieces when it makes a note: printed at start-up in an area of one phase,
    specific text, not noise, no grammar reads it."""
    if message["level"] not in PRINTED or message["level"] == "tqdm" or area not in VLLM_AREA_PHASE:
        return None
    parts = pieces(message)
    if parts is None or not specific(parts) or vllm_noise_reason(message, area) is not None:
        return None
    return None if _read_by_grammar(version, path, message) else parts


def collect() -> dict[tuple[str, ...], Candidate]:
    """The notes by their pieces; a text vLLM prints while serving too is none."""
    found: dict[tuple[str, ...], Candidate] = {}
    serving: set[tuple[str, ...]] = set()
    for version in vllm_versions():
        for path, f in vllm_catalogue(version)["files"].items():
            for m in f["messages"]:
                if f["area"] in VLLM_NOT_START_UP:
                    parts = pieces(m) if m["level"] in PRINTED else None
                    if parts is not None:
                        serving.add(tuple(parts))
                    continue
                parts = _note_parts(version, path, f["area"], m)
                if parts is None:
                    continue
                c = found.setdefault(tuple(parts), Candidate(tuple(parts)))
                c.phases.add(VLLM_AREA_PHASE[f["area"]])
                c.levels.add(m["level"])
                c.releases.add(version)
                c.main = True  # vLLM's lines carry their process prefix: the rank they are tagged with
    return {parts: c for parts, c in found.items() if parts not in serving}


def notes_data(found: dict[tuple[str, ...], Candidate]) -> dict:
    releases = vllm_versions()
    rows = [
        [
            list(parts),
            min(c.phases, key=START_UP_PHASES.index),
            min(c.levels, key=PRINTED.index),
            "main",
            [releases.index(v) for v in sorted(c.releases, key=releases.index)],
        ]
        for parts, c in sorted(found.items())
    ]
    return {
        "schema": 1,
        "generator": "scripts/vllm_notes.py",
        "about": (
            "Start-up messages of vLLM's catalogue that no grammar rule reads, one row each, in the rows of "
            "grammars/sglang/notes.json: the literal pieces of its first line, the earliest phase it is printed in "
            "(its file's area's, for the areas of one phase), its level, the process (`main`: the rank its line is "
            "tagged with), the releases (indices into `releases`) that print it. Read by logphase/recognising/notes.py "
            "as weak evidence of its phase. Regenerate: python scripts/vllm_notes.py (python scripts/knowledge.py "
            "--update runs it)"
        ),
        "releases": releases,
        "columns": list(COLUMNS),
        "notes": rows,
    }


def write() -> int:
    """Rewrite notes.json; returns how many notes."""
    data = notes_data(collect())
    NOTES.write_text(dumps(data))
    return len(data["notes"])


def main() -> int:
    print(f"{write()} notes -> {NOTES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
