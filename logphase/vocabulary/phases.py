"""The startup phases and the roles a message can play as evidence of one.

The evidence itself is declared per message in ``recognising/messages.py``; ``validate_table`` checks it (the
tests call it): every phase can be entered, begins and ends belong to the phase they name, and
the final phase has no way out but a new run.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Phase(str, Enum):
    """A startup phase, in the order a server goes through them (``PHASE_ORDER``)."""

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


def later_phase(first: Phase | None, second: Phase | None) -> Phase | None:
    """The later of two phases (either may be unknown)."""
    if first is None or second is None:
        return first or second
    return first if first.order >= second.order else second


# the phases of a server that is up (a hint for serving), and the start-up's, with no phase at all (a
# failure before any marker): the phase sets the packs' hints are given for
SERVING_PHASES: frozenset[Phase | None] = frozenset({Phase.READY, Phase.WARMUP})
STARTUP_PHASES: frozenset[Phase | None] = frozenset({*Phase, None}) - SERVING_PHASES


class MarkerRole(str, Enum):
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
    # the phase starts over within the run (a server that makes it in two passes, the first a sizing
    # pass through later phases): a rank past it goes back to it, the later phases it entered since are
    # dropped, and the time since it first entered the phase is the row's step (the earlier pass)
    AGAIN = "again"


class Transition(NamedTuple):
    phase: Phase | None
    role: MarkerRole
    server_level: bool = False  # printed by the main process: no rank of its own


# The table of which message is evidence of which phase is logphase/recognising/messages.py, beside
# the grammars; ``validate_table`` checks its transitions.


def validate_table(table: dict[str, Transition]) -> list[str]:
    """Problems with a table of transitions (the message table's: ``messages.transitions()``); empty
    when sound. The table is passed in: the messages import this module, never the other way round."""
    problems = _unentered_phases(table)
    for kind, t in table.items():
        problems.extend(f"{kind}: {problem}" for problem in _row_problems(t))
    if Phase.READY in {t.phase for t in table.values() if t.role is MarkerRole.END}:
        problems.append("ready is final: nothing may end it")
    problems.extend(
        f"{kind}: server-level evidence cannot be weak"
        for kind, t in table.items()
        if t.server_level and t.role is MarkerRole.WEAK
    )
    return problems


# the roles that take a rank into the phase they name
_ENTERING = (MarkerRole.BEGIN, MarkerRole.EVIDENCE, MarkerRole.WEAK, MarkerRole.END, MarkerRole.AGAIN)
# the only roles that may name ready: its own marker, and the lines of a server that serves
_READY_ROLES = (MarkerRole.BEGIN, MarkerRole.SERVING, MarkerRole.SERVING_OR_WARMUP)


def _unentered_phases(table: dict[str, Transition]) -> list[str]:
    entered = {t.phase for t in table.values() if t.role in _ENTERING}
    return [
        f"phase {phase.value} cannot be entered: no begin or evidence message" for phase in PHASE_ORDER if phase not in entered
    ]


def _row_problems(t: Transition) -> list[str]:
    """What is wrong with one transition on its own: the phase its role needs (or forbids)."""
    problems: list[str] = []
    if t.role is MarkerRole.CLOSE and t.phase is not None:
        problems.append("a CLOSE transition names no phase")
    if t.role is not MarkerRole.CLOSE and t.phase is None:
        problems.append(f"{t.role.value} transition without a phase")
    if t.phase is Phase.READY and t.role not in _READY_ROLES:
        problems.append("ready is entered only by its own marker or by serving")
    if t.role in (MarkerRole.SERVING, MarkerRole.SERVING_OR_WARMUP) and t.phase is not Phase.READY:
        problems.append("serving lines are evidence of ready")
    return problems
