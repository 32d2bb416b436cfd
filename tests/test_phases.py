from __future__ import annotations

from logphase.pipeline.phases import PHASE_ORDER, TRANSITIONS, Phase, Role, Transition, validate_table


def test_table_is_valid() -> None:
    assert validate_table() == []


def test_every_phase_in_order_and_enterable() -> None:
    assert [p.value for p in PHASE_ORDER] == [
        "launch",
        "distributed_init",
        "weight_loading",
        "memory_pool",
        "cuda_graph_capture",
        "warmup",
        "ready",
    ]
    entered = {t.phase for t in TRANSITIONS.values() if t.role in (Role.BEGIN, Role.EVIDENCE, Role.WEAK)}
    assert entered == set(Phase)


def test_validation_catches_broken_tables() -> None:
    broken = dict(TRANSITIONS)
    del broken["capture_begin"], broken["capture_sizes"], broken["progress_bar:capture"]
    assert any("cuda_graph_capture cannot be entered" in p for p in validate_table(broken))
    broken = dict(TRANSITIONS, bogus=Transition(Phase.READY, Role.END))
    assert any("ready" in p for p in validate_table(broken))
    broken = dict(TRANSITIONS, bogus=Transition(None, Role.EVIDENCE))
    assert any("without a phase" in p for p in validate_table(broken))
