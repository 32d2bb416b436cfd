"""The phase table and the message table: declared data, validated."""

from __future__ import annotations

import pytest

from logphase.diagnosing.functions import SERVER_FUNCTIONS, call_phase, frame_phase, table_problems
from logphase.packs import PACKS
from logphase.packs.grammars import defined_rules, grammar_sources, message_rules, used_rules
from logphase.recognising.classify import DISPATCHED
from logphase.recognising.messages import MESSAGES, transitions
from logphase.vocabulary.phases import PHASE_ORDER, MarkerRole, Phase, Transition, validate_table

# grammars whose rules are messages: the packs' message and record grammars (envelope.lark lends its
# terminals to the envelope stage, the error grammars their phrases to the cause table)
MESSAGE_GRAMMARS = [g for pack in PACKS for g in (*pack.grammars, *pack.record_grammars)]


def test_table_is_valid() -> None:
    assert validate_table(transitions()) == []


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
    entered = {t.phase for t in transitions().values() if t.role in (MarkerRole.BEGIN, MarkerRole.EVIDENCE, MarkerRole.WEAK)}
    # capture is also entered by its bars, whose evidence depends on their description
    assert entered | {Phase.CUDA_GRAPH_CAPTURE} == set(Phase)


def test_validation_catches_broken_tables() -> None:
    broken = {k: v for k, v in transitions().items() if v.phase is not Phase.CUDA_GRAPH_CAPTURE}
    assert any("cuda_graph_capture cannot be entered" in p for p in validate_table(broken))
    broken = dict(transitions(), bogus=Transition(Phase.READY, MarkerRole.END))
    assert any("ready" in p for p in validate_table(broken))
    broken = dict(transitions(), bogus=Transition(None, MarkerRole.EVIDENCE))
    assert any("without a phase" in p for p in validate_table(broken))


def test_validation_names_every_broken_rule_in_order() -> None:
    table = {
        "only_launch": Transition(Phase.LAUNCH, MarkerRole.BEGIN),
        "close_names_phase": Transition(Phase.WARMUP, MarkerRole.CLOSE),
        "weak_ready": Transition(Phase.READY, MarkerRole.WEAK),
        "serving_warmup": Transition(Phase.WARMUP, MarkerRole.SERVING),
        "ends_ready": Transition(Phase.READY, MarkerRole.END),
        "weak_main": Transition(Phase.LAUNCH, MarkerRole.WEAK, server_level=True),
    }
    assert validate_table(table) == [
        "phase distributed_init cannot be entered: no begin or evidence message",
        "phase weight_loading cannot be entered: no begin or evidence message",
        "phase memory_pool cannot be entered: no begin or evidence message",
        "phase cuda_graph_capture cannot be entered: no begin or evidence message",
        "phase warmup cannot be entered: no begin or evidence message",
        "close_names_phase: a CLOSE transition names no phase",
        "weak_ready: ready is entered only by its own marker or by serving",
        "serving_warmup: serving lines are evidence of ready",
        "ends_ready: ready is entered only by its own marker or by serving",
        "ready is final: nothing may end it",
        "weak_main: server-level evidence cannot be weak",
    ]


@pytest.mark.parametrize("grammar", MESSAGE_GRAMMARS)
def test_every_message_of_a_grammar_has_its_row(grammar: str) -> None:
    rows = {rule for rule, m in MESSAGES.items() if m.grammar == grammar}
    assert set(message_rules(grammar)) == rows


def test_every_row_names_a_message_of_its_grammar() -> None:
    for rule, message in MESSAGES.items():
        assert rule in message_rules(message.grammar), f"{rule}: not a message of {message.grammar}.lark"
        assert (message.build is None) == (message.grammar in ("traceback", "server_args")), rule


@pytest.mark.parametrize("grammar", grammar_sources())
def test_no_dead_rules(grammar: str) -> None:
    assert defined_rules(grammar) - used_rules(grammar) == set()


def test_every_message_grammar_is_dispatched_or_assembled() -> None:
    assert set(MESSAGE_GRAMMARS) == {*DISPATCHED, "traceback"}


# -- the table of the server's functions by phase (a traceback's frames) ----------------------------


def test_the_function_table_is_sound() -> None:
    assert table_problems() == []
    assert {f.phase for f in SERVER_FUNCTIONS} == set(PHASE_ORDER)  # every phase has its functions


@pytest.mark.parametrize(
    ("function", "path", "phase"),
    [
        ("event_loop_overlap", "/sgl/srt/managers/scheduler.py", Phase.READY),
        ("on_idle", "/sgl/srt/managers/scheduler.py", Phase.READY),
        ("capture_one_batch_size", "/sgl/srt/model_executor/cuda_graph_runner.py", Phase.CUDA_GRAPH_CAPTURE),
        ("__init__", "/sgl/srt/model_executor/cuda_graph_runner.py", Phase.CUDA_GRAPH_CAPTURE),
        ("CudaGraphRunner.__init__", "/sgl/srt/model_executor/cuda_graph_runner.py", Phase.CUDA_GRAPH_CAPTURE),
        ("__init__", "/sgl/srt/mem_cache/memory_pool.py", Phase.MEMORY_POOL),
        ("profile_max_num_token", "/sgl/srt/model_executor/model_runner.py", Phase.MEMORY_POOL),
        ("load_weights", "/sgl/srt/models/llama.py", Phase.WEIGHT_LOADING),
        ("init_distributed_environment", "/sgl/srt/distributed/parallel_state.py", Phase.DISTRIBUTED_INIT),
        ("__post_init__", "/sgl/srt/server_args.py", Phase.LAUNCH),
        # only whole names, and generic ones only in their file
        ("__init__", "/sgl/srt/managers/scheduler.py", None),
        ("capture_one", "/sgl/srt/model_executor/cuda_graph_runner.py", None),
        ("init_", "/sgl/srt/model_executor/model_runner.py", None),
        ("forward", "/sgl/srt/model_executor/model_runner.py", None),
        ("initialize", "/sgl/srt/model_executor/model_runner.py", None),  # a lower bound only
        (None, "/sgl/srt/model_executor/model_runner.py", None),
    ],
)
def test_a_frame_names_a_phase_only_by_a_whole_function_of_the_table(
    function: str | None, path: str, phase: Phase | None
) -> None:
    assert frame_phase(function, path) is phase


@pytest.mark.parametrize(
    ("statement", "phase"),
    [
        ("self.model = self.loader.load_model(", Phase.WEIGHT_LOADING),
        ("self.cuda_graph_runner = CudaGraphRunner(self)", Phase.CUDA_GRAPH_CAPTURE),
        (") = self.capture_one_batch_size(bs, forward", Phase.CUDA_GRAPH_CAPTURE),  # 'forward' is cut: no call
        ("self.init_memory_pool(total_gpu_memory, server_args.max_running_requests", Phase.MEMORY_POOL),
        ("self.init_", None),
        ("self.load_mo", None),
        ("return func(*args, **kwargs)", None),
        (None, None),
    ],
)
def test_a_statement_names_a_phase_only_by_a_whole_call(statement: str | None, phase: Phase | None) -> None:
    assert call_phase(statement) is phase
