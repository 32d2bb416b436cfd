"""Start-up lines no grammar reads, known from a server's release catalogue: weak phase evidence.

A pack may ship *notes* (``Pack.notes``: a JSON file in its grammar folder, generated from its
catalogue by a script, e.g. ``scripts/sglang_notes.py``): every message the server prints while
it starts that no grammar rule reads, as the literal pieces of its first line (the text between
its placeholders), the earliest phase it is printed in and the process that prints it. A line
that no grammar recognised is looked up here (``find``): by the first word of its message, then
a match of the whole message, the literal pieces in order with anything between them.
A match becomes a ``StartupNote`` whose phase is weak evidence (``MarkerRole.WEAK``: it enters the phase
only from before it, so it never moves a run backwards). Notes are read only until the run is
ready (the engine asks): after that they could say nothing.

Nothing here names a server: the rows are the packs' data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Generic, Protocol, TypeVar

from logphase.packs import PACKS
from logphase.recognising.plain import MAX_PARSE_CHARS
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo
from logphase.vocabulary.phases import MarkerRole, Phase, Transition

# what a note is indexed by, and a message looked up by: its leading non-word characters and first
# word (the generator indexes a note by it only when its literal text holds that whole word)
KEY = re.compile(r"[^\w\s]*\w+")
KEY_WORD = re.compile(r"\w+")
# a message's first word in a block of lines (bulk path; a block starts with the \n before its first
# line): after a \n, a bare \r (a logical line of its own) or a ']' (SGLang's prefix), past any
# other non-word bytes. A charset first: the regex engine skips to it
_FIRST_WORD = re.compile(rb"[\n\r\]][^\w\n]*(\w+)")
# the rule of a note's event: a scheduler's line (a single-GPU server prints it without a rank tag,
# and it is then TP0's, as the message table's scheduler rows), or one the main process prints
# (the rank it is tagged with, if any: some are printed by either)
SCHEDULER_NOTE = "catalogue_note_scheduler"
SERVER_NOTE = "catalogue_note"
NOTE_RULES = (SCHEDULER_NOTE, SERVER_NOTE)


@dataclass(frozen=True)
class Note:
    """One catalogued start-up message: its literal pieces and the phase it is printed in."""

    pieces: tuple[str, ...]  # n pieces around n - 1 placeholders ('' when the line starts or ends with one)
    phase: Phase
    level: str
    scheduler: bool  # printed by the scheduler processes only (else by the main process, or either)

    @property
    def literal(self) -> int:
        return sum(map(len, self.pieces))


def matches(pieces: Sequence[str], text: str) -> bool:
    """Whether ``text`` is the whole message: the pieces in order, anything in each placeholder.
    Linear: each middle piece at its leftmost place after the one before (what is left for the
    later pieces is then the most there can be), the first a prefix and the last a suffix; no
    regular expression, whose lazy wildcards backtrack polynomially on a long line."""
    first, last = pieces[0], pieces[-1]
    if len(pieces) == 1:
        return text == first
    if not text.startswith(first) or not text.endswith(last):
        return False
    pos, end = len(first), len(text) - len(last)
    if end < pos:
        return False
    for piece in pieces[1:-1]:
        at = text.find(piece, pos, end)
        if at < 0:
            return False
        pos = at + len(piece)
    return True


class Pieces(Protocol):
    """What a book holds: a message's literal pieces (notes, and overrides.py's rows)."""

    @property
    def pieces(self) -> tuple[str, ...]: ...

    @property
    def literal(self) -> int: ...


N = TypeVar("N", bound=Pieces)


class NoteBook(Generic[N]):
    """The notes of every pack (or any rows of literal pieces), indexed by their first word; the
    few that start with a value by their longest piece."""

    def __init__(self, notes: Sequence[N]) -> None:
        by_key: dict[str, list[N]] = {}
        self._headless: list[tuple[str, N]] = []  # (its longest piece, the note)
        for note in sorted(notes, key=lambda n: -n.literal):  # the most specific first
            key = note_key(note.pieces)
            if key is not None and key.isascii():  # (the bulk path finds ASCII words only)
                by_key.setdefault(key, []).append(note)
            else:
                self._headless.append((max(note.pieces, key=len), note))
        # each key's notes, and their first pieces (one C call rejects a line none starts with)
        self._by_key = {key: (tuple(n.pieces[0] for n in found), found) for key, found in by_key.items()}
        self._key_words: frozenset[bytes] | None = None

    def __len__(self) -> int:
        return sum(len(found) for _, found in self._by_key.values()) + len(self._headless)

    def find(self, message: str) -> N | None:
        """The note the whole message is (the most specific), or None."""
        text = message.strip()
        m = KEY.match(text)
        bucket = self._by_key.get(m.group(0)) if m is not None else None
        if bucket is not None and text.startswith(bucket[0]):
            for note in bucket[1]:
                if matches(note.pieces, text):
                    return note
        for piece, note in self._headless:
            if piece in text and matches(note.pieces, text):
                return note
        return None

    def hits(self, data: bytes) -> list[int]:
        """Where in a block of lines (bytes) a line may be a note: past the first word of each
        message (after a ``\n``, a ``\r`` or SGLang's ``]``) that is a note's key word, and
        past each occurrence of a headless note's longest piece. A superset of the lines
        ``find`` accepts: the engine reads them the long way, the others in bulk. ``data``
        starts with the ``\n`` before its first line."""
        words = self._words()
        found: list[int] = []
        if not words.isdisjoint(_FIRST_WORD.findall(data)):  # most blocks: one pass, no candidate
            found = [m.end() for m in _FIRST_WORD.finditer(data) if m.group(1) in words]
        for piece in {piece.encode("utf-8", "replace") for piece, _ in self._headless}:
            at = data.find(piece)
            while at >= 0:
                found.append(at + len(piece))
                at = data.find(piece, at + 1)
        return sorted(found)

    def _words(self) -> frozenset[bytes]:
        if self._key_words is None:
            # the word of each key (its leading non-word characters aside): a line's first word in
            # bytes is found after any non-word bytes, which the key's leading characters are among
            self._key_words = frozenset(_word_of(key).encode() for key in self._by_key)
        return self._key_words


def _word_of(key: str) -> str:
    found = KEY_WORD.search(key)
    assert found is not None, f"a key without a word: {key!r}"
    return found.group(0)


def note_key(pieces: Sequence[str]) -> str | None:
    """A note's index key: the first word of its message when its first piece holds that whole
    word (a value right after it would change the word: 'Load{x}' prints 'Loading'), else None."""
    head = pieces[0].lstrip()
    m = KEY.match(head)
    if m is None or (m.end() == len(head) and len(pieces) > 1):
        return None
    return m.group(0)


def read_notes(data: dict[str, object]) -> list[Note]:
    """The rows of a notes file (its ``columns``: pieces, phase, level, process, releases)."""
    columns = list(data["columns"])  # type: ignore[call-overload]
    at = {name: columns.index(name) for name in ("pieces", "phase", "level", "process")}
    return [
        Note(
            pieces=tuple(row[at["pieces"]]),
            phase=Phase(row[at["phase"]]),
            level=str(row[at["level"]]),
            scheduler=row[at["process"]] == "scheduler",
        )
        for row in data["notes"]  # type: ignore[attr-defined]
    ]


@cache
def notebook() -> NoteBook[Note]:
    """Every pack's notes (``Pack.notes``, a file in the pack's grammar folder)."""
    notes: list[Note] = []
    for pack in PACKS:
        if pack.notes is not None:
            path = pack.folder / pack.notes
            notes.extend(read_notes(json.loads(path.read_text(encoding="utf-8"))))
    return NoteBook(notes)


def note_hits(data: bytes) -> list[int]:
    """``NoteBook.hits`` of every pack's notes."""
    return notebook().hits(data)


def has_notes() -> bool:
    return any(pack.notes is not None for pack in PACKS)


def note_event(message: str, at: LineInfo) -> ev.EventBase | None:
    """The start-up note a line no grammar read is, as an event; None when it is none."""
    if len(message) > MAX_PARSE_CHARS:
        return None  # as for the grammars: no message of the catalogue is this long
    note = notebook().find(message)
    if note is None:
        return None
    rule = SCHEDULER_NOTE if note.scheduler else SERVER_NOTE
    return at.event(ev.StartupNote, rule, message=message.strip(), phase=note.phase)


def note_evidence(event: ev.EventBase) -> Transition | None:
    """A catalogued note's evidence: weak, of the phase it is printed in, for the rank that printed it
    (the main process's line has no rank tag: the server's). A note of launch is the server's
    whoever printed it: it tells only that the server was launched, which the ranks' own first
    lines (distributed init) say for them; it does not open a launch of their own."""
    phase = getattr(event, "phase", None)
    if event.rule not in NOTE_RULES or not isinstance(phase, Phase):
        return None
    return _weak(phase)


def _weak(phase: Phase) -> Transition:
    return Transition(phase, MarkerRole.WEAK, server_level=phase is Phase.LAUNCH)


def catalogued_evidence(message: str) -> Transition | None:
    """The evidence of a line a grammar reads without saying its phase (a row whose evidence is
    ``ByLine("note")``: SGLang disabling a feature, its own ``WARNING:`` lines, printed in different
    phases by different functions): the phase of the note its whole message is, weak, as a note's.
    None when the catalogue does not know the message."""
    if len(message) > MAX_PARSE_CHARS:
        return None
    note = notebook().find(message)
    return None if note is None else _weak(note.phase)


__all__ = [
    "NOTE_RULES",
    "SCHEDULER_NOTE",
    "Note",
    "NoteBook",
    "catalogued_evidence",
    "has_notes",
    "matches",
    "note_event",
    "note_evidence",
    "note_hits",
    "notebook",
]
