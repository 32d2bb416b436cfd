"""The startup phases and the roles a message can play as evidence of one.

The evidence itself is declared per message in ``messages.py``; ``validate_table`` checks it (the
tests call it): every phase can be entered, begins and ends belong to the phase they name, and
the final phase has no way out but a new run.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Phase(str, Enum):
    """A startup phase, in the order SGLang goes through them (``PHASE_ORDER``)."""

    LAUNCH = "launch"
    DISTRIBUTED_INIT = "distributed_init"
    WEIGHT_LOADING = "weight_loading"
    MEMORY_POOL = "memory_pool"
    CUDA_GRAPH_CAPTURE = "cuda_graph_capture"
    WARMUP = "warmup"
    READY = "ready"

    def __str__(self) -> str:
        # print(report.phase) shows "weight_loading", as the JSON does
        return str(self.value)

    @property
    def order(self) -> int:
        """Its position in PHASE_ORDER: phases compare by it."""
        return PHASE_ORDER.index(self)


PHASE_ORDER: tuple[Phase, ...] = tuple(Phase)


class Role(str, Enum):
    BEGIN = "begin"  # the phase's own start marker: enters it; on a finished run, starts a new run
    EVIDENCE = "evidence"  # a line only this phase prints: enters it
    WEAK = "weak"  # usually printed in this phase, sometimes later: enters it only from before it
    # closes the phase; a rank that had not entered it (the log starts inside it) enters it first,
    # with its start unknown; never enters the next one
    END = "end"
    CLOSE = "close"  # closes whatever phase the rank is in (the scheduler's last startup line)
    SERVING = "serving"  # printed only by a server that is up (decode statistics): ready
    # printed while serving, and once or twice by the warmup: warmup after start-up lines of the
    # same run, ready in a log that starts while the server serves
    SERVING_OR_WARMUP = "serving_or_warmup"


class Transition(NamedTuple):
    phase: Phase | None
    role: Role
    server_level: bool = False  # printed by the main process: no rank of its own


# The table of which message is evidence of which phase is logphase/pipeline/messages.py, beside
# the grammars; ``validate_table`` checks its transitions.


def validate_table(table: dict[str, Transition]) -> list[str]:
    """Problems with a table of transitions (the message table's: ``messages.transitions()``, which
    imports this module, so it is passed in); empty when sound."""
    problems: list[str] = []
    entered = {t.phase for t in table.values() if t.role in (Role.BEGIN, Role.EVIDENCE, Role.WEAK, Role.END)}
    for phase in PHASE_ORDER:
        if phase not in entered:
            problems.append(f"phase {phase.value} cannot be entered: no begin or evidence message")
    for kind, t in table.items():
        if t.role is Role.CLOSE and t.phase is not None:
            problems.append(f"{kind}: a CLOSE transition names no phase")
        if t.role is not Role.CLOSE and t.phase is None:
            problems.append(f"{kind}: {t.role.value} transition without a phase")
        if t.phase is Phase.READY and t.role not in (Role.BEGIN, Role.SERVING, Role.SERVING_OR_WARMUP):
            problems.append(f"{kind}: ready is entered only by its own marker or by serving")
        if t.role in (Role.SERVING, Role.SERVING_OR_WARMUP) and t.phase is not Phase.READY:
            problems.append(f"{kind}: serving lines are evidence of ready")
    ends = {t.phase for t in table.values() if t.role is Role.END}
    if Phase.READY in ends:
        problems.append("ready is final: nothing may end it")
    for kind, t in table.items():
        if t.server_level and t.role is Role.WEAK:
            problems.append(f"{kind}: server-level evidence cannot be weak")
    return problems
