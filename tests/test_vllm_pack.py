"""The vLLM pack (grammars/vllm/pack.py, issue 21): the root is vLLM's root even when its echoes are
printed first, the free-memory pre-check gets its own cause and the opposite advice of the KV cache's,
advice names the flags of the run's server, vLLM's phases follow its order, and a vLLM line in an
SGLang log does not make the run a vLLM one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logphase import parse_bytes
from logphase.diagnosing.functions import frame_floor, frame_phase
from logphase.diagnosing.hints import hint
from logphase.diagnosing.signatures import read_error
from logphase.recognising.detect import SERVER_OF_RULE, server_of_config
from logphase.recognising.messages import evidence_in
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import MarkerRole, Phase
from tests.conftest import FIXTURES

SGLANG_FLAGS = ("--mem-fraction-static", "--cuda-graph-max-bs", "--tp ", "--context-length", "--disable-cuda-graph")


def _report(name: str) -> dict[str, Any]:
    path: Path = FIXTURES / name
    return parse_bytes(path.read_bytes(), source=name).model_dump(mode="json")


# -- root before echo, whatever the order in the file -------------------------------------------------


def test_the_worker_root_wins_over_echoes_printed_before_it() -> None:
    report = _report("vllm_nccl_echoes_first_v1_0_10.log")
    failure = report["failure"]
    assert (failure["cause"], failure["phase"]) == ("nccl_error", "distributed_init")
    # the echoes (engine core at 16, front end at 22) come first in the file, and are consequences
    assert failure["line"] > 22
    assert [c["line"] for c in failure["consequences"]] == [7, 17]
    assert failure["severity"] == "root"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
        "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ],
)
def test_vllm_echoes_read_as_echoes(text: str) -> None:
    reading = read_error(text)
    assert (reading.cause, reading.role) == (Cause.CHILD_PROCESS_FAILED, SignatureRole.ECHO)


def test_the_v0_worker_wrapper_reads_the_error_it_quotes_in_the_phase_its_method_names() -> None:
    reading = read_error(
        "Exception in worker VllmWorkerProcess while processing method init_device: NCCL error: unhandled system error"
    )
    assert (reading.cause, reading.role, reading.phase) == (Cause.NCCL_ERROR, SignatureRole.ROOT, Phase.DISTRIBUTED_INIT)
    load = read_error("Exception in worker VllmWorkerProcess while processing method load_model: CUDA out of memory.")
    assert (load.cause, load.phase) == (Cause.CUDA_OOM, Phase.WEIGHT_LOADING)


# -- the free-memory pre-check: its own cause, the opposite advice -------------------------------------


def test_the_pre_check_has_its_own_cause_and_says_lower() -> None:
    failure = _report("vllm_free_memory_precheck_0_11.log")["failure"]
    assert (failure["cause"], failure["phase"]) == ("gpu_memory_occupied", "distributed_init")
    assert "LOWER --gpu-memory-utilization" in failure["hint"]
    assert "nvidia-smi" in failure["hint"]


def test_the_kv_cache_failure_says_raise() -> None:
    failure = _report("vllm_kv_cache_no_room_v0_0_7.log")["failure"]
    assert failure["cause"] == "kv_cache_insufficient_memory"
    assert "raise --gpu-memory-utilization (now 0.45)" in failure["hint"]
    assert "--max-model-len" in failure["hint"]


def test_the_max_len_failure_points_at_max_model_len() -> None:
    failure = _report("vllm_kv_cache_max_len_v1_0_10.log")["failure"]
    assert (failure["cause"], failure["phase"]) == ("kv_cache_insufficient_memory", "memory_pool")
    assert failure["hint"].startswith("The model's full length does not fit the KV cache: lower --max-model-len")


# -- advice in the flags of the run's server ----------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["vllm_cuda_oom_capture_v1_0_8.log", "vllm_kv_cache_no_room_v0_0_7.log", "vllm_nccl_echoes_first_v1_0_10.log"],
)
def test_a_vllm_failure_gets_vllm_flags(name: str) -> None:
    advice = _report(name)["failure"]["hint"]
    assert not any(flag in advice for flag in SGLANG_FLAGS), advice


def test_a_capture_oom_names_vllms_three_ways_out() -> None:
    advice = _report("vllm_cuda_oom_capture_v1_0_8.log")["failure"]["hint"]
    assert "--gpu-memory-utilization (now 0.97)" in advice
    assert "--max-num-seqs (now 512)" in advice
    assert "--enforce-eager" in advice


def test_the_server_picks_the_rows() -> None:
    capture = Phase.CUDA_GRAPH_CAPTURE
    assert "--enforce-eager" in hint(Cause.CUDA_OOM, capture, {}, {}, server="vllm")
    assert "--mem-fraction-static" in hint(Cause.CUDA_OOM, capture, {}, {}, server="sglang")
    # told by the configuration dump when no server is given; SGLang's (as before vLLM) when neither says
    assert server_of_config({"gpu_memory_utilization": 0.9, "model": "m"}) == "vllm"
    assert server_of_config({"mem_fraction_static": 0.88}) == "sglang"
    assert server_of_config({}) is None  # no server known: the shared advice
    assert "--mem-fraction-static (now 0.88)" in hint(Cause.CUDA_OOM, capture, {"mem_fraction_static": 0.88}, {})
    assert "--gpu-memory-utilization (now 0.9)" in hint(Cause.CUDA_OOM, capture, {"gpu_memory_utilization": 0.9}, {})


# -- vLLM's phases --------------------------------------------------------------------------------


def test_uvicorns_start_up_is_ready_in_a_vllm_run_and_warmup_in_an_sglang_one() -> None:
    event = ev.HttpServer(kind="http_server", line=1, offset=0, raw="", level="INFO", state="startup_complete", message="")
    event.rule = "http_startup_complete"
    vllm, sglang = evidence_in(event, "vllm"), evidence_in(event, "sglang")
    assert vllm is not None and (vllm.phase, vllm.role) == (Phase.READY, MarkerRole.BEGIN)
    assert sglang is not None and sglang.phase is Phase.WARMUP


def test_a_run_is_vllm_only_by_its_start_lines() -> None:
    # SGLang imports vLLM and prints its platform line with vLLM's prefix: no evidence of a vLLM run
    assert "platform_detected" not in SERVER_OF_RULE
    assert {rule for rule, server in SERVER_OF_RULE.items() if server == "vllm"} >= {"api_server_version", "engine_init"}


def test_a_clean_v1_start_goes_through_vllms_phases_in_order() -> None:
    report = _report("vllm_v1_clean_compile_0_11.log")
    assert (report["outcome"], report["phase"]) == ("ready", "ready")
    phases = [p["name"] for p in report["phases"]]
    # torch.compile is cuda_graph_capture (the corpus' rule); the engine core (the server process,
    # its own track since the envelope reads its prefix) sizes the KV cache after the workers
    # compiled, before they capture: memory_pool is the server's step between the two
    assert phases == ["launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup", "ready"]
    spans = {p["name"]: p for p in report["phases"]}
    assert spans["cuda_graph_capture"]["first_line"] < spans["memory_pool"]["first_line"] < spans["cuda_graph_capture"]["last_line"]


def test_vllm_frames_name_their_phase() -> None:
    assert frame_phase("capture_model", "/x/vllm/v1/worker/gpu_model_runner.py") is Phase.CUDA_GRAPH_CAPTURE
    assert frame_phase("raise_if_cache_size_invalid", "/x/vllm/worker/worker.py") is Phase.MEMORY_POOL
    assert frame_phase("init_worker_distributed_environment", "/x/vllm/v1/worker/gpu_worker.py") is Phase.DISTRIBUTED_INIT
    # the V1 engine core's KV-cache step goes on to compile and capture: a lower bound only
    assert frame_phase("_initialize_kv_caches", "/x/vllm/v1/engine/core.py") is None
    assert frame_floor("_initialize_kv_caches", "/x/vllm/v1/engine/core.py") is Phase.MEMORY_POOL


_SITE = "/usr/local/lib/python3.12/dist-packages/vllm/"


@pytest.mark.parametrize(
    ("function", "path", "phase"),
    [
        # helpers no hand row names, placed by vLLM's call graph (grammars/vllm/functions.json)
        ("_allocate_kv_cache_tensors", "v1/worker/gpu_model_runner.py", Phase.MEMORY_POOL),
        ("_allocate_kv_cache", "worker/cache_engine.py", Phase.MEMORY_POOL),  # V0's cache engine
        ("call_module", "compilation/backends.py", Phase.CUDA_GRAPH_CAPTURE),
        ("CustomAllreduce.__init__", "distributed/device_communicators/custom_all_reduce.py", Phase.DISTRIBUTED_INIT),
        ("_process_input_queue", "v1/engine/core.py", Phase.READY),  # the engine core's busy loop
        ("execute_model_with_error_logging", "v1/engine/core.py", Phase.READY),
        # run in several phases (the dummy run: the profile run, capture, serving): no evidence
        ("_dummy_run", "v1/worker/gpu_model_runner.py", None),
        # vLLM's table reads vLLM's files only: SGLang's model_runner.py is another file
        ("_allocate_kv_cache_tensors", "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", None),
    ],
)
def test_vllms_mined_call_graph_places_its_helpers(function: str, path: str, phase: Phase | None) -> None:
    assert frame_phase(function, path if path.startswith("/") else _SITE + path) is phase


def test_an_sglang_errors_own_advice_is_not_given_to_a_vllm_run() -> None:
    # the argparse row's own hint names SGLang's launcher: a vLLM run gets advice by cause instead
    log = (
        "INFO 04-30 10:20:35 [api_server.py:1043] vLLM API server version 0.8.5.post1\n"
        "usage: vllm serve [model_tag] [options]\n"
        "vllm serve: error: unrecognized arguments: --mem-fraction-static 0.8\n"
    )
    failure = parse_bytes(log.encode(), source="x").failure
    assert failure is not None and (failure.cause, failure.phase) == (Cause.PYTHON_EXCEPTION, Phase.LAUNCH)
    assert failure.hint is not None and "sglang" not in failure.hint.lower()
    # and an SGLang run keeps it
    sglang = parse_bytes(b"launch_server.py: error: unrecognized arguments: --gpu-memory-utilization 0.9\n", source="x").failure
    assert sglang is not None and sglang.hint is not None and "sglang.launch_server --help" in sglang.hint


def _vllm_raise(path: str, statement: str, last: str) -> bytes:
    return (
        "INFO 04-30 10:20:35 [api_server.py:1043] vLLM API server version 0.9.2\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/vllm", line 8, in <module>\n'
        "    sys.exit(main())\n"
        f'  File "/usr/local/lib/python3.12/site-packages/{path}", line 120, in __post_init__\n'
        f"    {statement}\n"
        f"{last}\n"
    ).encode()


def test_an_exception_vllms_own_check_raised_is_named_by_that_check() -> None:
    """vLLM's start-up code refusing a value: a python_exception (the labelling vocabulary's word)
    whose check is the configuration's, with vLLM's advice in vLLM's flags."""
    report = parse_bytes(
        _vllm_raise("vllm/config.py", "raise ValueError(", "ValueError: Zorglub is not supported with --enforce-eager.")
    )
    assert report.failure is not None
    assert (report.failure.cause, report.failure.check) == (Cause.PYTHON_EXCEPTION, "configuration")
    assert "vLLM refused the configuration" in report.failure.hint


def test_an_exception_of_the_model_code_is_no_check_of_vllms() -> None:
    report = parse_bytes(
        _vllm_raise("vllm/model_executor/models/zorglub.py", "raise ValueError(", "ValueError: Zorglub layer")
    )
    assert report.failure is not None
    assert (report.failure.cause, report.failure.check) == (Cause.PYTHON_EXCEPTION, None)
