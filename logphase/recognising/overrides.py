"""The settings a server changes on its own, known from its release catalogue: ``parameter_override``.

A pack may ship *overrides* (``Pack.overrides``: a JSON file in its grammar folder, generated from
its catalogue by ``scripts/override_rows.py``): every message its releases print next to an
assignment to one of their settings, as the literal pieces of its first line, the setting, what
each placeholder holds (the value asked for, the value in force, other) and the constant the source
assigns. A line whose whole message is one of them becomes a ``ParameterOverride`` (the report's
``ignored_parameter`` warning) instead of what it was: a line no grammar read, a release's start-up
note, or a grammar's note row. It keeps that one's phase evidence (the note's rule and phase, the
row's rule), so reading it as an override moves no phase. Like the notes, overrides are read until
the run is ready (the engine asks): the bulk path takes a line that may be one the long way only
until then, and both paths must read a line alike.

Nothing here names a server: the rows are the packs' data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from logphase.packs import PACKS
from logphase.recognising.notes import NoteBook
from logphase.recognising.plain import MAX_PARSE_CHARS
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo

# the rule of an override no grammar and no note reads (no phase evidence)
OVERRIDE_RULE = "catalogue_override"
_QUOTES = "'\"`"


@dataclass(frozen=True)
class Override:
    """One catalogued override message: its literal pieces and what its placeholders hold."""

    pieces: tuple[str, ...]  # n pieces around n - 1 placeholders
    setting: str
    roles: tuple[str, ...]  # per placeholder: requested | actual | other
    value: str | None  # the constant the source assigns, when it does

    @property
    def literal(self) -> int:
        return sum(map(len, self.pieces))

    def values(self, text: str) -> tuple[str | None, str | None]:
        """(requested, actual) the message says: its placeholders' text, else the constant the
        source assigns as the value in force (the value asked for is then the configuration dump's,
        when the report has one that differs: reporting/build_report.py)."""
        holes = placeholders(self.pieces, text)
        requested = actual = None
        for role, value in zip(self.roles, holes, strict=False):
            if role == "requested" and requested is None:
                requested = value.strip().strip(_QUOTES) or None
            elif role == "actual" and actual is None:
                actual = value.strip().strip(_QUOTES) or None
        return requested, actual if actual is not None else self.value


def placeholders(pieces: Sequence[str], text: str) -> list[str]:
    """The text of each placeholder of a message the pieces match (``notes.matches``): each middle
    piece at its leftmost place after the one before."""
    if len(pieces) < 2:
        return []
    pos, end = len(pieces[0]), len(text) - len(pieces[-1])
    out = []
    for piece in pieces[1:-1]:
        at = text.find(piece, pos, end)
        if at < 0:
            return []
        out.append(text[pos:at])
        pos = at + len(piece)
    out.append(text[pos:end])
    return out


def read_overrides(data: dict[str, object]) -> list[Override]:
    """The rows of an overrides file (its ``columns``: pieces, setting, roles, value, ...)."""
    columns = list(data["columns"])  # type: ignore[call-overload]
    at = {name: columns.index(name) for name in ("pieces", "setting", "roles", "value")}
    return [
        Override(
            pieces=tuple(row[at["pieces"]]),
            setting=str(row[at["setting"]]),
            roles=tuple(row[at["roles"]]),
            value=None if row[at["value"]] is None else str(row[at["value"]]),
        )
        for row in data["overrides"]  # type: ignore[attr-defined]
    ]


@cache
def override_book() -> NoteBook[Override]:
    """Every pack's overrides (``Pack.overrides``, a file in the pack's grammar folder)."""
    rows: list[Override] = []
    for pack in PACKS:
        if pack.overrides is not None:
            rows.extend(read_overrides(json.loads((pack.folder / pack.overrides).read_text(encoding="utf-8"))))
    return NoteBook(rows)


def has_overrides() -> bool:
    return any(pack.overrides is not None for pack in PACKS)


def override_hits(data: bytes) -> list[int]:
    """``NoteBook.hits`` of every pack's overrides: where in a block a line may be one."""
    return override_book().hits(data)


def override_event(message: str, at: LineInfo, read: ev.EventBase | None) -> ev.EventBase | None:
    """The override a line is, as an event, keeping the phase evidence of what it was read as
    (``read``: a note, or None for a line nothing read); None when it is none."""
    if len(message) > MAX_PARSE_CHARS:
        return None
    text = message.strip()
    row = override_book().find(text)
    if row is None:
        return None
    requested, actual = row.values(text)
    rule = read.rule if read is not None and read.rule else OVERRIDE_RULE
    phase = read.phase if isinstance(read, ev.StartupNote) else None
    return at.event(
        ev.ParameterOverride, rule, setting=row.setting, requested=requested, actual=actual, message=text, phase=phase
    )


__all__ = ["OVERRIDE_RULE", "Override", "has_overrides", "override_book", "override_event", "override_hits", "placeholders"]
