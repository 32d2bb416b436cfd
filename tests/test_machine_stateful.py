"""The phase machine driven by random event sequences, checked against a tiny reference model:
phases only move forward within a run, going back after the run finished starts a new run, a
second server_args dump starts a new run, and failure is terminal for its run."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from logphase.folding.machine import PhaseMachine
from logphase.reporting.build_report import build_report
from logphase.reporting.report import LinesReport
from logphase.vocabulary import events as ev
from logphase.vocabulary.phases import PHASE_ORDER, Phase

RANKS = ("TP0", "TP1")
BEGINS = {
    Phase.DISTRIBUTED_INIT: ev.DistInitBegin,
    Phase.WEIGHT_LOADING: ev.WeightLoadBegin,
    Phase.CUDA_GRAPH_CAPTURE: ev.CaptureBegin,
}


class MachineVersusModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.machine = PhaseMachine()
        self.line = 0
        self.clock = datetime(2026, 5, 9, 9, 0, 0)
        # the reference model
        self.runs = 1
        self.has_args = False
        self.rank_phase: dict[str | None, int] = {}
        self.ready = False
        self.failed = False
        self.last_phase = -1

    def meta(self, rank: str | None) -> dict[str, object]:
        self.line += 1
        self.clock += timedelta(seconds=1)
        return {"line": self.line, "offset": self.line * 100, "raw": "x", "ts": self.clock.isoformat(), "rank": rank}

    def new_run(self) -> None:
        self.runs += 1
        self.has_args = False
        self.rank_phase = {}
        self.ready = self.failed = False
        self.last_phase = -1

    @property
    def finished(self) -> bool:
        return self.ready or self.failed

    def progressed(self) -> bool:
        return any(p > 0 for p in self.rank_phase.values())

    @rule()
    def server_args(self) -> None:
        if self.has_args or self.progressed() or self.finished:
            self.new_run()
        self.has_args = True
        self.rank_phase[None] = max(self.rank_phase.get(None, -1), 0)
        self.machine.feed(ev.ServerArgs(args={"tp_size": 2}, **self.meta(None)))  # type: ignore[arg-type]

    @rule(rank=st.sampled_from(RANKS), phase=st.sampled_from(sorted(BEGINS, key=lambda p: p.order)))
    def begin(self, rank: str, phase: Phase) -> None:
        index = PHASE_ORDER.index(phase)
        current = self.rank_phase.get(rank, -1)
        if self.finished and index < current:
            self.new_run()
            current = -1
        self.rank_phase[rank] = max(current, index)
        kwargs = {"graph": "cuda graph"} if phase is Phase.CUDA_GRAPH_CAPTURE else {}
        self.machine.feed(BEGINS[phase](**kwargs, **self.meta(rank)))  # type: ignore[arg-type]

    @rule(rank=st.sampled_from(RANKS))
    def kv_cache(self, rank: str) -> None:
        self.rank_phase[rank] = max(self.rank_phase.get(rank, -1), PHASE_ORDER.index(Phase.MEMORY_POOL))
        self.machine.feed(ev.KvCacheAllocated(tokens=10, **self.meta(rank)))  # type: ignore[arg-type]

    @rule()
    def ready_line(self) -> None:
        self.ready = True
        self.rank_phase[None] = max(self.rank_phase.get(None, -1), PHASE_ORDER.index(Phase.READY))
        self.machine.feed(ev.ServerReady(**self.meta(None)))  # type: ignore[arg-type]

    @rule(rank=st.sampled_from(RANKS))
    def failure(self, rank: str) -> None:
        self.failed = True
        self.machine.feed(ev.ErrorLine(error="not_enough_memory", message="Not enough memory.", **self.meta(rank)))  # type: ignore[arg-type]

    @invariant()
    def agrees_with_the_model(self) -> None:
        report = build_report(self.machine, LinesReport(total=0, events=0, unrecognized=0), "x")
        assert report.runs == self.runs
        expected = "failed" if self.failed else ("ready" if self.ready else "starting")
        assert report.outcome == expected
        if not self.failed:
            furthest = max(self.rank_phase.values(), default=-1)
            got = -1 if report.phase is None else PHASE_ORDER.index(report.phase)
            assert got == furthest
            assert got >= self.last_phase, "the server phase went backwards within a run"
            self.last_phase = got


TestMachineVersusModel = MachineVersusModel.TestCase
