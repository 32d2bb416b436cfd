"""The vLLM grammars (grammars/vllm/*.lark, issue 21): every message rule parses an example of its own,
the envelope reads each era's prefixes, the failure signatures find vLLM's failure texts, and the
marker messages of every mined release (grammars/vllm/catalogue), rendered with plausible values,
parse to the rule that reads them.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from lark import Lark

from logphase.diagnosing.signatures import read_error
from logphase.packs.grammars import defined_rules, message_rules, parse, parser, rules, used_rules

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "grammars" / "vllm" / "catalogue"
VERSIONS = [e["version"] for e in json.loads((CATALOGUE / "index.json").read_text())["releases"]]

# rule -> example bodies (what follows the envelope), with the values named sub-rules must read
EXAMPLES: dict[str, list[tuple[str, dict[str, str]]]] = {
    "api_server_version": [("vLLM API server version 0.6.4.post1", {"version": "0.6.4.post1"})],
    "server_version": [("vLLM server version 0.33.0, serving model Qwen/Qwen3-8B", {"version": "0.33.0"})],
    "version_logo": [(" ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.33.0", {"version": "0.33.0"})],
    "vllm_args": [
        ("args: Namespace(model='facebook/opt-125m', tensor_parallel_size=1)", {}),
        ("non-default args: {'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': 4}", {}),
    ],
    "platform_detected": [("Automatically detected platform cuda.", {"platform": "cuda"})],
    "engine_init": [
        ("Initializing an LLM engine (v0.6.4.post1) with config: model='m', speculative_config=None", {"version": "0.6.4.post1"}),
        ("Initializing a V1 LLM engine (v0.11.0) with config: model='m'", {"version": "0.11.0", "engine_kind": "V1 "}),
        ("Initializing a V0 LLM engine (v0.8.5.post1) with config: model='m', use_cached_outputs=True, ", {"engine_kind": "V0 "}),
    ],
    "headless_launch": [
        ("Launching vLLM (v0.33.0) headless multiproc executor, with head node address 10.0.0.1 for torch.distributed",
         {"version": "0.33.0"}),
        ("Launching 2 data parallel engine(s) in headless mode, with head node address 10.0.0.1.", {}),
    ],
    "grpc_server": [("vLLM gRPC server started on 0.0.0.0:50051", {}), ("Server is ready to accept requests", {})],
    "max_model_len": [("Using max model len 32768", {"tokens": "32768"})],
    "port_retry": [("Port 8000 is already in use, trying port 8001", {"port": "8000", "next_port": "8001"})],
    "ray_placement_wait": [("Waiting for creating a placement group of specs for 30 seconds. specs=[{'GPU': 1.0}].", {})],
    "world_info": [
        ("world_size=4 rank=1 local_rank=1 distributed_init_method=tcp://10.0.0.1:29500 backend=nccl",
         {"world_size": "4", "rank": "1", "local_rank": "1"}),
        ("Adjusting world_size=8 rank=4 distributed_init_method=tcp://10.0.0.1:29500 for DP", {"rank": "4"}),
    ],
    "rank_assigned": [
        ("rank 1 in world size 4 is assigned as DP rank 0, PP rank 0, TP rank 1, EP rank 1",
         {"rank": "1", "assignment": "DP rank 0, PP rank 0, TP rank 1, EP rank 1"}),
    ],
    "vllm_nccl_version": [("vLLM is using nccl==2.21.5", {"version": "2.21.5"})],
    "nccl_found": [("Found nccl from library libnccl.so.2", {})],
    "p2p_cache": [("reading GPU P2P access cache from /root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json", {})],
    "attention_backend": [
        ("Using Flash Attention backend.", {}),
        ("Using Flash Attention backend on V1 engine.", {}),
        ("Using FlashInfer backend on V1 engine by default for Blackwell (SM 10.0) GPUs.", {}),
    ],
    "compile_cached": [("Cache the graph for dynamic shape for later use", {})],
    "load_begin": [("Starting to load model meta-llama/Llama-3.1-8B-Instruct...", {})],
    "load_from_scratch": [("Loading model from scratch...", {})],
    "weights_took": [("Loading weights took 2.63 seconds", {"seconds": "2.63"})],
    "model_loading_took": [
        ("Model loading took 11.0802 GiB and 3.106979 seconds", {"gib": "11.0802", "seconds": "3.106979"}),
        ("Model loading took 12.66 GiB memory and 31.657031 seconds", {"gib": "12.66", "seconds": "31.657031"}),
    ],
    "model_weights_took": [("Loading model weights took 6.1138 GB", {"gib": "6.1138"})],
    "memory_profiling_results": [("Memory profiling results: total_gpu_memory=23.64GiB initial_memory_usage=7.82GiB", {})],
    "memory_profiling_takes": [("Memory profiling takes 5.37 seconds", {"seconds": "5.37"})],
    "memory_profiling_detail": [
        ("the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB", {}),
        ("model weights take 14.99GiB; non_torch_memory takes 0.25GiB; PyTorch activation peak memory takes 1.19GiB", {}),
    ],
    "available_kv_memory": [("Available KV cache memory: 52.31 GiB", {"gib": "52.31"})],
    "gpu_blocks": [
        ("# GPU blocks: 10039, # CPU blocks: 1310", {"gpu_block_count": "10039"}),
        ("# GPU blocks: 27000", {"gpu_block_count": "27000"}),
        ("# cuda blocks: 27908, # CPU blocks: 2048", {"gpu_block_count": "27908"}),
    ],
    "kv_cache_size": [
        ("GPU KV cache size: 428,592 tokens", {"tokens": "428,592"}),
        ("GPU KV cache size: 428,592 tokens, Maximum concurrency for 32,768 tokens per request: 13.08x", {"concurrency": "13.08"}),
    ],
    "max_concurrency": [("Maximum concurrency for 32,768 tokens per request: 13.08x", {"concurrency": "13.08"})],
    "free_memory_note": [
        ("Free memory on device (78.6/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB).",
         {"free_gib": "78.6", "total_gib": "79.19"}),
    ],
    "profiling_run_took": [("Initial profiling/warmup run took 4.12 s", {"elapsed": "4.12"})],
    "compile_cache_dir": [
        ("Using cache directory: /root/.cache/vllm/torch_compile_cache/7b98594710/rank_0_0/backbone for vLLM's torch.compile", {}),
        ("[backbone] Using cache directory: /root/.cache/vllm/torch_compile_cache/1/rank_0_0 for vLLM's torch.compile", {}),
    ],
    "dynamo_transform": [("Dynamo bytecode transform time: 3.54 s", {"elapsed": "3.54"})],
    "compile_graph": [("Compiling a graph for dynamic shape takes 21.43 s", {})],
    "compile_loaded": [("Directly load the compiled graph(s) for dynamic shape from the cache, took 2.913 s", {})],
    "compile_start": [("Starting torch.compile", {})],
    "compile_warmup": [("Compile and warming up model for size 8", {})],
    "compile_total": [
        ("torch.compile takes 25.17 s in total", {"elapsed": "25.17"}),
        ("[backbone] torch.compile took 25.17 s in total", {"elapsed": "25.17"}),
    ],
    "vllm_capture_begin": [
        ("Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static.", {}),
        ("Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not static.", {}),
    ],
    "capture_memory_note": [
        ("CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of memory, ...", {}),
        ("If out-of-memory error occurs during cudagraph capture, consider decreasing `gpu_memory_utilization`", {}),
    ],
    "capture_bar": [
        ("Capturing CUDA graph shapes: 100%|██████████| 35/35 [00:10<00:00,  3.37it/s]", {}),
        ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:04<00:00, 14.1it/s]", {}),
    ],
    "capture_finished": [
        ("Graph capturing finished in 12 secs, took 0.52 GiB", {"capture_secs": "12", "gib": "0.52"}),
        ("Graph capturing finished in 21 secs.", {"capture_secs": "21"}),
        ("Encoder graph capturing finished in 3 secs, took 0.10 GiB (4 graphs)", {"capture_secs": "3"}),
    ],
    "init_engine_took": [
        ("init engine (profile, create kv cache, warmup model) took 40.02 seconds", {"engine_seconds": "40.02"}),
        ("init engine (profile, create kv cache, warmup model) took 40.02 s (compilation: 25.17 s)",
         {"engine_seconds": "40.02", "compile_seconds": "25.17"}),
    ],
    "api_server_start": [
        ("Starting vLLM API server on http://0.0.0.0:8000", {}),
        ("Starting vLLM API server 0 on http://0.0.0.0:8000", {}),
        ("Starting vLLM server on http://0.0.0.0:8000", {}),
    ],
    "routes": [("Available routes are:", {})],
    "route": [("Route: /v1/chat/completions, Methods: POST", {})],
    "supported_tasks": [("Supported tasks: ['generate']", {}), ("Supported_tasks: ['generate']", {})],
    "engine_process_started": [("Started engine process with PID 77", {"pid": "77"})],
    "resolved_architecture": [("Resolved architecture: Qwen3ForCausalLM", {})],
    "model_tasks": [("This model supports multiple tasks: {'generate', 'embedding'}. Defaulting to 'generate'.", {})],
    "chunked_prefill": [("Chunked prefill is enabled with max_num_batched_tokens=2048.", {})],
    "distributed_backend": [("Defaulting to use mp for distributed inference", {}), ("Defaulting to use ray for distributed inference", {})],
    "ipc_frontend": [("Multiprocessing frontend to use ipc:///tmp/9a0e2b7c-0a55 for IPC Path.", {})],
    "torch_threads": [("Reducing Torch parallelism from 96 threads to 1 to avoid unnecessary CPU contention.", {})],
    "v0_worker_died": [("Worker VllmWorkerProcess pid 78 died, exit code: -9", {"pid": "78", "exit_code": "-9"})],
    "throughput": [
        ("Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.3 tokens/s, Running: 1 reqs", {}),
        ("Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s", {}),
    ],
    "request_error": [("Error with model object='error' message='The model `x` does not exist.' type='NotFoundError' code=404", {})],
    "encoder_cache_budget": [("Encoder cache will be initialized with a budget of 8192 tokens, and profiled with 3 video items", {})],
    "engine_core_waiting": [("Waiting for init message from front-end.", {})],
    "processes_started": [("Started DP Coordinator process (PID: 88)", {}), ("Started 4 API server processes", {})],
    "shm_handle": [("vLLM message queue communication handle: Handle(local_reader_ranks=[1, 2, 3])", {})],
    "all2all_manager": [("Using DeepEP High-Throughput all2all manager.", {})],
    "weights_download": [("Time spent downloading weights for Qwen/Qwen3-8B: 41.338172 seconds", {})],
    "profiling_skipped": [
        ("Skipping memory profiling for multimodal encoder and encoder cache.", {}),
        ("Initial free memory 78.5 GiB, reserved 20.00GiB memory for KV Cache as specified by kv_cache_memory_bytes", {}),
    ],
    "vllm_request_failed": [("Request chatcmpl-1 failed (engine dead).", {})],
    "shm_stall": [("No available shared memory broadcast block found in 60 seconds. This typically happens", {"seconds": "60"})],
    "vllm_shutdown": [("Shutting down FastAPI HTTP server.", {}), ("Parent process exited, terminating worker", {})],
    "received_request": [("Received request chatcmpl-6e17: prompt: 'hi', params: SamplingParams(n=1)", {})],
    "ray_dedup_note": [("(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication.)", {})],
    "cache_blocks_no_room": [
        ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", {}),
    ],
    "max_len_v0": [
        ("The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache "
         "(17296). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
         {"max_model_len_value": "32768", "kv_tokens": "17296"}),
    ],
    "max_len_v1": [
        ("To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is needed, which is "
         "larger than the available KV cache memory (2.10 GiB). Based on the available memory, the estimated maximum "
         "model length is 17200.", {"max_model_len_value": "32768", "needed_gib": "4.00", "available_gib": "2.10"}),
        ("To serve at least one request with the model's max seq len (131072), (16 GiB KV cache is needed, which is "
         "larger than the available KV cache memory (9.5 GiB). ", {"available_gib": "9.5"}),
    ],
    "auto_fit_failed": [("Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token.", {})],
    "free_memory_precheck": [
        ("Free memory on device (10.5/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). "
         "Decrease GPU memory utilization or reduce GPU memory used by other processes.", {"free_gib": "10.5", "total_gib": "79.19"}),
        ("Free memory on device cuda:0 (10.5/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, "
         "71.27 GiB).", {"free_gib": "10.5"}),
    ],
    "warmup_oom": [("CUDA out of memory occurred when warming up sampler with 256 dummy requests. Please try lowering `max_num_seqs`", {})],
    "world_size_too_large": [("World size (8) is larger than the number of available GPUs (4) in this node.", {"gpu_count": "4"})],
    "placement_group_failed": [("Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}] within 1800 seconds.", {})],
    "engine_ready_timeout": [("Timed out waiting for engine core processes to start. This is often caused by slow weight loading", {})],
    "worker_exception_quoting": [
        ("Exception in worker VllmWorkerProcess while processing method init_device: NCCL error: unhandled system error, "
         "Traceback (most recent call last):", {"worker_name": "VllmWorkerProcess", "method": "init_device"}),
    ],
    "worker_exception": [("Exception in worker VllmWorkerProcess while processing method load_model.", {"method": "load_model"})],
    "worker_failed": [("Worker failed", {})],
    "worker_method_error": [("Error executing method 'load_model'. This might cause deadlock in distributed execution.", {})],
    "worker_proc_hit": [("WorkerProc hit an exception.", {}), ("EngineCore hit an exception: CUDA error", {})],
    "worker_proc_failed": [("WorkerProc failed to start.", {}), ("WorkerProc failed.", {})],
    "worker_proc_died": [
        ("Worker proc VllmWorker-1 died unexpectedly, shutting down executor.", {"proc_name": "VllmWorker-1"}),
        ("Worker proc VllmWorker-1 died unexpectedly (exit code: -9), shutting down executor.", {}),
    ],
    "worker_failed_with_error": [("Worker failed with error 'CUDA out of memory', please check the stack trace above", {})],
    "engine_core_failed": [("EngineCore failed to start.", {})],
    "engine_core_fatal": [("EngineCore encountered a fatal error.", {})],
    "engine_init_failed": [
        ("Engine core initialization failed. See root cause above.", {}),
        ("Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}", {}),
    ],
    "worker_init_failed": [
        ("WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.", {}),
    ],
    "engine_dead": [("EngineCore encountered an issue. See stack trace (above) for the root cause.", {})],
    "engine_process_failed": [("Engine process failed to start. See stack trace for the root cause.", {})],
    "mq_engine_dead": [("MQLLMEngine is already dead, terminating server process", {})],
    "async_engine_dead": [("Background loop is not running. If it was running, inspect the output to find the stacktrace", {})],
    "process_died": [("Process EngineCore_DP0 (PID: 4242) died with exit code -9", {"pid": "4242", "exit_code": "-9"})],
    "engine_core_died": [("Engine core process EngineCore_DP0 died unexpectedly.", {"proc_name": "EngineCore_DP0"})],
}


@pytest.mark.parametrize("grammar", ["vllm", "vllm_envelope", "vllm_errors"])
def test_no_dead_rules(grammar: str) -> None:
    assert defined_rules(grammar) - used_rules(grammar) == set()


def test_every_message_rule_has_an_example() -> None:
    assert set(EXAMPLES) == set(message_rules("vllm"))


@pytest.mark.parametrize(
    ("rule", "text", "values"), [(rule, text, values) for rule, cases in EXAMPLES.items() for text, values in cases]
)
def test_example_parses_to_its_rule(rule: str, text: str, values: dict[str, str]) -> None:
    parsed = parse("vllm", text)
    assert parsed is not None, text
    assert parsed.rule == rule
    for name, value in values.items():
        assert parsed.value(name) == value, (name, parsed.values)


@pytest.mark.parametrize(
    "text",
    [
        "Loading safetensors checkpoint shards: 100% Completed | 9/9 [00:29<00:00,  3.28s/it]",  # the shared tqdm grammar's
        'INFO:     Application startup complete.',  # uvicorn: the shared http grammar's
        "Port is free",
    ],
)
def test_lines_of_other_grammars_or_noise_are_not_vllm_messages(text: str) -> None:
    assert parse("vllm", text) is None


# -- the envelope ----------------------------------------------------------------------------------

ENVELOPES: list[tuple[str, dict[str, str], str | None]] = [
    # (line, tokens or values expected, message)
    ("INFO 11-18 18:07:28 engine.py:366] hello", {"LEVEL": "INFO", "DAY_TIME": "11-18 18:07:28"}, "hello"),
    ("ERROR 04-30 10:20:35 [core.py:700] EngineCore failed to start.", {"LEVEL": "ERROR"}, "EngineCore failed to start."),
    ("INFO 04-30 10:20:35 [v1/engine/core.py:70] x", {"BRACKET_POSITION": "[v1/engine/core.py:70]"}, "x"),
    ("INFO 04-30 10:20:35 [model_executor/.../default_loader.py:9] x", {}, "x"),
    ("(VllmWorkerProcess pid=232) INFO 08-23 08:25:25 worker.py:1] x", {"v0_worker": "VllmWorkerProcess", "pid": "232"}, "x"),
    ("(RayWorkerWrapper pid=609874, ip=10.0.0.2) INFO 01-17 08:07:43 model_runner.py:1077] x",
     {"ray_actor": "RayWorkerWrapper", "ip": "10.0.0.2"}, "x"),
    ("(VllmWorker rank=3 pid=9) INFO 04-30 10:20:35 [monitor.py:33] x", {"global_rank": "3"}, "x"),
    ("(VllmWorker TP1 pid=3933749) INFO 08-17 22:48:18 [gpu_model_runner.py:1983] x", {"worker_tags": "VllmWorker TP1"}, "x"),
    ("(Worker_DP1_PP0_TP2_EP3 pid=88) INFO 05-06 20:59:57 [default_loader.py:384] x", {"worker_tags": "Worker_DP1_PP0_TP2_EP3"}, "x"),
    ("(Worker pid=88) WARNING 05-06 20:59:57 [op.py:241] x", {"worker_tags": "Worker"}, "x"),
    ("(EngineCore_DP0 pid=104) Traceback (most recent call last):", {"engine_core": "EngineCore_DP0"},
     "Traceback (most recent call last):"),
    ("(EngineCore pid=104) Process EngineCore:", {"engine_core": "EngineCore"}, "Process EngineCore:"),
    ("(APIServer pid=1) INFO 12-01 10:00:00 [api_server.py:1] x", {"api_server": "APIServer"}, "x"),
    ("(ApiServer_1 pid=7) INFO 12-01 10:00:00 [api_server.py:1] x", {"api_server": "ApiServer_1"}, "x"),
    ("(DPCoordinator pid=7) INFO 12-01 10:00:00 [coordinator.py:1] x", {"helper_process": "DPCoordinator"}, "x"),
    ("myhost INFO 04-30 10:20:35 [monitor.py:33] x", {"LOGGING_PREFIX": "myhost "}, "x"),
    ("(VLLM_Qwen_Chat_Ray pid=609877) INFO 01-17 08:07:47 worker.py:232] x", {"other_process": "VLLM_Qwen_Chat_Ray"}, "x"),
    ("(Worker_TP0 pid=34322)", {"worker_tags": "Worker_TP0", "pid": "34322"}, None),
    # no prefix: the whole line is the message (uvicorn's level, a parenthesis that is no prefix)
    ("INFO:     Application startup complete.", {}, "INFO:     Application startup complete."),
    ("(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication.)", {},
     "(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication.)"),
    ("(RayWorkerWrapper pid=6, ip=10.0.0.3) INFO 01-17 08:07:43 model_runner.py:1077] Loading model weights took "
     "7.1216 GB [repeated 3x across cluster]", {"RAY_REPEATED": " [repeated 3x across cluster]"},
     "Loading model weights took 7.1216 GB"),
]


def _tokens_and_values(node: object) -> dict[str, str]:
    found: dict[str, str] = {}
    todo = [node]
    while todo:
        n = todo.pop()
        found.update({k: v[0] for k, v in n.tokens.items()})  # type: ignore[attr-defined]
        found.update({k: "".join(v) for k, v in n.values.items()})  # type: ignore[attr-defined]
        todo.extend(n.children)  # type: ignore[attr-defined]
    return found


@pytest.mark.parametrize(("line", "expected", "message"), ENVELOPES)
def test_envelope(line: str, expected: dict[str, str], message: str | None) -> None:
    parsed = parse("vllm_envelope", line)
    assert parsed is not None, line
    found = _tokens_and_values(parsed)
    assert found.get("MESSAGE") == message
    for name, value in expected.items():
        assert found.get(name) == value, (name, found)


def test_nested_prefixes_keep_their_order() -> None:
    parsed = parse("vllm_envelope", "(EngineCore_0 pid=1) (VllmWorker TP1 pid=2) INFO 08-17 22:48:18 [x.py:1] y")
    assert parsed is not None
    processes = [c for c in parsed.children if c.rule == "vllm_process"]
    assert [p.value("pid") for p in processes] == ["1", "2"]
    assert processes[0].value("engine_core") == "EngineCore_0"
    assert processes[1].value("worker_tags") == "VllmWorker TP1"


# -- failure signatures ----------------------------------------------------------------------------

SIGNATURES: dict[str, str] = {
    "vllm_kv_no_room": "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`",
    "vllm_max_len_kv": "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
    "stored in KV cache (17296).",
    "vllm_free_memory": "ValueError: Free memory on device (10.5/79.19 GiB) on startup is less than desired GPU memory utilization",
    "vllm_warmup_oom": "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests.",
    "vllm_world_size": "ValueError: World size (8) is larger than the number of available GPUs (4) in this node.",
    "vllm_placement_group": "ValueError: Cannot provide a placement group of placement_group_specs=[] within 1800 seconds.",
    "vllm_engine_ready_timeout": "TimeoutError: Timed out waiting for engine core processes to start.",
    "vllm_rpc_timeout": "TimeoutError: RPC call to execute_model timed out.",
    "vllm_worker_exception_device": "Exception in worker VllmWorkerProcess while processing method init_device: NCCL error",
    "vllm_worker_exception_load": "Exception in worker VllmWorkerProcess while processing method load_model.",
    "vllm_worker_exception_memory": "Exception in worker VllmWorkerProcess while processing method initialize_cache.",
    "vllm_worker_exception_capture": "Exception in worker VllmWorkerProcess while processing method capture_model.",
    "vllm_worker_exception": "Exception in worker VllmWorkerProcess while processing method execute_model.",
    "vllm_engine_init_failed": "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    "vllm_engine_core_failed": "EngineCore failed to start.",
    "vllm_worker_init_failed": "Exception: WorkerProc initialization failed due to an exception in a background process.",
    "vllm_engine_dead": "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above)",
    "vllm_engine_process_failed": "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    "vllm_worker_died": "Worker proc VllmWorker-1 died unexpectedly, shutting down executor.",
    # the shared rule's vLLM phrase: the front end's report of an engine core that signal 9 ended
    "child_killed": "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': -9}",
}
# an example that holds another rule's words on purpose: the signature table reads it first
# (grammars/vllm/pack.py: vllm_engine_init_failed comes after the shared child_killed)
OVERLAPS: dict[str, set[str]] = {"child_killed": {"vllm_engine_init_failed"}}


def test_every_signature_has_an_example() -> None:
    assert set(SIGNATURES) == set(message_rules("vllm_errors"))


@cache
def _signature_patterns() -> dict[str, re.Pattern[str]]:
    """Each rule's terminal as a regular expression searched anywhere (how signatures.py reads errors.lark)."""
    lark = parser("vllm_errors")
    return {rule: re.compile(_rule_regexp(lark, rule)) for rule in SIGNATURES}


def _rule_regexp(lark: Lark, rule: str) -> str:
    """A rule's terminals as one expression: its alternatives, each its terminals in a row."""
    return "|".join(
        "".join(f"(?:{lark.get_terminal(symbol.name).pattern.to_regexp()})" for symbol in expansion)
        for origin, expansion in rules("vllm_errors")
        if origin == rule
    )


@pytest.mark.parametrize("rule", sorted(SIGNATURES))
def test_signature_finds_its_text_and_only_it(rule: str) -> None:
    patterns = _signature_patterns()
    assert patterns[rule].search(SIGNATURES[rule])
    # the V0 worker's wrapper of any method reads every method's text too: the table tries the
    # method-specific rows first (their rank)
    others = [
        other
        for other, p in patterns.items()
        if other not in (rule, "vllm_worker_exception", *OVERLAPS.get(rule, ())) and p.search(SIGNATURES[rule])
    ]
    assert others == [], others
    if rule in OVERLAPS:
        found = read_error(SIGNATURES[rule]).signature
        assert found is not None and found.rule == rule


def test_the_pre_check_is_not_the_kv_cache_failure() -> None:
    """The free-memory pre-check asks for LESS memory; the KV-cache failure for more: two signatures."""
    patterns = _signature_patterns()
    note = "Free memory on device (78.6/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB)."
    assert not any(p.search(note) for p in patterns.values())
    assert not patterns["vllm_kv_no_room"].search(SIGNATURES["vllm_free_memory"])


# -- every era's markers, rendered from the catalogue ----------------------------------------------

# rule -> (a text the catalogue template contains, the levels it is logged at)
MARKERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "api_server_version": ("vLLM API server version %s", ("info",)),
    "server_version": ("vLLM server version %s, serving model %s", ("info",)),
    "engine_init": ("LLM engine (v%s) with config", ("info",)),
    "platform_detected": ("Automatically detected platform %s.", ("info",)),
    "rank_assigned": ("in world size %s is assigned as", ("info",)),
    "vllm_nccl_version": ("vLLM is using nccl==", ("info",)),
    "load_begin": ("Starting to load model %s...", ("info",)),
    "load_from_scratch": ("Loading model from scratch...", ("info",)),
    "weights_took": ("Loading weights took %.2f seconds", ("info",)),
    "model_loading_took": ("Model loading took", ("info",)),
    "model_weights_took": ("Loading model weights took %.4f G", ("info",)),
    "memory_profiling_results": ("Memory profiling results: ", ("info",)),
    "memory_profiling_takes": ("Memory profiling takes ", ("info",)),
    "available_kv_memory": ("Available KV cache memory: ", ("info",)),
    "gpu_blocks": ("# GPU blocks: %d", ("info",)),
    "kv_cache_size": ("KV cache size: %s tokens", ("info",)),
    "max_concurrency": ("Maximum concurrency for %s tokens per request", ("info",)),
    "compile_cache_dir": ("Using cache directory: %s for vLLM's torch.compile", ("info",)),
    "dynamo_transform": ("Dynamo bytecode transform time: %.2f s", ("info",)),
    "compile_total": ("torch.compile t", ("info",)),
    "vllm_capture_begin": ("This may lead to unexpected consequences if the model is not static", ("info",)),
    "capture_finished": ("raph capturing finished in %.0f secs", ("info",)),
    "init_engine_took": ("init engine (profile, create kv cache, warmup model) took", ("info",)),
    "api_server_start": ("Starting vLLM ", ("info",)),
    "routes": ("Available routes are:", ("info",)),
    "cache_blocks_no_room": ("No available memory for the cache blocks.", ("raise",)),
    "max_len_v0": ("is larger than the maximum number of tokens that can be stored in KV cache", ("raise",)),
    "max_len_v1": ("KV cache is needed, which is larger than the available KV cache memory", ("raise",)),
    "free_memory_precheck": ("on startup is less than", ("raise",)),
    "engine_init_failed": ("Engine core initialization failed. See root cause above.", ("raise",)),
    "engine_core_failed": ("EngineCore failed to start.", ("exception",)),
    "worker_init_failed": ("WorkerProc initialization failed", ("raise",)),
    "engine_dead": ("EngineCore encountered an issue.", ("raise",)),
    "worker_exception": ("Exception in worker %s while processing method %s", ("error", "exception")),
    "worker_proc_died": ("Worker proc %s died unexpectedly", ("error",)),
    "engine_process_failed": ("Engine process failed to start.", ("raise",)),
}

# a value for each placeholder, by the text before it, then by the text after it (else by its kind)
_BEFORE = [
    (re.compile(r"(?:version |nccl==)$"), "0.9.2"),
    (re.compile(r"(?:rank |world size )$"), "1"),
    (re.compile(r"on $"), "http://0.0.0.0:8000"),
]
_BY_CONTEXT = [
    (re.compile(r"^ GiB"), "12.50"),
    (re.compile(r"^ KV cache size"), "GPU"),
    (re.compile(r"^ tokens"), "32,768"),
    (re.compile(r"^\.\.\."), "meta-llama/Llama-3.1-8B-Instruct"),
    (re.compile(r"^, serving model"), "0.33.0"),
    (re.compile(r"^\) with config"), "0.9.2"),
    (re.compile(r"^\.$"), "cuda"),
    (re.compile(r"^ for vLLM's"), "/root/.cache/vllm/torch_compile_cache/ab12/rank_0_0/backbone"),
    (re.compile(r"^ on "), "0"),
]
_PERCENT = re.compile(r"%(?:\.(\d+))?([sdfr%])")
_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")


def _percent_value(match: re.Match[str], before: str, after: str, first: bool) -> str:
    digits, kind = match.group(1), match.group(2)
    if kind == "%":
        return "%"
    if kind == "f":
        return f"{12.5:.{int(digits or 6)}f}"
    if kind == "d":
        return "12"
    for pattern, value in _BEFORE:
        if pattern.search(before):
            return value
    if first and match.start() == 0 and not after.startswith(" KV cache size"):
        return ""  # the newest's "%s" log prefix before a message ("%storch.compile took ...")
    for pattern, value in _BY_CONTEXT:
        if pattern.match(after):
            return value
    return "x"


def render(template: str, fmt: str) -> str:
    """The first line a template prints, its placeholders filled with plausible values."""
    if fmt == "percent":
        out, last = [], 0
        for i, m in enumerate(_PERCENT.finditer(template)):
            out.append(template[last:m.start()])
            out.append(_percent_value(m, template[:m.start()], template[m.end():], i == 0))
            last = m.end()
        out.append(template[last:])
        text = "".join(out)
    elif fmt == "fstring":
        text = _FIELD.sub(lambda m: {"{{": "{", "}}": "}"}.get(m.group(0), "12"), template)
    else:
        text = template
    return text.split("\n")[0]


@cache
def _catalogue(version: str) -> dict:
    return json.loads((CATALOGUE / f"{version}.json").read_text())


def rendered_markers(version: str) -> list[tuple[str, str, str]]:
    """(rule, template, rendered line) of every marker template of a release (vLLM's own backends only)."""
    found = []
    for path, f in _catalogue(version)["files"].items():
        if re.search(r"(?:hpu|tpu|xpu|neuron|openvino|cpu)_|/tpu\.py|/cpu\.py", path):
            continue  # other hardware's runners reuse texts with their own values ("took in total ...")
        for m in f["messages"]:
            for rule, (text, levels) in MARKERS.items():
                if text in m["template"] and m["level"] in levels:
                    found.append((rule, m["template"], render(m["template"], m["format"])))
                    break  # the first marker a template holds names it ("KV cache size: ..., Maximum concurrency")
    return found


@pytest.mark.parametrize("version", VERSIONS)
def test_markers_of_every_era_parse_to_their_rule(version: str) -> None:
    markers = rendered_markers(version)
    # the V0 worker's exception line has two rules: with the error quoted (0.5) or not (0.6+)
    quoting = {"worker_exception": ("worker_exception", "worker_exception_quoting")}
    misses = [
        (rule, line)
        for rule, _, line in markers
        if (p := parse("vllm", line)) is None or p.rule not in quoting.get(rule, (rule,))
    ]
    assert misses == []
    # every era prints its weights, capture and KV-cache markers and the failure the issue names first
    rules = {rule for rule, _, _ in markers}
    assert {"load_begin", "capture_finished", "cache_blocks_no_room", "routes", "engine_init"} <= rules or (
        {"load_from_scratch", "capture_finished", "cache_blocks_no_room", "routes"} <= rules
    ), rules


def test_markers_found_per_era() -> None:
    """How many marker rules each release's catalogue feeds (a release that loses one shows here)."""
    counts = {v: len({rule for rule, _, _ in rendered_markers(v)}) for v in VERSIONS}
    assert all(n >= 12 for n in counts.values()), counts


def test_render_fills_placeholders() -> None:
    assert render("Loading weights took %.2f seconds", "percent") == "Loading weights took 12.50 seconds"
    assert render("%storch.compile took %.2f s in total", "percent") == "torch.compile took 12.50 s in total"
    assert render("Memory profiling takes {result.profile_time:.2f} seconds\nthe current", "fstring") == (
        "Memory profiling takes 12 seconds"
    )
