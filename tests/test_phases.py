"""The phase table and the message table: declared data, validated."""

from __future__ import annotations

import pytest

from logphase.pipeline.classify import DISPATCHED
from logphase.pipeline.grammars import GRAMMAR_SOURCES, defined_rules, message_rules, used_rules
from logphase.pipeline.messages import MESSAGES, transitions
from logphase.pipeline.phases import PHASE_ORDER, Phase, Role, Transition, validate_table

# grammars whose rules are messages (envelope.lark lends its terminals to the envelope stage,
# errors.lark its phrases to the cause table)
MESSAGE_GRAMMARS = [g for g in GRAMMAR_SOURCES if g not in ("envelope", "errors")]


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
    entered = {t.phase for t in transitions().values() if t.role in (Role.BEGIN, Role.EVIDENCE, Role.WEAK)}
    # capture is also entered by its bars, whose evidence depends on their description
    assert entered | {Phase.CUDA_GRAPH_CAPTURE} == set(Phase)


def test_validation_catches_broken_tables() -> None:
    broken = {k: v for k, v in transitions().items() if v.phase is not Phase.CUDA_GRAPH_CAPTURE}
    assert any("cuda_graph_capture cannot be entered" in p for p in validate_table(broken))
    broken = dict(transitions(), bogus=Transition(Phase.READY, Role.END))
    assert any("ready" in p for p in validate_table(broken))
    broken = dict(transitions(), bogus=Transition(None, Role.EVIDENCE))
    assert any("without a phase" in p for p in validate_table(broken))


@pytest.mark.parametrize("grammar", MESSAGE_GRAMMARS)
def test_every_message_of_a_grammar_has_its_row(grammar: str) -> None:
    rows = {rule for rule, m in MESSAGES.items() if m.grammar == grammar}
    assert set(message_rules(grammar)) == rows


def test_every_row_names_a_message_of_its_grammar() -> None:
    for rule, message in MESSAGES.items():
        assert rule in message_rules(message.grammar), f"{rule}: not a message of {message.grammar}.lark"
        assert (message.build is None) == (message.grammar in ("traceback", "server_args")), rule


@pytest.mark.parametrize("grammar", GRAMMAR_SOURCES)
def test_no_dead_rules(grammar: str) -> None:
    assert defined_rules(grammar) - used_rules(grammar) == set()


def test_every_message_grammar_is_dispatched_or_assembled() -> None:
    assert set(MESSAGE_GRAMMARS) == {*DISPATCHED, "traceback"}
