#!/usr/bin/env python3
"""The SGLang notes: every start-up message of the catalogue that no grammar rule reads (or that a
rule reads whose phase is its note's, ``ByLine("note")``), as data.

For every release of the catalogue (``grammars/sglang/catalogue``, mined by ``mine_sglang.py``),
each message SGLang prints at the default log level (``info`` and above, ``print``) in a function
that the start-up call graph places in a phase before ``ready`` becomes a *note*: the literal
pieces of its first line (the text between its placeholders), the phase it is printed in, its
level, whether the main process or a scheduler prints it, and the releases that print it. At run
time (``logphase/recognising/notes.py``) a start-up line that no grammar reads is looked up among the
notes, and a match is weak evidence of the note's phase (it enters the phase only from before it).

A message is left out, with the reason, when its text cannot tell its phase (written to the
``skipped`` list of ``grammars/sglang/noise.json``, which ``knowledge.py`` counts as noise):

* too little literal text to be specific (fewer than MIN_LITERAL characters or MIN_WORDS words);
* its function is shared by roots of several phases at the same distance (``tied``);
* the same text is printed while serving too (a ``ready`` function, or ``also`` ready);
* a progress bar (``tqdm``): the bar grammar reads every bar, its description decides.

When the same text is printed in several start-up phases (other functions, other releases, the
``also`` phases of its function), the note takes the earliest: a line printed in weight loading
or in the memory pool says that the server got at least to weight loading, never more.

    python scripts/sglang_notes.py        # rewrites grammars/sglang/notes.json and noise.json's `skipped`

``python scripts/knowledge.py --update`` runs it first, then measures.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knowledge import (  # the scripts folder is not a package: found through sys.path
    NOISE,
    PRINTED,
    ROOT,
    START_UP_PHASES,
    catalogue,
    log_line,
    render,
    versions,
)

NOTES = ROOT / "grammars" / "sglang" / "notes.json"
# the areas (mine_sglang.START_UP_FILES) only the scheduler processes run: a line of theirs without a
# rank tag is TP0's (a single-GPU server's); the others (the model config, utils, the DP controller,
# disaggregation's bootstrap) run in the main process too, and their line is the rank it is tagged with
SCHEDULER_AREAS = {
    "scheduler", "tp_worker", "model_runner", "memory_pool", "weight_loading", "distributed", "cuda_graph",
    "speculative", "lora",
}
MIN_LITERAL = 12  # literal characters of the first line, at least
MIN_WORDS = 2  # words (runs of letters) in it, at least

TOO_SHORT = "too little literal text to be specific (fewer than {n} characters or {w} words outside the values)"
TIED = "printed by a function that roots of several phases reach at the same distance: its own phase is no evidence"
SERVING = "the same text is printed while the server serves too: it says nothing about start-up"
BAR = "a progress bar: the bar grammar reads every bar and its description decides its evidence"
MULTI_PHASE = (
    "printed in several start-up phases ({phases}: the call graph reaches it from the roots of each, or "
    "releases differ): its note says only the earliest, {earliest}"
)

_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_PERCENT = re.compile(r"%%|%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[sdifrgexXcaou]")
_WORD = re.compile(r"[A-Za-z]{2,}")


def pieces(message: dict) -> list[str] | None:
    """The literal pieces of the message's first line, between its placeholders: n pieces for
    n - 1 placeholders ('' when the line starts or ends with one). None for a runtime value."""
    fmt, template = message["format"], message["template"]
    if fmt in ("expr", "none"):
        return None
    out, current = [], ""
    if fmt in ("fstring", "format"):
        pattern, escapes = _FIELD, {"{{": "{", "}}": "}"}
    elif fmt == "percent":
        pattern, escapes = _PERCENT, {"%%": "%"}
    else:
        pattern, escapes = None, {}
    pos = 0
    for m in pattern.finditer(template) if pattern else ():
        current += template[pos : m.start()]
        if m.group(0) in escapes:
            current += escapes[m.group(0)]
        else:
            out.append(current)
            current = ""
        pos = m.end()
    current += template[pos:]
    out.append(current)
    return _first_line(out)


def _first_line(parts: list[str]) -> list[str] | None:
    """The pieces of the first line of the message that shows anything (SGLang's prefix is on
    that line only; the rest follow as lines of their own), as ``render`` takes it."""
    joined = _HOLE.join(parts)
    for line in joined.split("\n"):
        if line.replace(_HOLE, "x").strip():
            kept = line.split(_HOLE)
            kept[0], kept[-1] = kept[0].lstrip(), kept[-1].rstrip()
            return kept
    return None


_HOLE = "\x00"  # a placeholder, while the pieces are split into lines


def literal_text(parts: list[str]) -> str:
    return "".join(parts)


def specific(parts: list[str]) -> bool:
    text = literal_text(parts)
    return len(text.strip()) >= MIN_LITERAL and len(_WORD.findall(text)) >= MIN_WORDS


@dataclass
class Candidate:
    parts: tuple[str, ...]
    phases: set[str] = field(default_factory=set)
    levels: set[str] = field(default_factory=set)
    releases: set[str] = field(default_factory=set)
    scheduler: bool = False
    main: bool = False
    skip: str | None = None
    templates: set[str] = field(default_factory=set)


def _function_entry(f: dict, function: str) -> dict:
    return f.get("phases", {}).get(function, {})


def _read_by_grammar(path: str, area: str, message: dict) -> bool:
    """Does a grammar rule read the line already (the message rendered as knowledge.py does), and
    say its phase? A rule whose evidence is the note of its message (``ByLine("note")``: a
    feature disabled, SGLang's own ``WARNING:`` lines) reads it, and the note says the phase."""
    from logphase.packs.rows import ByLine
    from logphase.reading.envelope import split_envelope
    from logphase.recognising.classify import classify
    from logphase.recognising.messages import MESSAGES
    from logphase.vocabulary.events import LineInfo

    text = render(message)
    if text is None:
        return False
    line = log_line(path, area, message, text)
    env = split_envelope(line)
    info = LineInfo(line=1, offset=0, raw=line, ts=None, ts_inherited=False, rank=None)
    event = classify(env, info)
    if event is None:
        return False
    row = MESSAGES.get(event.rule or event.kind)
    return row is None or row.evidence != ByLine("note")


def collect() -> tuple[dict[tuple[str, ...], Candidate], list[dict]]:
    """The candidate notes by their pieces, and the skipped messages (with their reason)."""
    found: dict[tuple[str, ...], Candidate] = {}
    skipped: dict[tuple[str, str], dict] = {}
    serving: set[tuple[str, ...]] = set()
    for version in versions():
        for path, f in catalogue(version)["files"].items():
            for m in f["messages"]:
                if m["level"] not in PRINTED:
                    continue
                parts = pieces(m)
                if parts is None:
                    continue
                entry = _function_entry(f, m["function"])
                if m.get("phase") == "ready" or "ready" in entry.get("also", []):
                    serving.add(tuple(parts))
                if m.get("phase") not in START_UP_PHASES:
                    continue
                if _deliberate_noise(m):
                    continue  # listed in noise.json `messages`, with its reason: no evidence at all
                reason = _reason(m, entry, parts)
                if reason is None and _read_by_grammar(path, f["area"], m):
                    continue
                if reason is not None:
                    skipped.setdefault((m["template"], reason), {"template": m["template"], "reason": reason})
                    continue
                c = found.setdefault(tuple(parts), Candidate(tuple(parts)))
                c.phases.add(m["phase"])
                c.phases.update(p for p in entry.get("also", []) if p in START_UP_PHASES)
                c.levels.add(m["level"])
                c.releases.add(version)
                c.templates.add(m["template"])
                if f["area"] in SCHEDULER_AREAS:
                    c.scheduler = True
                else:
                    c.main = True
    for parts, c in list(found.items()):
        if parts in serving:
            for template in c.templates:
                skipped.setdefault((template, SERVING), {"template": template, "reason": SERVING})
            del found[parts]
        elif len(c.phases) > 1:
            phases = sorted(c.phases, key=START_UP_PHASES.index)
            reason = MULTI_PHASE.format(phases=", ".join(phases), earliest=phases[0])
            for template in c.templates:
                skipped.setdefault((template, reason), {"template": template, "reason": reason})
    return found, sorted(skipped.values(), key=lambda e: (e["template"], e["reason"]))


def _deliberate_noise(message: dict) -> bool:
    """noise.json `messages` lists it (by the start of its template): a line that says nothing
    of the phase it is printed in, deliberately no note."""
    entries = json.loads(NOISE.read_text())["messages"]
    return any(message["template"].startswith(e["template"]) for e in entries)


def _reason(message: dict, entry: dict, parts: list[str]) -> str | None:
    if message["level"] == "tqdm":
        return BAR
    if entry.get("tied"):
        return TIED
    if not specific(parts):
        return TOO_SHORT.format(n=MIN_LITERAL, w=MIN_WORDS)
    return None


COLUMNS = ("pieces", "phase", "level", "process", "releases")


def notes_data(found: dict[tuple[str, ...], Candidate]) -> dict:
    releases = versions()
    rows = []
    for parts, c in sorted(found.items()):
        rows.append(
            [
                list(parts),
                min(c.phases, key=START_UP_PHASES.index),
                min(c.levels, key=PRINTED.index),
                # printed by the scheduler processes only (a rank's: without a rank tag, TP0's), or
                # by the main process too
                "scheduler" if c.scheduler and not c.main else "main",
                [releases.index(v) for v in sorted(c.releases, key=releases.index)],
            ]
        )
    return {
        "schema": 1,
        "generator": "scripts/sglang_notes.py",
        "about": (
            "Start-up messages of the SGLang catalogue that no grammar rule reads, one row each: the literal "
            "pieces of its first line (the text between its placeholders), the earliest phase it is printed in, "
            "its level, the process that prints it (`scheduler`: the scheduler processes only, a rank's; `main`: the main "
            "process, or either), the releases "
            "(indices into `releases`) that print it. Read by logphase/recognising/notes.py: a start-up line no "
            "grammar reads that matches a note is weak evidence of its phase. Regenerate: "
            "python scripts/sglang_notes.py (python scripts/knowledge.py --update runs it)"
        ),
        "releases": releases,
        "columns": list(COLUMNS),
        "notes": rows,
    }


def dumps(data: dict) -> str:
    """One note a line: compact, and a regeneration's diff shows the notes that changed."""
    head = {k: v for k, v in data.items() if k != "notes"}
    body = ",\n".join(json.dumps(row, separators=(",", ":"), ensure_ascii=False) for row in data["notes"])
    return json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "notes": [\n' + body + "\n ]\n}\n"


def write() -> tuple[int, int]:
    """Rewrite notes.json and noise.json's `skipped`; returns (notes, skipped)."""
    found, skipped = collect()
    data = notes_data(found)
    NOTES.write_text(dumps(data))
    noise = json.loads(NOISE.read_text())
    noise["unplaced"] = skipped
    noise["about_unplaced"] = (
        "`unplaced`: written by scripts/sglang_notes.py, matched by the whole template: start-up messages whose "
        "text cannot place a line in the phase it is printed in, with the reason; those printed in several "
        "phases stay in grammars/sglang/notes.json with the earliest, the others are left out of it"
    )
    NOISE.write_text(json.dumps(noise, indent=1, ensure_ascii=False) + "\n")
    return len(data["notes"]), len(skipped)


def main() -> int:
    n, skipped = write()
    print(f"{NOTES.relative_to(ROOT)}: {n} notes ({NOTES.stat().st_size} bytes); {skipped} messages skipped as noise")
    return 0


if __name__ == "__main__":
    sys.exit(main())
