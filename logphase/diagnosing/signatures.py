"""Reading an error's text with the cause table: the error grammars' phrases (``grammars/shared/errors.lark``
and each pack's, e.g. ``grammars/sglang/sglang_errors.lark``), compiled into one regular expression
per rule (the alternatives of every grammar that defines it), tried in the order of ``causes.SIGNATURES``."""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import NamedTuple

from logphase.diagnosing.cause_table import SIGNATURES, Signature
from logphase.packs import PACKS, kept_regex
from logphase.packs.derived import cached, digest
from logphase.packs.grammars import rules, terminal_pattern
from logphase.recognising.prefilter import folds_case, literal_factors
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import Phase

# a wrapper quoting a wrapper quoting ... (Ray around the graph wrapper around an OOM)
MAX_WRAPPER_DEPTH = 4


class Reading(NamedTuple):
    """What an error's text says: the row that decided, and the quoted text when wrappers led to it."""

    signature: Signature | None  # None: no row matched (an error logphase has no meaning for)
    cause: Cause | None
    role: SignatureRole
    phase: Phase | None  # the phase the text (or a wrapper around it) names
    hint: str | None


# every pack's error grammars, the shared one first
ERROR_GRAMMARS = tuple(g for pack in PACKS for g in pack.error_grammars)


class _Row:
    """A row of the table with its pattern, compiled on its first search (a start that reads one
    warning compiled all 54, ~20 ms); ``needs``: literals one of which every match holds (None: not
    known), looked for first with ``in``, so that a text without them compiles and searches nothing."""

    __slots__ = ("_pattern", "needs", "signature", "text")

    def __init__(self, signature: Signature, text: str, needs: frozenset[str] | None) -> None:
        self.signature = signature
        self.text = text
        self.needs = needs
        self._pattern: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        if self.needs is not None and not any(literal in text for literal in self.needs):
            return None
        if self._pattern is None:
            self._pattern = kept_regex.compile(self.text)
        return self._pattern.search(text)


@cache
def _compiled() -> tuple[_Row, ...]:
    alternatives: dict[str, list[str]] = {}
    for source in ERROR_GRAMMARS:
        for name, expansion in rules(source):
            if name == "start":
                continue
            parts = [f"(?:{terminal_pattern(source, s.name)})" for s in expansion if s.terminal]
            alternatives.setdefault(name, []).append("".join(parts))
    texts = ["|".join(alternatives[s.rule]) for s in SIGNATURES]
    return tuple(_Row(s, text, needs) for s, text, needs in zip(SIGNATURES, texts, _needed_literals(texts), strict=True))


def _needed_literals(texts: list[str]) -> list[frozenset[str] | None]:
    """``prefilter.literal_factors`` of each pattern (None for one that folds case: its literals may
    be written otherwise), kept on disk (derived.py) by the patterns' text: reading them parses each."""

    def build() -> list[list[str] | None]:
        return [None if folds_case(t) or (found := literal_factors(t)) is None else sorted(found) for t in texts]

    def load(data: object) -> list[frozenset[str] | None]:
        if not isinstance(data, list) or len(data) != len(texts):
            raise ValueError("needed literals: not one entry a pattern")
        return [None if found is None else frozenset(str(s) for s in found) for found in data]

    return cached("signature-literals", digest(texts), build, load)


def rules_in_grammar() -> set[str]:
    """The signature rules the error grammars define (for the table's tests)."""
    return {origin for g in ERROR_GRAMMARS for origin, _ in rules(g) if origin != "start"}


def read_error(text: str) -> Reading:
    """The cause an error's text names, through any wrappers it is quoted in."""
    phase: Phase | None = None
    hint: str | None = None
    for _ in range(MAX_WRAPPER_DEPTH):
        found = _first_row(text)
        if found is None:
            break
        signature, end = found
        phase = phase or signature.phase
        hint = hint or signature.hint
        if signature.role is not SignatureRole.WRAPPER:
            return Reading(signature, signature.cause, signature.role, signature.phase or phase, signature.hint or hint)
        text = text[end:]
    return Reading(None, None, SignatureRole.ROOT, phase, hint)


def deciding_row(text: str) -> Signature | None:
    """The row that decides a text (a wrapper's own row, not the row of what it quotes)."""
    found = _first_row(text)
    return found[0] if found else None


# Texts repeat (each rank prints a warning, a library repeats one per layer: 1,465 reads of 94 texts in
# the real logs), and a reading depends on the text alone.
@lru_cache(maxsize=1024)
def _first_row(text: str) -> tuple[Signature, int] | None:
    for row in _compiled():
        m = row.search(text)
        if m is not None:
            return row.signature, m.end()
    return None
