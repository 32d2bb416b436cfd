"""The start-up notes (logphase/recognising/notes.py, grammars/sglang/notes.json): a line no grammar
reads that is a catalogued start-up message is weak evidence of the phase it is printed in.

The matching is checked on made-up templates (a rendered line matches, a near miss does not), the
shipped notes on themselves (each note, its placeholders filled, is found), and the evidence
through the public API: a note enters its phase only from before it, never moves a run back, says
nothing once the run is ready, is no failure at error level, and is read on the bulk path too.
"""

from __future__ import annotations

import json

import pytest

import logphase
from logphase.packs import PACKS
from logphase.packs.grammars import grammar_dir
from logphase.recognising.notes import Note, NoteBook, matches, note_key, notebook, read_notes
from logphase.vocabulary.phases import Phase

NOTES_FILE = grammar_dir() / "sglang" / "notes.json"
DATA = json.loads(NOTES_FILE.read_text(encoding="utf-8"))
ROWS = read_notes(DATA)


def _note(*pieces: str, phase: Phase = Phase.MEMORY_POOL, scheduler: bool = True) -> Note:
    return Note(pieces=pieces, phase=phase, level="info", scheduler=scheduler)


# -- the matching ----------------------------------------------------------------------------------


def test_a_template_with_placeholders_matches_its_rendered_line_and_not_a_near_miss() -> None:
    pieces = ("Allocating ", " GB host memory for the indexer (layout=", ").")
    assert matches(pieces, "Allocating 12.34 GB host memory for the indexer (layout=page_first).")
    assert matches(pieces, "Allocating  GB host memory for the indexer (layout=)."), "a value may be empty"
    assert not matches(pieces, "Allocating 12.34 GB host memory for the indexer (layout=page_first)"), "cut"
    assert not matches(pieces, "Allocating 12.34 GB device memory for the indexer (layout=page_first).")
    assert not matches(pieces, "Now Allocating 12.34 GB host memory for the indexer (layout=x)."), "anchored"
    assert matches(("Plain text only.",), "Plain text only.") and not matches(("Plain text only.",), "Plain text only. x")


def test_literal_text_is_literal() -> None:
    pieces = ("max_total_tokens=", " is larger than [x] (+", ")")
    assert matches(pieces, "max_total_tokens=42 is larger than [x] (+7)")
    assert not matches(pieces, "max_total_tokens=42 is larger than x (+7)")


def test_pieces_are_found_in_order_without_overlap() -> None:
    pieces = ("a=", ", b=", ", a=", "")
    assert matches(pieces, "a=1, b=2, a=3")
    assert matches(pieces, "a=1, b=2, a=")
    assert not matches(pieces, "a=1, a=3, b=2"), "out of order"
    assert not matches(("ab", "b"), "ab"), "the first and the last piece cannot share characters"
    assert matches(("x ", " y ", " z"), "x  y  y  z"), "a value may hold a later piece's text"


def test_a_long_line_that_almost_matches_is_decided() -> None:
    """Lazy wildcards in a regular expression backtrack polynomially on a long line that almost
    matches; the piece search is linear (a bound on the work, not on the clock: it finishes)."""
    pieces = ("Failed ", " ", " ", " ", " ", " to load.")
    assert not matches(pieces, "Failed " + "x " * 2000 + "to load")
    assert matches(pieces, "Failed " + "x " * 2000 + "to load.")


def test_a_note_is_indexed_by_its_first_whole_word() -> None:
    assert note_key(("Disable hybrid SWA memory for ", " as it is not yet supported.")) == "Disable"
    assert note_key(("[unified-memory-pool] total_bytes=", "")) == "[unified"
    assert note_key(("", " is disabled because this process group spans across nodes.")) is None
    assert note_key(("Load", " weights now")) is None, "a value right after the word changes the word"


def test_the_notebook_finds_by_first_word_and_by_longest_piece() -> None:
    book = NoteBook(
        [
            _note("Disable hybrid SWA memory for ", " as it is not yet supported.", phase=Phase.LAUNCH),
            _note("", " is disabled because this process group spans across nodes.", phase=Phase.DISTRIBUTED_INIT),
        ]
    )
    found = book.find("Disable hybrid SWA memory for Gemma3ForCausalLM as it is not yet supported.")
    assert found is not None and found.phase is Phase.LAUNCH
    headless = book.find("Custom allreduce is disabled because this process group spans across nodes.")
    assert headless is not None and headless.phase is Phase.DISTRIBUTED_INIT
    assert book.find("Disable hybrid SWA memory for Gemma3ForCausalLM.") is None
    assert book.find("Zorglub frobnicated the quux.") is None


def test_the_bulk_path_finds_every_line_that_may_be_a_note() -> None:
    """NoteBook.hits: past the first word of each line's message that is a key's word, and past a
    headless note's longest piece: every line ``find`` accepts is among them (a superset)."""
    book = NoteBook(
        [
            _note("Disable hybrid SWA memory for ", " as it is not yet supported.", phase=Phase.LAUNCH),
            _note("", " is disabled because this process group spans across nodes.", phase=Phase.DISTRIBUTED_INIT),
        ]
    )
    lines = [
        b"[2026-01-01 10:00:00 TP0] Disable hybrid SWA memory for X as it is not yet supported.",
        b"[2026-01-01 10:00:00 TP0] Key 1 already exists. Skipped.",
        b"[2026-01-01 10:00:01] Custom allreduce is disabled because this process group spans across nodes.",
        b"junk\r  Disable hybrid SWA memory for Y as it is not yet supported.",
        b"Enable nothing at all here",
    ]
    data = b"\n" + b"\n".join(lines) + b"\n"
    starts = [data.index(line) for line in lines]
    hit_lines = {max(i for i, start in enumerate(starts) if start < at) for at in book.hits(data)}
    assert hit_lines == {0, 2, 3}


def test_the_most_specific_note_wins() -> None:
    book = NoteBook(
        [
            _note("Using ", " as backend of ", " kernels.", phase=Phase.LAUNCH),
            _note("Using ", " as backend of LoRA kernels.", phase=Phase.WEIGHT_LOADING),
        ]
    )
    found = book.find("Using csgmv as backend of LoRA kernels.")
    assert found is not None and found.phase is Phase.WEIGHT_LOADING


# -- the shipped notes -----------------------------------------------------------------------------


def test_the_notes_file_is_well_formed() -> None:
    assert DATA["columns"] == ["pieces", "phase", "level", "process", "releases"]
    assert len(ROWS) == len(DATA["notes"]) > 500
    for row in DATA["notes"]:
        pieces, phase, level, process, releases = row
        assert any(p.strip() for p in pieces) and all("\n" not in p for p in pieces), row
        assert phase != "ready" and Phase(phase)
        assert level in ("info", "warning", "error", "exception", "critical", "print"), row
        assert process in ("main", "scheduler"), row
        assert releases and all(0 <= i < len(DATA["releases"]) for i in releases), row
    assert NOTES_FILE.stat().st_size < 300_000, "keep the runtime data compact"


# every pack's notes (SGLang's, vLLM's): the notebook holds them all
PACK_ROWS = [
    note
    for pack in PACKS
    if pack.notes is not None
    for note in read_notes(json.loads((grammar_dir() / pack.name / pack.notes).read_text(encoding="utf-8")))
]


def test_every_shipped_note_finds_itself_with_values_filled_in() -> None:
    book = notebook()
    assert len(book) == len(PACK_ROWS) > len(ROWS)
    for note in PACK_ROWS:
        line = "42".join(note.pieces)
        found = book.find(line)
        assert found is not None, line
        # another note may match the same line first only when it is as specific or more
        assert found == note or found.literal >= note.literal, (line, found)


# -- the evidence, through the public API ----------------------------------------------------------


def _memory_pool_note() -> str:
    note = next(n for n in ROWS if n.phase is Phase.MEMORY_POOL and n.scheduler and n.level == "info" and n.pieces[0])
    return "42".join(note.pieces)


def _launch_note() -> str:
    note = next(n for n in ROWS if n.phase is Phase.LAUNCH and n.scheduler and n.pieces[0])
    return "42".join(note.pieces)


def _error_note() -> str:
    note = next(n for n in ROWS if n.level == "error" and n.phase is not Phase.LAUNCH and n.pieces[0])
    return "42".join(note.pieces)


def test_a_silent_window_learns_its_phase_from_one_note() -> None:
    report = logphase.parse_text(f"[2026-01-01 10:00:00 TP0] {_memory_pool_note()}\n")
    assert report.phase is Phase.MEMORY_POOL
    assert report.lines.events == 1 and report.lines.unrecognized == 0


def test_a_note_never_moves_a_run_back() -> None:
    log = (
        "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB\n"
        "[2026-01-01 10:00:09 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=60.00 GB, mem usage=10.00 GB.\n"
        "[2026-01-01 10:00:10 TP0] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB\n"
        f"[2026-01-01 10:00:11 TP0] {_launch_note()}\n"
    )
    report = logphase.parse_text(log)
    assert report.lines.unrecognized == 0
    assert report.phase is Phase.MEMORY_POOL
    assert [p.name for p in report.phases][-1] is Phase.MEMORY_POOL


def test_an_error_level_note_is_no_failure() -> None:
    report = logphase.parse_text(f"[2026-01-01 10:00:00 TP0] {_error_note()}\n")
    assert report.failure is None
    assert report.lines.events == 1


def test_after_ready_notes_say_nothing() -> None:
    log = (
        "[2026-01-01 10:00:00] The server is fired up and ready to roll!\n"
        f"[2026-01-01 10:00:01 TP0] {_memory_pool_note()}\n"
    )
    report = logphase.parse_text(log)
    assert report.phase is Phase.READY
    assert report.lines.unrecognized == 1, "after ready a note is not read: the bulk path could not read it"


@pytest.mark.parametrize("filler_lines", [10, 30_000])
def test_a_note_is_read_on_the_bulk_path_too(filler_lines: int) -> None:
    """Past the first megabyte, lines without an event's literal are counted in bulk (quiet runs):
    before ready they are read one by one, so a note among them is found as on the line path."""
    filler = "".join(
        f"[2026-01-01 {10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d} TP0] Key {i} of the cache already exists. Skipped.\n"
        for i in range(filler_lines)
    )
    tail = f"[2026-01-01 23:00:00 TP0] {_memory_pool_note()}\n"
    report = logphase.parse_text("[2026-01-01 09:59:59 TP0] Load weight begin. avail mem=70.00 GB\n" + filler + tail)
    assert report.phase is Phase.MEMORY_POOL
    assert report.lines.events == 2


# -- the generated data is what the generator writes -----------------------------------------------


def _script(name: str):  # type: ignore[no-untyped-def]
    import importlib.util
    import sys

    path = grammar_dir().parent / "scripts" / f"{name}.py"
    if not path.is_file():
        pytest.skip("the scripts are not installed with the package")
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_notes_and_unplaced_are_what_the_generator_writes() -> None:
    gen = _script("sglang_notes")
    found, unplaced = gen.collect()
    assert NOTES_FILE.read_text(encoding="utf-8") == gen.dumps(gen.notes_data(found)), (
        "grammars/sglang/notes.json is stale: python scripts/knowledge.py --update"
    )
    noise = json.loads((grammar_dir() / "sglang" / "noise.json").read_text(encoding="utf-8"))
    assert noise["unplaced"] == unplaced
    templates = {
        m["template"]
        for v in gen.versions()
        for f in gen.catalogue(v)["files"].values()
        for m in f["messages"]
    }
    for entry in unplaced:
        assert entry["template"] in templates and len(entry["reason"]) > 20, entry


def test_a_window_that_starts_with_a_launch_note_is_still_cut() -> None:
    """A launch note is printed anywhere in launch: a window that starts with one did not see the
    launch begin, so the first phase entered after it says that the log is partial."""
    note = next(n for n in ROWS if n.phase is Phase.LAUNCH and n.pieces[0] and len(n.pieces) == 1)
    window = (
        f"[2026-01-01 10:00:00 TP0] {note.pieces[0]}\n"
        "[2026-01-01 10:00:01 TP0] Init torch distributed begin.\n"
    )
    report = logphase.parse_text(window)
    assert report.lines.unrecognized == 0
    assert "partial_log" in {w.kind for w in report.warnings}
    assert report.total_startup_s is None
    alone = logphase.parse_text(f"[2026-01-01 10:00:00] {note.pieces[0]}\n")
    assert alone.phase is Phase.LAUNCH
