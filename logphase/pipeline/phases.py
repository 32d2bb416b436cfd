"""The startup phases and the one table that says which event is evidence of which phase.

The table is the state machine's declaration; ``validate_table`` checks it (tests call it, and so
does the engine at import time in debug builds): every phase is reachable, begins and ends belong
to the phase they name, and the final phase has no way out but a new run.
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
    def index(self) -> int:
        return PHASE_ORDER.index(self)


PHASE_ORDER: tuple[Phase, ...] = tuple(Phase)


class Role(str, Enum):
    BEGIN = "begin"  # the phase's own start marker: enters it; on a finished run, starts a new run
    EVIDENCE = "evidence"  # a line only this phase prints: enters it
    WEAK = "weak"  # usually printed in this phase, sometimes later: enters it only from before it
    END = "end"  # closes the phase if the rank is in it; never enters the next one
    CLOSE = "close"  # closes whatever phase the rank is in (the scheduler's last startup line)


class Transition(NamedTuple):
    phase: Phase | None
    role: Role
    server_level: bool = False  # printed by the main process: no rank of its own


# event kind (or "kind:detail" for kinds whose meaning depends on one field) -> transition
TRANSITIONS: dict[str, Transition] = {
    "server_args": Transition(Phase.LAUNCH, Role.BEGIN, server_level=True),
    "dist_init_begin": Transition(Phase.DISTRIBUTED_INIT, Role.BEGIN),
    "gloo_connected": Transition(Phase.DISTRIBUTED_INIT, Role.WEAK),
    "gloo_not_connected": Transition(Phase.DISTRIBUTED_INIT, Role.WEAK),
    "nccl_version": Transition(Phase.DISTRIBUTED_INIT, Role.WEAK),
    "collective_warmup": Transition(Phase.DISTRIBUTED_INIT, Role.WEAK),
    "memory_baseline": Transition(Phase.DISTRIBUTED_INIT, Role.WEAK),
    "dist_init_end": Transition(Phase.DISTRIBUTED_INIT, Role.END),
    "weight_load_begin": Transition(Phase.WEIGHT_LOADING, Role.BEGIN),
    "progress_bar:weights": Transition(Phase.WEIGHT_LOADING, Role.EVIDENCE),
    "weight_load_end": Transition(Phase.WEIGHT_LOADING, Role.END),
    "kv_cache_dtype": Transition(Phase.MEMORY_POOL, Role.EVIDENCE),
    "kv_cache_allocated": Transition(Phase.MEMORY_POOL, Role.EVIDENCE),
    "mamba_cache_allocated": Transition(Phase.MEMORY_POOL, Role.EVIDENCE),
    "swa_memory_pool": Transition(Phase.MEMORY_POOL, Role.EVIDENCE),
    "memory_pool_end": Transition(Phase.MEMORY_POOL, Role.END),
    "capture_begin": Transition(Phase.CUDA_GRAPH_CAPTURE, Role.BEGIN),
    "capture_sizes": Transition(Phase.CUDA_GRAPH_CAPTURE, Role.EVIDENCE),
    "progress_bar:capture": Transition(Phase.CUDA_GRAPH_CAPTURE, Role.EVIDENCE),
    "capture_end": Transition(Phase.CUDA_GRAPH_CAPTURE, Role.END),
    "scheduler_ready": Transition(None, Role.CLOSE),
    "startup_timings": Transition(None, Role.CLOSE, server_level=True),
    "http_server:startup": Transition(Phase.WARMUP, Role.EVIDENCE, server_level=True),
    "http_access:warmup": Transition(Phase.WARMUP, Role.EVIDENCE, server_level=True),
    "warmup_marker": Transition(Phase.WARMUP, Role.EVIDENCE, server_level=True),
    "server_ready": Transition(Phase.READY, Role.BEGIN, server_level=True),
}

# SGLang scheduler markers: printed unprefixed by single-GPU servers (>= 0.4.8), whose one scheduler
# is then reported as rank TP0. Lines of other writers without a rank (Gloo, NCCL, tqdm) stay
# with the server as a whole.
SCHEDULER_KINDS = frozenset(
    {
        "dist_init_begin",
        "dist_init_end",
        "memory_baseline",
        "nccl_version",
        "collective_warmup",
        "weight_load_begin",
        "weight_load_end",
        "kv_cache_dtype",
        "kv_cache_allocated",
        "mamba_cache_allocated",
        "swa_memory_pool",
        "memory_pool_end",
        "capture_begin",
        "capture_sizes",
        "capture_end",
        "scheduler_ready",
    }
)


def validate_table(table: dict[str, Transition] | None = None) -> list[str]:
    """Problems with the transition table; empty when it is sound."""
    table = TRANSITIONS if table is None else table
    problems: list[str] = []
    entered = {t.phase for t in table.values() if t.role in (Role.BEGIN, Role.EVIDENCE, Role.WEAK)}
    for phase in PHASE_ORDER:
        if phase not in entered:
            problems.append(f"phase {phase.value} cannot be entered: no begin or evidence event")
    for kind, t in table.items():
        if t.role is Role.CLOSE and t.phase is not None:
            problems.append(f"{kind}: a CLOSE transition names no phase")
        if t.role is not Role.CLOSE and t.phase is None:
            problems.append(f"{kind}: {t.role.value} transition without a phase")
        if t.phase is Phase.READY and t.role is not Role.BEGIN:
            problems.append(f"{kind}: ready is entered only by its own evidence")
    ends = {t.phase for t in table.values() if t.role is Role.END}
    if Phase.READY in ends:
        problems.append("ready is final: nothing may end it")
    for kind, t in table.items():
        if t.server_level and t.role is Role.WEAK:
            problems.append(f"{kind}: server-level evidence cannot be weak")
    return problems


def transition_key(kind: str, detail: str | None) -> str:
    return f"{kind}:{detail}" if detail else kind
