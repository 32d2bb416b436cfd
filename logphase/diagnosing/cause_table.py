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
import itertools

from logphase.packs.rows import Signature
from logphase.vocabulary.causes import Cause

__all__ = ["ECHO_PREFERENCE", "SIGNATURES", "SIGNATURE_OF_RULE", "Signature"]


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """Every pack's signature rows, in the order of their ranks."""
    from logphase.packs import PACKS

    rows = sorted((s for pack in PACKS for s in pack.signatures), key=lambda s: s.rank)
    for before, after in itertools.pairwise(rows):
        if before.rank == after.rank:
            raise ValueError(f"signatures {before.rule!r} and {after.rule!r}: one rank, no order")
    return tuple(rows)


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
