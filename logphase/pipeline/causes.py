"""The cause vocabulary, and the table that maps what an error says to a cause.

``Cause`` is what a failed start-up can be blamed on (the report's ``failure.cause``). ``SIGNATURES``
is the one rule for reading an error's text: each row names a rule of an error grammar (the
phrases: ``grammars/shared/errors.lark`` and each pack's own, ``grammars/sglang/sglang_errors.lark``),
the cause it means, its role and the phase it names. The rows are the packs'
(``logphase/servers/``); this module orders them by their ``rank``: the first row whose phrases
occur in the text decides, so echoes come first (they contain root words: 'NCCL error ... remote
process exited'), then wrappers, then root causes from the most specific to the most general. A
wrapper's row hands the text it quotes back to the table. A test checks that every rule of the
error grammars has its row and every row its rule.
"""

from __future__ import annotations

import itertools

from logphase.servers import PACKS
from logphase.servers.pack import Cause, Role, Signature

__all__ = ["ECHO_PREFERENCE", "SIGNATURES", "SIGNATURE_OF_RULE", "Cause", "Role", "Signature"]


def _ordered() -> tuple[Signature, ...]:
    rows = sorted((s for pack in PACKS for s in pack.signatures), key=lambda s: s.rank)
    for before, after in itertools.pairwise(rows):
        if before.rank == after.rank:
            raise ValueError(f"signatures {before.rule!r} and {after.rule!r}: one rank, no order")
    return tuple(rows)


SIGNATURES: tuple[Signature, ...] = _ordered()

SIGNATURE_OF_RULE = {s.rule: s for s in SIGNATURES}

# With no root cause in sight, the most telling echo names the failure: a kill says more than a
# dropped peer, which says more than 'a child failed'.
ECHO_PREFERENCE = (Cause.KILLED, Cause.NCCL_ERROR, Cause.DISTRIBUTED_TIMEOUT, Cause.CHILD_PROCESS_FAILED)
