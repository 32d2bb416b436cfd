"""Reading an error's text with the cause table: the error grammars' phrases (``grammars/shared/errors.lark``
and each pack's, e.g. ``grammars/sglang/sglang_errors.lark``), compiled into one regular expression
per rule (the alternatives of every grammar that defines it), tried in the order of ``causes.SIGNATURES``."""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from logphase.pipeline.causes import SIGNATURES, Cause, Signature, SignatureRole
from logphase.pipeline.grammars import rules, terminal_pattern
from logphase.pipeline.phases import Phase
from logphase.servers import PACKS

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


@cache
def _compiled() -> tuple[tuple[Signature, re.Pattern[str]], ...]:
    alternatives: dict[str, list[str]] = {}
    for source in ERROR_GRAMMARS:
        for name, expansion in rules(source):
            if name == "start":
                continue
            parts = [f"(?:{terminal_pattern(source, s.name)})" for s in expansion if s.terminal]
            alternatives.setdefault(name, []).append("".join(parts))
    return tuple((s, re.compile("|".join(alternatives[s.rule]))) for s in SIGNATURES)


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


def _first_row(text: str) -> tuple[Signature, int] | None:
    for signature, pattern in _compiled():
        m = pattern.search(text)
        if m is not None:
            return signature, m.end()
    return None
