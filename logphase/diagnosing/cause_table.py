"""The cause vocabulary, and the table that maps what an error says to a cause.

``Cause`` is what a failed start-up can be blamed on (the report's ``failure.cause``). ``SIGNATURES``
is the one rule for reading an error's text: each row names a rule of an error grammar (the
phrases: ``grammars/shared/errors.lark`` and each pack's own, ``grammars/sglang/sglang_errors.lark``),
the cause it means, its role and the phase it names. The rows are the packs'
(``logphase/packs/``); this module orders them by their ``rank``: the first row whose phrases
occur in the text decides, so echoes come first (they contain root words: 'NCCL error ... remote
process exited'), then wrappers, then root causes from the most specific to the most general. A
wrapper's row hands the text it quotes back to the table. A test checks that every rule of the
error grammars has its row and every row its rule.
"""

from __future__ import annotations

import functools

from logphase.packs.rows import Signature
from logphase.vocabulary.causes import Cause

__all__ = ["ECHO_PREFERENCE", "SIGNATURES", "SIGNATURE_OF_RULE", "Signature"]


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """Every pack's signature rows in one order: the shared pack's as it lists them, each server's
    rows just before the shared row each names (``Signature.before``; servers in the registry's
    order, each in its own order), the rest at the end."""
    from logphase.packs import PACKS

    shared = [s for pack in PACKS if not pack.server for s in pack.signatures]
    anchors = {s.rule for s in shared}
    placed: dict[str | None, list[Signature]] = {}
    for pack in PACKS:
        for row in pack.signatures if pack.server else ():
            if row.before is not None and row.before not in anchors:
                raise ValueError(f"signature {row.rule!r} of {pack.name}: before {row.before!r}, no shared row")
            placed.setdefault(row.before, []).append(row)
    ordered = [row for anchor in shared for row in (*placed.get(anchor.rule, ()), anchor)]
    return (*ordered, *placed.get(None, ()))


@functools.cache
def _by_rule() -> dict[str, Signature]:
    return {s.rule: s for s in signatures()}


# the table, and its rows by rule: assembled on first use (module __getattr__ below)
SIGNATURES: tuple[Signature, ...]
SIGNATURE_OF_RULE: dict[str, Signature]


def __getattr__(name: str) -> object:
    # SIGNATURES and SIGNATURE_OF_RULE are assembled on first use: the Cause vocabulary alone
    # (`logphase --help`, the schema) loads no pack
    if name == "SIGNATURES":
        return signatures()
    if name == "SIGNATURE_OF_RULE":
        return _by_rule()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# With no root cause in sight, the most telling echo names the failure: a kill says more than a
# dropped peer, which says more than 'a child failed'.
ECHO_PREFERENCE = (Cause.KILLED, Cause.NCCL_ERROR, Cause.DISTRIBUTED_TIMEOUT, Cause.CHILD_PROCESS_FAILED)
