"""The TensorRT-LLM pack: TensorRT-LLM's own messages (``grammars/trtllm/trtllm.lark``: the 0.x
TensorRT-engine runtime, alone or behind Triton's tensorrtllm backend, and 1.x with the PyTorch
backend, the LLM API and trtllm-serve), its failure phrases (``trtllm_errors.lark``), its functions by
phase (what a traceback's frames, Python or C++, say about where it struck) and the advice that names
TensorRT-LLM's flags.

Its prefixes are read by the shared envelope (``grammars/shared/envelope.lark``: ``trtllm_logger``, the
Python logger's ``[12/20/2025-04:20:21] [TRT-LLM] [RANK 1] [I] ``, whose time is the server's clock and
whose rank is the line's; ``trtllm_native``, the C++ logger's ``[TensorRT-LLM][INFO] `` without a time).

Phases, in TensorRT-LLM's order (``../shared/trtllm/INDEX.md``): the banner, the LLM API's configuration
and the MPI pool are launch; MPI and NCCL communicators distributed_init; the checkpoint (PyTorch) or
the engine (TensorRT) weight_loading; the KV cache memory_pool; the autotuner and the CUDA-graph warmup
cuda_graph_capture; the HTTP or Triton services ready. The PyTorch backend sizes the KV cache twice: a
sizing pass (a small temporary cache, autotune, graph warmup), memory profiling, then the final cache,
autotune and warmup again. One run: the sizing pass's KV lines open memory_pool and its warmups
cuda_graph_capture, the memory profiling's lines are memory_pool ``again`` (the rank goes back to it,
the sizing pass's capture dropped, the pass a step of memory_pool: ``sizing_pass``), and the final
pass's autotune opens cuda_graph_capture: the KV cache, autotune and graph warmup are reported once.
The failure of either pass's cache is memory_pool, by its signature's phase.

TensorRT-LLM's Python logger writes to stdout, its C++ logger and tracebacks to stderr: its rows name
no stream.
"""

from __future__ import annotations

from logphase.packs import builders as b
from logphase.packs.rows import BEGIN, EVIDENCE, Hint, M, Message, Pack, ServerFunction, Signature, Step, W, t
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import SERVING_PHASES, STARTUP_PHASES, MarkerRole, Phase, Transition
from logphase.vocabulary.values import gigabytes, integer, number

_G = "trtllm"
_START = t(Phase.LAUNCH, BEGIN, server_level=True)  # a run of TensorRT-LLM starts here
_NOTE = b.with_message(ev.StartupNote)


def _row(
    build: b.Builder | None,
    evidence: Transition | None = None,
    cause: Cause | None = None,
    step: Step | None = None,
) -> Message:
    """A row of TensorRT-LLM's grammar: lines of either stream, never a scheduler's (a rank is the one
    its logger prints, ``[RANK 1]``)."""
    return Message(_G, build, evidence, stream=None, cause=cause, step=step)


def _note_row(grammar: str, evidence: Transition | None, anywhere: bool) -> Message:
    """The row of a message trtllm.lark writes beside its rule (``//@ memory_pool evidence``): a note,
    the phase it is evidence of."""
    return Message(grammar, _NOTE, evidence, stream=None, anywhere=anywhere)


def _mib_as_gb(text: str | None) -> float | None:
    """'15448' (MiB, as 'Loaded engine size: 15448 MiB' prints it) -> GB."""
    return gigabytes(f"{text} MiB") if text else None


def _ms_as_s(text: str | None) -> float | None:
    """'4523' (ms, as 'Engine load time 4523 ms' prints it) -> seconds."""
    value = number(text)
    return value / 1000 if value is not None else None


# the messages that are more than a note (an event with values, a step's duration, an error, an echo)
_MESSAGES: dict[str, Message] = {
    # -- launch ------------------------------------------------------------------------------------
    # the banner is printed by every process that imports tensorrt_llm (the proxy, then each MPI
    # worker): a start of the server, not of a launch
    "trt_version": _row(_NOTE, _START),
    "llm_backend": _row(_NOTE, _START),
    # -- weight loading ------------------------------------------------------------------------------
    "weights_gb": _row(b.values(ev.WeightLoadBegin), t(W, BEGIN)),
    # model_engine.py times the model's creation and its weights' loading: weight_loading's own measure
    "model_init_total": _row(b.timed_note("seconds"), t(W, EVIDENCE), step=Step("model_init", W)),
    "engine_loaded": _row(b.values(ev.WeightLoadEnd, mem_usage_gb=("mib", _mib_as_gb)), t(W, EVIDENCE)),
    "engine_load_time": _row(
        b.values(ev.StartupNote, {"message": "engine load time"}, elapsed_s=("ms", _ms_as_s)),
        t(W, EVIDENCE),
        step=Step("engine_load", W),
    ),
    # -- the KV cache --------------------------------------------------------------------------------
    "kv_allocated": _row(
        b.values(ev.KvCacheAllocated, kv_size_gb=("kv_size", gigabytes), tokens=("tokens", integer)), t(M, EVIDENCE)
    ),
    # the profiling after the sizing pass (a temporary cache, autotune, graph warmup): the rank is back in
    # memory_pool, and the sizing pass, from its first KV-cache line to here, is the phase's step
    "memory_profiling": _row(_NOTE, t(M, MarkerRole.AGAIN), step=Step("sizing_pass", M)),
    # -- ready ---------------------------------------------------------------------------------------
    "triton_service": _row(_NOTE, Transition(Phase.READY, MarkerRole.BEGIN, server_level=True)),
    # -- failures logged as a line -------------------------------------------------------------------
    # the worker's report of its executor's failure states the error (the cause table reads it)
    "executor_init_failed": _row(b.error("executor_init_failed"), cause=Cause.PYTHON_EXCEPTION),
    "tllm_exception": _row(b.error("tllm_exception"), cause=Cause.PYTHON_EXCEPTION),
    "tensorrt_error": _row(b.error("tensorrt_error"), cause=Cause.PYTHON_EXCEPTION),
    "triton_instance_failed": _row(b.error("triton_instance_failed"), cause=Cause.PYTHON_EXCEPTION),
    "segfault_encountered": _row(b.error("segfault"), cause=Cause.PYTHON_EXCEPTION),
    # echoes: another process's failure seen from here
    "worker_returned_error": _row(b.child("worker_returned_error")),
    "triton_load_failed": _row(b.child("model_load_failed")),
    "mpi_abort": _row(b.child("mpi_abort")),
}

_ROOT, _ECHO = SignatureRole.ROOT, SignatureRole.ECHO
_DIST, _WEIGHTS, _POOL = Phase.DISTRIBUTED_INIT, Phase.WEIGHT_LOADING, Phase.MEMORY_POOL

_KV_HINT = (
    "The KV cache did not fit next to the weights and the executor's buffers: lower "
    "--kv_cache_free_gpu_memory_fraction (kv_cache_config.free_gpu_memory_fraction; the runtime's buffers and "
    "the CUDA graphs need what it leaves), lower --max_batch_size or --max_num_tokens (smaller activation "
    "buffers), or spread the model over more GPUs with --tp_size."
)
_ENGINE_HINT = (
    "The engine was built by another TensorRT-LLM version than this runtime: rebuild it with this release "
    "(trtllm-build, or the LLM API's build, of the runtime's version; the Triton container's TensorRT-LLM "
    "for the tensorrtllm backend), or run the release that built it."
)

# Rows of the cause table, each placed before the shared row whose words it holds
_SIGNATURES: tuple[Signature, ...] = (
    Signature("trtllm_worker_error", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_killed"),
    Signature("trtllm_mpi_abort", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_killed"),
    Signature("trtllm_triton_gave_up", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_killed"),
    Signature("trtllm_executor_memory", Cause.KV_CACHE_INSUFFICIENT_MEMORY, _ROOT, _POOL, hint=_KV_HINT, before="device_oom"),
    Signature("trtllm_kv_no_room", Cause.KV_CACHE_INSUFFICIENT_MEMORY, _ROOT, _POOL, hint=_KV_HINT, before="device_oom"),
    Signature("trtllm_engine_mismatch", Cause.MODEL_LOAD_ERROR, _ROOT, _WEIGHTS, hint=_ENGINE_HINT, before="device_oom"),
    Signature(
        "trtllm_engine_deserialize",
        Cause.MODEL_LOAD_ERROR,
        _ROOT,
        _WEIGHTS,
        hint="The engine could not be deserialised: check the engine directory (rank<N>.engine for each of "
        "--tp_size x --pp_size ranks, config.json), that it was built for this GPU and by this TensorRT-LLM "
        "release; rebuild it with the runtime's version if not.",
        before="device_oom",
    ),
    Signature(
        "trtllm_cuda_malloc",
        Cause.CUDA_OOM,
        _ROOT,
        _POOL,  # the runtime's buffers, the decoder's and the KV cache's (tllmBuffers), made after the engine
        hint="A buffer of the runtime could not be allocated (out of GPU memory): lower "
        "--kv_cache_free_gpu_memory_fraction (kv_cache_config.free_gpu_memory_fraction) to leave the runtime "
        "room, lower --max_batch_size or --max_num_tokens, or use more GPUs (--tp_size).",
        before="device_oom",
    ),
    Signature("trtllm_nccl_comm", Cause.NCCL_ERROR, _ROOT, _DIST, before="comm_error"),
    Signature(
        "trtllm_segfault",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="A TensorRT-LLM worker crashed in native code (its signal handler printed the stack): the frames "
        "name the kernel or library; check the GPU, driver and CUDA versions this release supports, or report it.",
        before="native_crash",
    ),
)


# What to change, by cause and phase, in TensorRT-LLM's flags (trtllm-serve's, the LLM API's names)
_HINTS: tuple[Hint, ...] = (
    Hint(
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        "The KV cache ran out while serving: lower --max_batch_size or --max_num_tokens, or give the cache "
        "more memory (--kv_cache_free_gpu_memory_fraction up, when nothing else needs it).",
        SERVING_PHASES,
    ),
    Hint(Cause.KV_CACHE_INSUFFICIENT_MEMORY, _KV_HINT, STARTUP_PHASES),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while warming up CUDA graphs or the autotuner: lower --kv_cache_free_gpu_memory_fraction "
        "to leave them room, lower --max_batch_size (fewer graph batch sizes), or disable CUDA graphs "
        "(cuda_graph_config: null in --extra_llm_api_options).",
        frozenset({Phase.CUDA_GRAPH_CAPTURE}),
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while loading the weights or the engine: the model does not fit this GPU memory. Use "
        "more GPUs (--tp_size, --pp_size), a quantized checkpoint, or free memory held by other processes (nvidia-smi).",
        frozenset({Phase.WEIGHT_LOADING}),
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory making the executor's buffers or the KV cache: lower --kv_cache_free_gpu_memory_fraction, "
        "--max_batch_size or --max_num_tokens, or use more GPUs (--tp_size).",
    ),
    Hint(
        Cause.NCCL_ERROR,
        "NCCL could not set up the communicators of the ranks: rerun with NCCL_DEBUG=INFO to see why; check that "
        "--tp_size x --pp_size matches the GPUs (and MPI ranks) started, the network interface (NCCL_SOCKET_IFNAME), "
        "shared memory in containers (--ipc=host, --shm-size), and try NCCL_P2P_DISABLE=1.",
        STARTUP_PHASES,
    ),
    Hint(
        Cause.NCCL_ERROR,
        "A collective failed while serving: look for the rank whose error comes first; rerun with NCCL_DEBUG=WARN "
        "and check GPU/NIC health (nvidia-smi -q, dmesg for Xid errors).",
    ),
    Hint(
        Cause.MODEL_LOAD_ERROR,
        "Loading the model failed: check --model (a Hugging Face id, a checkpoint or an engine directory), that "
        "this TensorRT-LLM release supports the architecture and quantization, and, for an engine, that it was "
        "built by this release (rebuild it with the runtime's version).",
    ),
    Hint(
        Cause.IMPORT_ERROR,
        "TensorRT-LLM failed to import: its native libraries need the Python, CUDA, TensorRT and MPI versions the "
        "release was built for (use the release's container, or install the matching libpython, libmpi and "
        "tensorrt wheels).",
    ),
    Hint(
        Cause.CHILD_PROCESS_FAILED,
        "A TensorRT-LLM worker (an MPI rank) failed and its own error is not in this log: the proxy only echoes it. "
        "Capture every rank's output (mpirun --output-filename, or TLLM_LOG_LEVEL=INFO with 2>&1), and check "
        "`dmesg -T` for kills and segfaults.",
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "TensorRT-LLM stopped while launching: an argument or a configuration value was rejected (read the error); "
        "check the flags against `trtllm-serve serve --help` of this release and --extra_llm_api_options.",
        frozenset({Phase.LAUNCH}),
    ),
)

# -- TensorRT-LLM's functions by phase (Python frames, and the C++ frames of its stacks) -------------
_FUNCTIONS: tuple[ServerFunction, ...] = (
    # -- the executor's serving loop -------------------------------------------------------------
    ServerFunction("_executor_loop", Phase.READY),
    ServerFunction("_executor_loop_overlap", Phase.READY),
    ServerFunction("_forward_step", Phase.READY),
    # -- CUDA graphs and the autotuner ------------------------------------------------------------
    ServerFunction("warmup", Phase.CUDA_GRAPH_CAPTURE, "model_engine.py"),
    ServerFunction("_run_cuda_graph_warmup", Phase.CUDA_GRAPH_CAPTURE),
    ServerFunction("_run_autotuner_warmup", Phase.CUDA_GRAPH_CAPTURE),
    ServerFunction("_capture_generation_cuda_graphs", Phase.CUDA_GRAPH_CAPTURE),
    ServerFunction("capture", Phase.CUDA_GRAPH_CAPTURE, "cuda_graph_runner.py"),
    # -- the KV cache: its estimate and the final cache -----------------------------------------
    ServerFunction("estimate_max_tokens", _POOL),
    ServerFunction("_create_kv_cache_manager", _POOL),
    ServerFunction("configure_kv_cache_capacity", _POOL),
    ServerFunction("build_managers", _POOL),
    ServerFunction("_get_token_num_for_estimation", _POOL),
    ServerFunction("calculateMaxNumBlocks", _POOL),
    ServerFunction("KVCacheManager", _POOL),
    # -- weights and engines --------------------------------------------------------------------
    ServerFunction("_load_model", _WEIGHTS),
    ServerFunction("_build_model", Phase.LAUNCH, "llm.py", onward=True),
    ServerFunction("deserializePlugin", _WEIGHTS),
    ServerFunction("deserializeCudaEngine", _WEIGHTS),
    ServerFunction("TllmRuntime", _WEIGHTS),
    # -- communicators --------------------------------------------------------------------------
    ServerFunction("createComm", _DIST),
    ServerFunction("initialize_mpi_comm", _DIST),
    # -- the executor as a whole: from the model to the warmups, a lower bound --------------------
    ServerFunction("create_py_executor", _WEIGHTS, onward=True),
    ServerFunction("worker_main", Phase.LAUNCH, "worker.py", onward=True),
)

PACK = Pack(
    name="trtllm",
    display_name="TensorRT-LLM",
    grammars=("trtllm",),
    error_grammars=("trtllm_errors",),
    messages=_MESSAGES,
    annotated_row=_note_row,
    signatures=_SIGNATURES,
    functions=_FUNCTIONS,
    hints=_HINTS,
    summary_settings={"model": "model", "tp": "tensor_parallel_size", "pp": "pipeline_parallel_size"},
    # the banner (every process that imports it), the LLM API's backend line (the process that makes
    # the LLM), the PyTorch backend's configuration
    start_rules=("trt_version", "llm_backend"),
    launch_rules=("llm_backend",),
    launch_command="trtllm-serve",
    # the graphs are warmed up in what the KV cache's fraction leaves, one per batch size up to --max_batch_size
    capture_memory_flags=("--kv_cache_free_gpu_memory_fraction", "--max_batch_size"),
    # TensorRT-LLM's own lines (SGLang and vLLM print none of them): a window that starts after the banner
    own_rules=(
        "pytorch_config",
        "orchestrator",
        "mpi_pool_session",
        "hmac_key",
        "mpi_session_refreshed",
        "mgmn_node",
        "weights_gb",
        "model_init_total",
        "engine_version",
        "engine_loaded",
        "engine_load_time",
        "engine_inspect",
        "context_creation",
        "trt_model_setting",
        "scheduler_policy",
        "both_limits_set",
        "kv_blocks_per_seq",
        "kv_allocated",
        "kv_sizing_memory",
        "kv_pool_blocks",
        "kv_pages",
        "memory_profiling",
        "peak_memory",
        "estimated_kv",
        "runtime_buffers",
        "executor_created",
        "autotuner_warmup",
        "autotune_start",
        "graph_instances",
        "graph_warmup",
        "worker_signal",
        "executor_init_failed",
        "worker_returned_error",
        "tllm_exception",
        "tensorrt_error",
        "triton_instance_failed",
        "segfault_encountered",
    ),
    meanings={
        # trtllm-serve sends no warmup request: its server is up once uvicorn's start-up is complete
        "http_startup_complete": Transition(Phase.READY, MarkerRole.BEGIN, server_level=True),
    },
    server_paths=(r"/tensorrt_llm/",),
    # its start-up code, whose raise and assert statements are its own checks (the LLM API's arguments,
    # the executor's creation, the serve command)
    check_paths=(r"tensorrt_llm/(?:llmapi|_torch/pyexecutor|executor|commands|serve)",),
)
