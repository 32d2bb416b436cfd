"""The vLLM pack: vLLM's own messages (``grammars/vllm/vllm.lark``, every era from 0.5 to the newest,
V0 and V1 engines), its failure phrases (``vllm_errors.lark``), its functions by phase (what a
traceback's frames say about where it struck) and the advice that names vLLM's flags.

Phases, in vLLM's order (``/work/shared/vllm/INDEX.md``): the API server's version line, its
arguments and the engine's configuration are launch; NCCL/Gloo groups and the worker's device
set-up distributed_init; model loading weight_loading; memory profiling and KV-cache sizing
memory_pool; torch.compile and CUDA-graph capture cuda_graph_capture; the API server's start-up after
the engine is initialised warmup; uvicorn's start-up and served requests ready. In the V1 engine
torch.compile runs inside the memory-profiling run: its lines are cuda_graph_capture evidence, and the
KV-cache sizing lines printed after them do not take a rank back (a phase is only entered forwards);
a failure of the KV-cache sizing is memory_pool all the same, by its signature's phase.

vLLM writes its log to stdout and its tracebacks to stderr: its rows name no stream.
"""

from __future__ import annotations

from pathlib import Path

from logphase.packs import builders as b
from logphase.packs.grammars import terminal_pattern
from logphase.packs.mined import mined_functions
from logphase.packs.rows import (
    BEGIN,
    CLOSE,
    END,
    EVIDENCE,
    C,
    D,
    Hint,
    M,
    Message,
    Pack,
    ServerFunction,
    Signature,
    Step,
    W,
    t,
)
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import SERVING_PHASES, STARTUP_PHASES, MarkerRole, Phase, Transition
from logphase.vocabulary.values import gigabytes, number

_G = "vllm"
_START = t(Phase.LAUNCH, BEGIN, server_level=True)  # a run of vLLM starts here
_SERVING = Transition(Phase.READY, MarkerRole.SERVING, server_level=True)
_NOTE = b.with_message(ev.StartupNote)


def _row(
    build: b.Builder | None,
    evidence: Transition | None = None,
    cause: Cause | None = None,
    anywhere: bool = True,
    step: Step | None = None,
) -> Message:
    """A row of vLLM's grammar. A line without a process prefix is the server's own process (the
    engine, or the only worker of one GPU), not a rank: no row is a scheduler's row."""
    return Message(_G, build, evidence, stream=None, cause=cause, anywhere=anywhere, step=step)


def _note_row(grammar: str, evidence: Transition | None, anywhere: bool) -> Message:
    """The row of a message vllm.lark writes beside its rule (``//@ memory_pool evidence``): a note,
    the phase it is evidence of. Most of vLLM's messages are such notes: adding one is its rule."""
    return Message(grammar, _NOTE, evidence, stream=None, anywhere=anywhere)


# the messages that are more than a note (an event with values, a step's duration, an error, an echo);
# the notes are written beside their rules in vllm.lark (//@)
_MESSAGES: dict[str, Message] = {
    # -- launch: the front end, its arguments, the engine's configuration ------------------------
    "vllm_args": _row(b.args_dump, _START),
    # -- weight loading ---------------------------------------------------------------------------
    "load_begin": _row(b.simple(ev.WeightLoadBegin), t(W, BEGIN)),
    # vLLM's own durations (to the hundredth of a second and finer): the report's sub-steps; span= is the
    # name of vLLM's own OpenTelemetry span around the same call (0.33: @instrument(span_name=...) on
    # DefaultModelLoader.load_weights, GPUModelRunner.load_model and capture_model, EngineCore's
    # _initialize_kv_caches, which logs 'init engine ... took')
    "weights_took": _row(b.timed_note("seconds"), t(W, EVIDENCE), step=Step("loading_weights", W, span="Load weights")),
    # load_model from its first line to this one: the whole of weight_loading
    "model_loading_took": _row(
        b.values(ev.WeightLoadEnd, elapsed_s=("seconds", number), mem_usage_gb=("gib", gigabytes)),
        t(W, END),
        step=Step("model_loading", W, whole=True, span="Loading (GPU)"),
    ),
    "model_weights_took": _row(b.values(ev.WeightLoadEnd, mem_usage_gb=("gib", gigabytes)), t(W, END)),
    # -- memory profiling and KV-cache sizing -----------------------------------------------------
    "memory_profiling_takes": _row(b.timed_note("seconds"), t(M, EVIDENCE), step=Step("memory_profiling", M)),
    "profiling_run_took": _row(b.timed_note("elapsed"), t(M, EVIDENCE), step=Step("profiling_run", M)),
    # -- torch.compile (V1: inside the profiling run) and CUDA graphs -----------------------------
    # torch.compile runs in the profiling run, the graphs are captured after the KV cache is sized: the
    # two parts of capture, measured by the server, with memory_pool's work between them
    "compile_total": _row(b.timed_note("elapsed"), t(C, EVIDENCE), step=Step("torch_compile", C, part=True)),
    "vllm_capture_begin": _row(b.values(ev.CaptureBegin, {"graph": "cuda graph"}), t(C, BEGIN)),
    "capture_finished": _row(
        b.values(ev.CaptureEnd, {"graph": "cuda graph"}, elapsed_s=("capture_secs", number), mem_usage_gb=("gib", gigabytes)),
        t(C, END),
        step=Step("graph_capture", C, span="Capture model", part=True),
    ),
    # the engine core's last start-up line: profiling, KV cache, compile and capture are done
    # profiling (V1: with torch.compile in it), the KV cache and capture: memory_pool through capture
    "init_engine_took": _row(b.timed_note("engine_seconds"), CLOSE, step=Step("init_engine", M, through=C, span="Prepare model")),
    # -- serving (ready) ----------------------------------------------------------------------------
    # (anywhere=False: a head of common words, known at a message's start only: a stray 'Request x
    # failed' further in another server's line says nothing)
    "vllm_request_failed": _row(b.child("request_failed"), anywhere=False),
    # -- failures logged as a line (logger.exception's message, an ERROR line) ---------------------
    "cache_blocks_no_room": _row(b.error("not_enough_memory"), cause=Cause.KV_CACHE_INSUFFICIENT_MEMORY),
    "max_len_v0": _row(b.error("not_enough_memory"), cause=Cause.KV_CACHE_INSUFFICIENT_MEMORY),
    "max_len_v1": _row(b.error("not_enough_memory"), cause=Cause.KV_CACHE_INSUFFICIENT_MEMORY),
    "auto_fit_failed": _row(b.error("not_enough_memory"), cause=Cause.KV_CACHE_INSUFFICIENT_MEMORY),
    "free_memory_precheck": _row(b.error("gpu_memory_occupied"), cause=Cause.GPU_MEMORY_OCCUPIED),
    "warmup_oom": _row(b.error("cuda_oom"), cause=Cause.CUDA_OOM),
    "world_size_too_large": _row(b.error("world_size"), cause=Cause.PYTHON_EXCEPTION),
    "placement_group_failed": _row(b.error("placement_group"), cause=Cause.DISTRIBUTED_TIMEOUT),
    "engine_ready_timeout": _row(b.error("engine_ready_timeout"), cause=Cause.DISTRIBUTED_TIMEOUT),
    # the V0 worker's exception: with the error quoted (0.5) it states it; otherwise (0.6+) it is the
    # header of the logged traceback that follows, which holds the error
    "worker_exception_quoting": _row(b.error("worker_exception"), cause=Cause.PYTHON_EXCEPTION),
    "worker_failed_with_error": _row(b.error("worker_failed_with_error"), cause=Cause.PYTHON_EXCEPTION),
    # echoes: another process's failure seen from here
    "engine_init_failed": _row(b.child("engine_init_failed")),
    "worker_init_failed": _row(b.child("worker_init_failed")),
    "engine_dead": _row(b.child("engine_dead")),
    "engine_process_failed": _row(b.child("engine_process_failed")),
    "mq_engine_dead": _row(b.child("engine_dead")),
    "async_engine_dead": _row(b.child("engine_dead")),
    "worker_proc_died": _row(b.child("worker_died")),
    "process_died": _row(b.child("process_died", "exit_code")),
    "v0_worker_died": _row(b.child("worker_died", "exit_code")),
    "engine_core_died": _row(b.child("engine_core_died")),
}

_ROOT, _ECHO, _WRAP = SignatureRole.ROOT, SignatureRole.ECHO, SignatureRole.WRAPPER
_DIST, _WEIGHTS, _POOL, _CAPTURE = Phase.DISTRIBUTED_INIT, Phase.WEIGHT_LOADING, Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE

_MAX_LEN_HINT = (
    "The model's full length does not fit the KV cache: lower --max-model-len to at most the length vLLM "
    "estimates above (or the KV-cache token count it prints), or give the cache more memory: raise "
    "--gpu-memory-utilization, or spread the model over more GPUs with --tensor-parallel-size."
)

# Rows of the cause table; ``rank`` places them among the shared and SGLang rows (causes.py sorts by
# it): echoes before anything (they hold root words), the V0 worker's wrappers after SGLang's
# graph-capture wrapper, the roots just before the shared rows whose words they contain
_SIGNATURES: tuple[Signature, ...] = (
    # after the shared child_killed: an engine core ended by signal 9 reads as killed
    Signature("vllm_engine_init_failed", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_died"),
    Signature("vllm_engine_core_failed", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_killed"),
    Signature("vllm_worker_init_failed", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_killed"),
    Signature("vllm_engine_dead", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_killed"),
    Signature("vllm_engine_process_failed", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_killed"),
    # after the shared child_killed: a death by SIGKILL reads as killed
    Signature("vllm_worker_died", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_died"),
    Signature("vllm_worker_exception_device", None, _WRAP, _DIST, before="actor_wrapper"),
    Signature("vllm_worker_exception_load", None, _WRAP, _WEIGHTS, before="actor_wrapper"),
    Signature("vllm_worker_exception_memory", None, _WRAP, _POOL, before="actor_wrapper"),
    Signature("vllm_worker_exception_capture", None, _WRAP, _CAPTURE, before="actor_wrapper"),
    Signature("vllm_worker_exception", None, _WRAP, before="actor_wrapper"),
    Signature("vllm_free_memory", Cause.GPU_MEMORY_OCCUPIED, _ROOT, _DIST, before="device_oom"),
    Signature("vllm_kv_no_room", Cause.KV_CACHE_INSUFFICIENT_MEMORY, _ROOT, _POOL, before="device_oom"),
    Signature("vllm_max_len_kv", Cause.KV_CACHE_INSUFFICIENT_MEMORY, _ROOT, _POOL, hint=_MAX_LEN_HINT, before="device_oom"),
    # its text says 'CUDA out of memory': before the shared device_oom
    Signature(
        "vllm_warmup_oom",
        Cause.CUDA_OOM,
        _ROOT,
        _POOL,
        hint="Out of memory while warming up the sampler with the largest batch: lower --max-num-seqs, "
        "or --gpu-memory-utilization to leave the sampler room next to the KV cache.",
        before="device_oom",
    ),
    Signature(
        "vllm_placement_group",
        Cause.DISTRIBUTED_TIMEOUT,
        _ROOT,
        Phase.LAUNCH,
        hint="Ray could not place the workers: the cluster has fewer GPUs than --tensor-parallel-size x "
        "--pipeline-parallel-size (see `ray status`), or VLLM_HOST_IP differs from Ray's node IP.",
        before="distributed_timeout",
    ),
    Signature(
        "vllm_engine_ready_timeout",
        Cause.DISTRIBUTED_TIMEOUT,
        _ROOT,
        _WEIGHTS,
        hint="The engine core did not report ready in time, most often because loading the weights is slow "
        "(a download, a network file system): raise VLLM_ENGINE_READY_TIMEOUT_S, or pre-download the model.",
        before="distributed_timeout",
    ),
    Signature(
        "vllm_rpc_timeout",
        Cause.DISTRIBUTED_TIMEOUT,
        _ROOT,
        hint="A worker did not answer the engine's call in time (VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS, 300 s by "
        "default): it hung, most often in a collective waiting for a rank that never came. Find the "
        "worker that logged least or failed first, rerun with NCCL_DEBUG=INFO to see where NCCL stopped; raise "
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS only when the step is legitimately that slow.",
        before="distributed_timeout",
    ),
    Signature(
        "vllm_world_size",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        Phase.LAUNCH,
        hint="--tensor-parallel-size x --pipeline-parallel-size asks for more GPUs than this node has: lower "
        "them, or run on several nodes (--distributed-executor-backend ray, or --nnodes with --headless workers).",
        before="model_files",
    ),
)


# What to change, by cause and phase, in vLLM's flags ({gmu_text}: the --gpu-memory-utilization in use)
_HINTS: tuple[Hint, ...] = (
    Hint(
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        "The KV cache ran out while serving: lower --max-num-seqs or --max-num-batched-tokens, or raise "
        "--gpu-memory-utilization{gmu_text}.",
        SERVING_PHASES,
    ),
    Hint(
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        "No room for the KV cache after the weights and the profiling run: raise --gpu-memory-utilization{gmu_text} "
        "(e.g. 0.95), lower --max-model-len{max_len_text}, add GPUs with --tensor-parallel-size, or --enforce-eager "
        "to leave the CUDA-graph memory to the cache.",
        STARTUP_PHASES,
    ),
    Hint(
        Cause.GPU_MEMORY_OCCUPIED,
        "The GPU has less free memory than --gpu-memory-utilization{gmu_text} asks for: another process holds part "
        "of it (a previous vLLM, a notebook: nvidia-smi). Free the GPU, or LOWER --gpu-memory-utilization to at "
        "most the free/total fraction vLLM printed (raising it makes this worse).",
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while capturing CUDA graphs: lower --gpu-memory-utilization{gmu_text} to leave room for the "
        "graphs, lower --max-num-seqs{seqs_text} (fewer capture sizes), or --enforce-eager (no CUDA graphs, slower).",
        frozenset({Phase.CUDA_GRAPH_CAPTURE}),
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while loading the weights: the model does not fit in this GPU memory. Use more GPUs "
        "(--tensor-parallel-size), a quantized checkpoint, or free memory held by other processes (nvidia-smi).",
        frozenset({Phase.WEIGHT_LOADING}),
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory during the profiling run: lower --max-num-seqs{seqs_text} or --max-num-batched-tokens (the "
        "batch it profiles), or --gpu-memory-utilization{gmu_text}; --max-model-len bounds the largest batch too.",
        frozenset({Phase.MEMORY_POOL}),
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while serving: lower --gpu-memory-utilization{gmu_text} or --max-num-seqs{seqs_text}, so "
        "activations have room next to the KV cache.",
        SERVING_PHASES,
    ),
    Hint(
        Cause.CUDA_OOM,
        "CUDA out of memory: lower --gpu-memory-utilization{gmu_text} or --max-num-seqs{seqs_text}, or free GPU "
        "memory held by other processes (nvidia-smi).",
    ),
    Hint(
        Cause.NCCL_ERROR,
        "A collective failed during {phase}: look for the rank whose error comes first (a crashed peer makes the "
        "others fail); rerun with NCCL_DEBUG=WARN, check GPU/NIC health (nvidia-smi -q, dmesg for Xid errors) "
        "and try --disable-custom-all-reduce.",
        frozenset({Phase.READY, Phase.WARMUP, Phase.CUDA_GRAPH_CAPTURE}),
    ),
    Hint(
        Cause.NCCL_ERROR,
        "NCCL could not set up the parallel groups: rerun with NCCL_DEBUG=INFO to see why; check the network "
        "interface (NCCL_SOCKET_IFNAME), shared memory in containers (--ipc=host or a larger --shm-size), try "
        "NCCL_P2P_DISABLE=1, and that --tensor-parallel-size matches the GPUs this node really has.",
    ),
    Hint(
        Cause.DISTRIBUTED_TIMEOUT,
        "A collective timed out during {phase}: one worker stopped (crashed, hung, or much slower) while the "
        "others waited{lagging_text}. Find the lagging worker: the one whose error comes first or that logged "
        "least (TORCH_NCCL_DESYNC_DEBUG=1 names it); rerun with NCCL_DEBUG=INFO to see where NCCL stopped, and try "
        "--disable-custom-all-reduce. vLLM keeps PyTorch's default timeout: a step that legitimately takes longer "
        "is the thing to fix.",
        frozenset({Phase.READY, Phase.WARMUP, Phase.CUDA_GRAPH_CAPTURE, Phase.MEMORY_POOL, Phase.WEIGHT_LOADING}),
    ),
    Hint(
        Cause.DISTRIBUTED_TIMEOUT,
        "A distributed rendezvous timed out: a rank or a node never joined{lagging_text}. Start every node (`vllm "
        "serve ... --headless` on the others, or the Ray cluster), check MASTER_ADDR / VLLM_HOST_IP and the "
        "firewall, and that --tensor-parallel-size x --pipeline-parallel-size matches the GPUs started; rerun with "
        "NCCL_DEBUG=INFO; the wait is the default timeout, not slowness.",
    ),
    Hint(
        Cause.PORT_IN_USE,
        "The port{port_text} is taken: stop the other server (ss -ltnp | grep{port_text}), or pass another --port.",
    ),
    Hint(
        Cause.MODEL_LOAD_ERROR,
        "Loading the model failed: check --model (a path or a Hub id), that the checkpoint files are complete "
        "(re-download a damaged safetensors file), that this vLLM supports the architecture and quantization "
        "(--quantization), and --trust-remote-code if the model needs it.",
    ),
    Hint(
        Cause.IMPORT_ERROR,
        "A module failed to import: reinstall the versions this vLLM release pins (pip check), or the missing "
        "package (a torch built for another CUDA is a common one).",
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "vLLM stopped while launching: a flag or a configuration value was rejected (read the error); check "
        "the flags against `vllm serve --help` of this version, or upgrade vLLM.",
        frozenset({Phase.LAUNCH}),
    ),
    # an exception vLLM's own start-up check raised (diagnosing/diagnosis.py's Check)
    Hint(
        Cause.PYTHON_EXCEPTION,
        "vLLM refused the configuration{where}: the message above names the flag, value or model setting it "
        "does not accept with this model, hardware or release (--max-model-len, --dtype, --quantization, a "
        "parallel size, --enforce-eager); change it (vllm serve --help lists this version's flags) or use a "
        "release that supports the combination.",
        needs=("configuration_check",),
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "vLLM stopped its start-up{where} on a condition it checks itself: the message above says what it found "
        "(a device, driver or library state, a memory or peer-to-peer check); fix that, or rerun with the flag "
        "that avoids the feature it names.",
        needs=("environment_check",),
    ),
    Hint(
        Cause.CHILD_PROCESS_FAILED,
        "vLLM's engine or a worker process died, and its own error is not in this log: vLLM's front end only "
        "echoes it. Capture the whole output (2>&1, every process), and check `dmesg -T` for kills and segfaults.",
    ),
)


# -- vLLM's functions by phase (catalogue: grammars/vllm/catalogue, 0.5.4 .. 0.33.0) -----------------
# Names SGLang's table already has (load_model, load_weights, init_distributed_environment,
# initialize_model_parallel, safetensors_weights_iterator ...) are the same phase in vLLM: not listed twice.
_FUNCTIONS: tuple[ServerFunction, ...] = (
    # -- the engine core's and the workers' serving loops: the server is up ----------------------
    ServerFunction("run_busy_loop", Phase.READY),
    ServerFunction("_process_engine_step", Phase.READY),
    ServerFunction("start_worker_execution_loop", Phase.READY),
    # -- torch.compile (inside the profiling run in V1) and CUDA graphs ---------------------------
    ServerFunction("capture_model", _CAPTURE),
    ServerFunction("_capture_cudagraphs", _CAPTURE),
    ServerFunction("compile_or_warm_up_model", _CAPTURE),
    ServerFunction("wrap_inductor", _CAPTURE),
    ServerFunction("compile", _CAPTURE, "backends.py"),
    ServerFunction("compile", _CAPTURE, "compiler_interface.py"),
    # -- memory profiling and KV-cache sizing -------------------------------------------------------
    ServerFunction("determine_num_available_blocks", _POOL),
    ServerFunction("determine_available_memory", _POOL),
    ServerFunction("profile_run", _POOL),
    ServerFunction("_dummy_sampler_run", _POOL),
    # the V1 engine core sizes the KV cache, then has the workers compile and capture: a lower bound
    ServerFunction("_initialize_kv_caches", _POOL, "core.py", onward=True),
    ServerFunction("initialize_from_config", _POOL, "abstract.py", onward=True),
    # a V1 worker's RPC loop runs the engine core's start-up calls (memory profiling, the KV cache,
    # compile and capture) before it serves: a frame in it is a lower bound, not ready
    ServerFunction("worker_busy_loop", _POOL, "multiproc_executor.py", onward=True),
    ServerFunction("get_kv_cache_configs", _POOL),
    ServerFunction("get_kv_cache_config", _POOL),
    ServerFunction("check_enough_kv_cache_memory", _POOL),
    ServerFunction("raise_if_cache_size_invalid", _POOL),
    ServerFunction("initialize_cache", _POOL),
    ServerFunction("initialize_kv_cache", _POOL),
    ServerFunction("initialize_kv_cache_tensors", _POOL),
    # -- weights ------------------------------------------------------------------------------------
    ServerFunction("get_all_weights", _WEIGHTS),
    ServerFunction("initialize_model", _WEIGHTS),
    ServerFunction("download_model", _WEIGHTS),
    # -- the worker's device and torch.distributed ----------------------------------------------------
    ServerFunction("init_device", _DIST),
    ServerFunction("init_worker_distributed_environment", _DIST),
    ServerFunction("request_memory", _DIST),  # the free-memory pre-check (newest)
    # WorkerProc.__init__ sets the device up, then loads the weights: a lower bound only
    ServerFunction("__init__", _DIST, "multiproc_executor.py", "WorkerProc", onward=True),
    # -- the front end before the engine ------------------------------------------------------------
    ServerFunction("create_server_socket", Phase.LAUNCH),
    ServerFunction("run_server", Phase.LAUNCH, "api_server.py", onward=True),
)

PACK = Pack(
    name="vllm",
    display_name="vLLM",
    grammars=("vllm",),
    error_grammars=("vllm_errors",),
    messages=_MESSAGES,
    annotated_row=_note_row,
    signatures=_SIGNATURES,
    # under the hand rows, the frame table mined from the start-up call graphs of the catalogued
    # releases (functions.json, written by scripts/mine_vllm.py --functions-only from the phase roots
    # of scripts/vllm_phases.py; read as every pack's is: logphase/packs/mined.py)
    functions=_FUNCTIONS + mined_functions(Path(__file__).parent / "functions.json", _FUNCTIONS),
    hints=_HINTS,
    notes="notes.json",  # written by scripts/vllm_notes.py from grammars/vllm/catalogue
    overrides="overrides.json",  # written by scripts/override_rows.py from the catalogue's `overrides`
    hint_settings={"gmu": "gpu_memory_utilization", "max_len": "max_model_len", "seqs": "max_num_seqs", "port": "port"},
    summary_settings={
        "model": "model", "tp": "tensor_parallel_size", "dp": "data_parallel_size", "pp": "pipeline_parallel_size",
        "memory": "gpu_memory_utilization",
    },
    # (SGLang's dump names its model model_path: a dump with 'model' alone is vLLM's non-default args)
    config_marks=(
        "model",
        "gpu_memory_utilization",
        "tensor_parallel_size",
        "model_tag",
        "max_model_len",
        "enforce_eager",
        "max_num_seqs",
    ),
    # "vLLM API server version X" (0.5-0.11), "vLLM server version X, serving model M" (newest), the
    # newest's logo line with the version, "Initializing a V1 LLM engine (vX) ..." (every release; the
    # first line of a run without a front end: the offline LLM class), a headless worker node's launch
    start_rules=("api_server_version", "server_version", "version_logo", "engine_init", "headless_launch"),
    launch_rules=("api_server_version", "server_version", "headless_launch"),
    launch_command="vllm serve",
    # the graphs are captured in what --gpu-memory-utilization leaves, one per batch size up to --max-num-seqs
    capture_memory_flags=("--gpu-memory-utilization", "--max-num-seqs"),
    prefix_rules=("vllm_process",),
    # its logger's prefix ("ERROR 11-18 18:07:28 engine.py:366] "): SGLang prints it too (vLLM's kernels),
    # so it names vLLM only in a run nothing else names (a short window of vLLM's errors)
    logger_rules=("vllm",),
    sample_lines=(
        "INFO 04-30 10:20:35 [api_server.py:1043] vLLM API server version 0.8.5.post1",
        "INFO 11-18 18:07:28 llm_engine.py:161] Initializing an LLM engine (v0.6.4.post1) with config: model='m'",
        "(VllmWorker rank=1 pid=1714) INFO 07-14 03:11:20 [parallel_state.py:1076] rank 1 in world size 8",
        "(EngineCore_DP0 pid=104) INFO 08-17 22:48:21 [default_loader.py:262] Loading weights took 3.82 seconds",
        "(EngineCore_DP0 pid=3933741) (Worker_DP0_TP1 pid=3933749) INFO 08-17 22:48:22 [gpu_model_runner.py:2007] Model loading "
        "took 7.5 GiB and 5.01 seconds",
        "(VllmWorkerProcess pid=232) WARNING 11-18 18:07:30 custom_all_reduce.py:143] Custom allreduce is disabled",
        "(APIServer pid=1) ERROR 12-01 10:00:00 [core_client.py:564] Engine core initialization failed.",
    ),
    # vLLM's engine and front end (SGLang, which reuses vLLM's loader and kernels, prints none of these)
    own_rules=(
        "engine_process_started",
        "load_begin",
        "model_loading_took",
        "model_weights_took",
        "memory_profiling_results",
        "memory_profiling_takes",
        "gpu_blocks",
        "kv_cache_size",
        "available_kv_memory",
        "compile_total",
        "vllm_capture_begin",
        "capture_finished",
        "init_engine_took",
        "api_server_start",
        "routes",
        "route",
        "supported_tasks",
        "throughput",
    ),
    meanings={
        # vLLM sends no warmup request: its API server is up once uvicorn's start-up is complete
        "http_startup_complete": Transition(Phase.READY, MarkerRole.BEGIN, server_level=True),
        # vLLM's lines that sglang.lark reads (SGLang prints them too): in a vLLM run they are the
        # server process's, not a scheduler rank's (a single-GPU vLLM has no TP0)
        "weights_format": t(W, EVIDENCE, server_level=True),
        "custom_allreduce": t(D, EVIDENCE, server_level=True),
        "cuda_graph_addresses": t(C, EVIDENCE, server_level=True),
    },
    server_paths=(r"/vllm/",),
    # the vllm command ('vllm serve: error: ...'); its api_server module's 'api_server.py' is too
    # common a name to say vLLM
    programs=("vllm",),
    # its OpenAI-compatible handlers (serving_chat.py ... 0.5-0.11, openai/chat_completion/serving.py in
    # the newest) and the messages it logs before one request's traceback
    request_paths=(r"/vllm/entrypoints/openai/(?:serving_\w+|\w+/serving)\.py", r"/vllm/entrypoints/\w+/api_router\.py"),
    request_headers=(
        r"^Error in (?:preprocessing prompt inputs|chat completion stream generator|completion stream generator"
        r"|create_\w+|parser creation)",
    ),
    # its start-up code, whose raise and assert statements are its own checks (config, engine
    # arguments, workers, executors; not the model code's or the kernels')
    check_paths=(r"vllm/(?:config|engine|v1/engine|worker|v1/worker|executor|v1/executor|entrypoints|platforms)",),
    # the headers vLLM logs before the traceback of a process that dies from it (the engine core's,
    # a V1 worker's, a V0 worker's: the driver raises it again)
    fatal_headers=(
        terminal_pattern("vllm_errors", "VLLM_ENGINE_CORE_FAILED"),
        terminal_pattern("vllm", "WORKER_PROC_FAILED"),
        terminal_pattern("vllm", "WORKER_PROC_HIT"),
        terminal_pattern("vllm_errors", "VLLM_WORKER_EXCEPTION"),
    ),
)
