"""The SGLang pack: SGLang's own messages (``grammars/sglang/sglang.lark``, ``server_args.lark``),
its failure phrases (``sglang_errors.lark``), its functions by phase (what a traceback's frames say
about where it struck), and the advice that names SGLang's flags.
"""

from __future__ import annotations

from pathlib import Path

from logphase.packs import builders as b
from logphase.packs.mined import mined_functions
from logphase.packs.rows import (
    BEGIN,
    CLOSE,
    END,
    EVIDENCE,
    HTTP_UP,
    WEAK,
    BatchLines,
    ByLine,
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
from logphase.vocabulary.values import gigabytes, integer, number

_LAUNCH_LEVEL = t(Phase.LAUNCH, EVIDENCE, server_level=True)
_SERVING_NOTE = Transition(Phase.READY, MarkerRole.SERVING, server_level=True)
_SERVING_OR_WARMUP_NOTE = Transition(Phase.READY, MarkerRole.SERVING_OR_WARMUP, server_level=True)

_MESSAGES: dict[str, Message] = {
    # server_args.lark: the dump (its builder is in classify.py: a grammar of its own values)
    "server_args": Message(
        "server_args",
        None,
        t(Phase.LAUNCH, BEGIN, server_level=True),
    ),
    # sglang.lark
    "dist_init_begin": Message("sglang", b.simple(ev.DistInitBegin), t(D, BEGIN), scheduler=True),
    "dist_init_end": Message(
        "sglang",
        b.fields(ev.DistInitEnd, elapsed_s=("elapsed", number), mem_usage_gb=("mem usage", gigabytes)),
        t(D, END),
        scheduler=True,
    ),
    "memory_baseline": Message(
        "sglang",
        b.fields(ev.MemoryBaseline, mem_usage_gb=("mem usage", gigabytes)),
        t(D, WEAK),
        scheduler=True,
    ),
    "nccl_version": Message("sglang", b.nccl_version, t(D, WEAK), scheduler=True),
    "nccl_warmup": Message("sglang", b.with_message(ev.CollectiveWarmup), t(D, WEAK), scheduler=True),
    "weight_load_begin": Message(
        "sglang",
        b.fields(ev.WeightLoadBegin, avail_mem_gb=("avail mem", gigabytes)),
        t(W, BEGIN),
        scheduler=True,
    ),
    # SGLang's own measures (elapsed=, Time elapsed:): each rank's load and each capture, which the
    # phase's stamps agree with, listed only where the phase holds more (a draft model's load and capture)
    "weight_load_end": Message(
        "sglang",
        b.weight_load_end,
        t(W, END),
        scheduler=True,
        step=Step("load_weight", W, quiet=True),
    ),
    "kv_cache_dtype": Message("sglang", b.kv_cache_dtype, t(M, EVIDENCE), scheduler=True),
    "kv_cache_allocated": Message(
        "sglang",
        b.kv_cache_allocated,
        t(M, EVIDENCE),
        scheduler=True,
    ),
    "mamba_cache_allocated": Message(
        "sglang",
        b.fields(
            ev.MambaCacheAllocated,
            max_mamba_cache_size=("max_mamba_cache_size", integer),
            conv_state_gb=("conv_state size", gigabytes),
            ssm_state_gb=("ssm_state size", gigabytes),
        ),
        t(M, EVIDENCE),
        scheduler=True,
    ),
    "swa_memory_pool": Message(
        "sglang",
        b.with_message(ev.SwaMemoryPool),
        t(M, EVIDENCE),
        scheduler=True,
    ),
    "memory_pool_end": Message(
        "sglang",
        b.fields(ev.MemoryPoolEnd, avail_mem_gb=("avail mem", gigabytes)),
        t(M, END),
        scheduler=True,
    ),
    "capture_begin": Message(
        "sglang",
        b.capture_begin,
        t(C, BEGIN),
        scheduler=True,
    ),
    "capture_end": Message(
        "sglang",
        b.capture_end,
        t(C, END),
        scheduler=True,
        step=Step("capture_{graph}", C, quiet=True),
    ),
    "capture_sizes": Message("sglang", b.capture_sizes, t(C, EVIDENCE), scheduler=True),
    "capture_failed": Message("sglang", b.error("capture_failed")),
    "scheduler_ready": Message(
        "sglang",
        b.scheduler_ready,
        CLOSE,
        scheduler=True,
    ),
    "startup_timings": Message(
        "sglang",
        b.startup_timings,
        Transition(None, MarkerRole.CLOSE, server_level=True),
    ),
    "server_ready": Message("sglang", b.simple(ev.ServerReady), t(Phase.READY, BEGIN, server_level=True)),
    "pd_warmup": Message("sglang", b.with_message(ev.WarmupMarker), HTTP_UP),
    # printed by the warmup only (the catalogue: _execute_server_warmup): the server is up
    "warmup_failed": Message("sglang", b.error("warmup_failed"), HTTP_UP),
    "sigquit": Message("sglang", b.child("sigquit")),
    "kill_process_tree": Message(
        "sglang",
        b.child("kill_process_tree"),
    ),
    "scheduler_died": Message("sglang", b.child("scheduler_died", "died_code"), names_rank="rank_index"),
    "scheduler_dead": Message("sglang", b.child("scheduler_dead"), names_rank="rank_index"),
    "exit_code": Message("sglang", b.child("exit_code", "code")),
    "init_failed": Message("sglang", b.error("init_failed"), cause=Cause.CHILD_PROCESS_FAILED),
    "watchdog_timeout": Message(
        "sglang",
        b.error("watchdog_timeout"),
        cause=Cause.WATCHDOG_TIMEOUT,
    ),
    "subprocess_crashed": Message(
        "sglang",
        b.child("subprocess_crashed", "code"),
    ),
    "child_terminated": Message("sglang", b.child("child_terminated", "code")),
    "not_enough_memory": Message(
        "sglang",
        b.error("not_enough_memory"),
        cause=Cause.KV_CACHE_INSUFFICIENT_MEMORY,
    ),
    "kv_no_room": Message(
        "sglang",
        b.error("not_enough_memory"),
        cause=Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        hint_values={"minimum_fraction": "minimum"},  # 0.5.23+: the smallest fraction that would fit
    ),
    "port_in_use": Message("sglang", b.error("port_in_use"), cause=Cause.PORT_IN_USE),
    # ModelRunner.init_torch_distributed (and 0.5.19's bootstrap check), every release
    "memory_imbalance": Message("sglang", b.memory_imbalance, t(D, WEAK), scheduler=True),
    # the settings SGLang changes on its own (the catalogue of 0.2-0.5.23 says where): sized with
    # the KV cache (the memory pool), or by ServerArgs in the main process (launch)
    "override_reduced": Message(
        "sglang",
        b.override("setting", "requested", "actual"),
        t(M, WEAK),
        scheduler=True,
    ),
    "override_reset": Message(
        "sglang",
        b.override("phrase", None, "actual"),
        _LAUNCH_LEVEL,
    ),
    "override_profiled": Message(
        "sglang",
        b.override("setting_key", "requested", "actual"),
        t(M, WEAK),
        scheduler=True,
    ),
    "override_capped": Message(
        "sglang",
        b.override("setting", None, "actual"),
        t(M, WEAK),
        scheduler=True,
    ),
    # a feature is disabled by ServerArgs (launch) or by the model runner: the catalogue's note for
    # the whole message says the phase (a CUDA graph turned off has none: noise.json says why)
    "override_disabled": Message("sglang", b.override_disabled, ByLine("note")),
    "override_adjusted": Message(
        "sglang",
        b.override_adjusted,
        _LAUNCH_LEVEL,
    ),
    "shutdown": Message("sglang", b.with_message(ev.Shutdown)),
    "runtime_batch": Message(
        "sglang",
        b.runtime_batch,
        ByLine("batch"),
    ),
    "attention_backend_default": Message("sglang", b.with_message(ev.StartupNote), _LAUNCH_LEVEL),
    "custom_allreduce": Message(
        "sglang",
        b.with_message(ev.StartupNote),
        t(D, WEAK),
        scheduler=True,
    ),
    "allreduce_path": Message("sglang", b.with_message(ev.StartupNote), t(D, WEAK), scheduler=True),
    "weights_format": Message("sglang", b.with_message(ev.StartupNote), t(W, EVIDENCE), scheduler=True),
    "hf_snapshot": Message(
        "sglang",
        b.with_message(ev.StartupNote),
        t(W, EVIDENCE),
        scheduler=True,
    ),
    "swa_pool_usage": Message(
        "sglang",
        b.with_message(ev.StartupNote),
        t(M, EVIDENCE),
        scheduler=True,
    ),
    "max_concurrent_requests": Message("sglang", b.with_message(ev.StartupNote), t(M, EVIDENCE), scheduler=True),
    "cuda_graph_addresses": Message("sglang", b.with_message(ev.StartupNote), t(C, WEAK), scheduler=True),
    # LoRA adapters load after the base weights: weight loading goes on until the last one
    "lora_backend": Message("sglang", b.with_message(ev.StartupNote), t(W, EVIDENCE), scheduler=True),
    "lora_adapter_loading": Message("sglang", b.with_message(ev.StartupNote), t(W, EVIDENCE), scheduler=True),
    "lora_manager_ready": Message("sglang", b.with_message(ev.StartupNote), t(W, EVIDENCE), scheduler=True),
    "mla_optimization": Message("sglang", b.with_message(ev.StartupNote), _LAUNCH_LEVEL),
    # the main process reads the chat template while the schedulers start: says no phase
    "chat_template_default": Message("sglang", b.with_message(ev.StartupNote)),
    # notes printed in passing, by the phase that prints them (sglang.lark)
    "launch_note": Message("sglang", b.with_message(ev.StartupNote), _LAUNCH_LEVEL),
    "scheduler_launch_note": Message("sglang", b.with_message(ev.StartupNote), _LAUNCH_LEVEL),
    "dist_init_note": Message("sglang", b.with_message(ev.StartupNote), t(D, WEAK), scheduler=True),
    "weight_loading_note": Message("sglang", b.with_message(ev.StartupNote), t(W, EVIDENCE), scheduler=True),
    "memory_pool_note": Message("sglang", b.with_message(ev.StartupNote), t(M, WEAK), scheduler=True),
    "capture_note": Message("sglang", b.with_message(ev.StartupNote), t(C, EVIDENCE), scheduler=True),
    # a request's fate while serving: noise of the ready phase, never a failure (decode retraction
    # comes from decode steps only, never from the warmup's short request)
    "request_retraction": Message("sglang", b.with_message(ev.StartupNote), _SERVING_NOTE),
    "request_abort": Message("sglang", b.with_message(ev.StartupNote), _SERVING_OR_WARMUP_NOTE),
    # known only at a message's start: other libraries print "WARNING: " inside their lines too
    "sglang_warning": Message("sglang", b.with_message(ev.StartupNote), ByLine("note"), anywhere=False),
}

_ROOT, _ECHO, _WRAP = SignatureRole.ROOT, SignatureRole.ECHO, SignatureRole.WRAPPER
_MEM, _GRAPH, _WARMUP = Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE, Phase.WARMUP

# Rows of the cause table; ``rank`` places them among the shared pack's (causes.py sorts by it)
_SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "peer_finished_loading",
        Cause.DISTRIBUTED_TIMEOUT,
        _ECHO,
        # SGLang's own wait after the weights (a monitored barrier of 480 s, or 300 s before 0.5), which
        # --dist-timeout does not set
        hint="This rank loaded its weights, and another did not within SGLang's fixed wait after it: that rank "
        "failed (its own error is in its lines or its node's log: an OOM, a crash) or is slow to load (a network "
        "file system, a cold cache: copy the weights to local disk, or --load-format with a faster loader); "
        "--dist-timeout does not change this wait.",
        before="child_killed",
    ),
    Signature("sigquit", Cause.CHILD_PROCESS_FAILED, _ECHO, before="child_failed_error"),
    Signature(
        "init_failed_echo",
        Cause.CHILD_PROCESS_FAILED,
        _ECHO,
        before="child_failed_error",
    ),
    Signature("kill_tree", Cause.CHILD_PROCESS_FAILED, _ECHO, before="exit_cleanup"),
    Signature(
        "graph_capture_wrapper",
        None,
        _WRAP,
        _GRAPH,
        before="actor_wrapper",
    ),
    Signature(
        "warmup_wrapper",
        None,
        _WRAP,
        _WARMUP,
        before="actor_wrapper",
    ),
    Signature(
        "compile_wrapper",
        None,
        _WRAP,
        hint="torch.compile failed: retry without --enable-torch-compile "
        "(and without piecewise CUDA graphs), then report the quoted error upstream.",
        before="spawn_wrapper",
    ),
    Signature(
        "kv_cache_no_room",
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        _ROOT,
        _MEM,
        before="device_oom",
    ),
    Signature(
        "kv_pool_exhausted",
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        _ROOT,
        before="device_oom",
    ),
    Signature(
        "duplicate_gpu",
        Cause.NCCL_ERROR,
        _ROOT,
        hint="Two ranks were placed on the same GPU: check CUDA_VISIBLE_DEVICES, --base-gpu-id and --tp/--dp "
        "against the GPUs this host or container really has.",
        before="no_network_interface",
    ),
    Signature(
        "argument_error",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        Phase.LAUNCH,
        hint="SGLang rejected a command-line argument: this version does not know the flag or value named "
        "above; check `python -m sglang.launch_server --help` for this version, or upgrade SGLang.",
        before="model_files",
    ),
    # SGLang's watchdog watches a running batch: the event loop was serving (or running the warmup)
    Signature(
        "sglang_watchdog",
        Cause.WATCHDOG_TIMEOUT,
        _ROOT,
        Phase.READY,
        before="gpu_unavailable",
    ),
    # another process holds part of some GPUs: the memory the server was told to take is not free
    Signature(
        "memory_imbalance",
        Cause.GPU_MEMORY_OCCUPIED,
        _ROOT,
        Phase.DISTRIBUTED_INIT,
        hint="Some GPUs have less free memory than others: another process (often a stale server) holds them; "
        "check nvidia-smi and stop it, or pick free GPUs with CUDA_VISIBLE_DEVICES.",
        before="native_crash",
    ),
    Signature(
        "device_kernel",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="A GPU kernel failed (illegal access, device assert, no kernel for this GPU): rerun with "
        "CUDA_LAUNCH_BLOCKING=1 (AMD_SERIALIZE_KERNEL=3 on ROCm) to find the kernel; a missing kernel image "
        "means the wheel was not built for this GPU architecture; try another --attention-backend.",
        before="native_crash",
    ),
)


# What to change, by cause and phase (diagnosing/hints.py: a row that needs a value goes first, then
# a row for the phase, then the cause's general row); ``{mfs_text}`` and the others come from the log
_HINTS: tuple[Hint, ...] = (
    Hint(
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        "The KV cache ran out while serving: lower --max-running-requests or --chunked-prefill-size, or "
        "raise --mem-fraction-static{mfs_text}; if token usage was low, suspect a leak (update SGLang).",
        SERVING_PHASES,
    ),
    Hint(
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        "The KV cache did not fit: raise --mem-fraction-static above {minimum}{mfs_text}, "
        "or use a smaller --context-length / more GPUs (--tp).",
        STARTUP_PHASES,
        needs=("minimum",),
    ),
    Hint(
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        "The KV cache did not fit after loading the weights: raise --mem-fraction-static{mfs_text} to {target}, "
        "or free GPU memory (other processes on the GPU, see nvidia-smi), or add GPUs with --tp.",
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while capturing CUDA graphs: lower --mem-fraction-static{mfs_text}{lower} "
        "or --cuda-graph-max-bs{bs_text}; --disable-cuda-graph works but is much slower.",
        frozenset({Phase.CUDA_GRAPH_CAPTURE}),
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while loading the weights: the model does not fit in this GPU memory. Use more GPUs "
        "(--tp), a quantized checkpoint, or free memory held by other processes (nvidia-smi).",
        frozenset({Phase.WEIGHT_LOADING}),
    ),
    Hint(
        Cause.CUDA_OOM,
        "Out of memory while serving: lower --mem-fraction-static{mfs_text}, --max-running-requests or "
        "--chunked-prefill-size, so activations have room next to the KV cache.",
        SERVING_PHASES,
    ),
    Hint(Cause.CUDA_OOM, "CUDA out of memory: lower --mem-fraction-static{mfs_text} or free GPU memory held by other processes."),
    Hint(
        Cause.NCCL_ERROR,
        "A collective failed during {phase}: look for the rank whose error comes first (a crashed "
        "peer makes the others fail); rerun with NCCL_DEBUG=WARN, check GPU/NIC health (nvidia-smi -q, "
        "dmesg for Xid errors) and try --disable-custom-all-reduce.",
        frozenset({Phase.READY, Phase.WARMUP, Phase.CUDA_GRAPH_CAPTURE}),
    ),
    Hint(
        Cause.NCCL_ERROR,
        "NCCL failed: rerun with NCCL_DEBUG=INFO to see why; check that all GPUs are visible and healthy "
        "(nvidia-smi topo -m), that /dev/shm is large enough in containers, and try --disable-custom-all-reduce; "
        "across nodes, that NCCL_SOCKET_IFNAME names the interface that reaches the others, that no firewall "
        "blocks their ports and that every node runs the same NCCL.",
    ),
    Hint(
        Cause.DISTRIBUTED_TIMEOUT,
        "A collective timed out during {phase}: one rank stopped (crashed, hung, or much slower) "
        "while the others waited{lagging_text}. Find the lagging rank: the one whose error comes first or "
        "that logged least (TORCH_NCCL_DESYNC_DEBUG=1 names it); rerun with NCCL_DEBUG=INFO to see where "
        "NCCL stopped; raise --dist-timeout only for a legitimately slow step (a long weight load on one node).",
        frozenset({Phase.READY, Phase.WARMUP, Phase.CUDA_GRAPH_CAPTURE, Phase.MEMORY_POOL, Phase.WEIGHT_LOADING}),
    ),
    Hint(
        Cause.DISTRIBUTED_TIMEOUT,
        "A distributed rendezvous or collective timed out: a rank or a node never joined{lagging_text}. Check "
        "that every node/rank started, --dist-init-addr is reachable, --nnodes/--node-rank are right and no "
        "firewall blocks the ports; rerun with NCCL_DEBUG=INFO; raise --dist-timeout only if a step is "
        "legitimately slow.",
    ),
    # in distributed init the schedulers bind torch.distributed's store (the NCCL port) and their
    # ZMQ ports, not the HTTP port: the port the error names is one of those
    Hint(
        Cause.PORT_IN_USE,
        "A port the schedulers bind in distributed init is taken (the one named above, not the HTTP --port): "
        "torch.distributed's store (--nccl-port, or the port of --dist-init-addr on multi-node) or an internal "
        "port SGLang picked; stop the old server holding it (ss -ltnp | grep <port>) or pass another --nccl-port "
        "/ --dist-init-addr port.",
        frozenset({Phase.DISTRIBUTED_INIT}),
    ),
    Hint(
        Cause.PORT_IN_USE,
        "The port{port_text} is taken: stop the old server (ss -ltnp | grep{port_text}) or pass another --port.",
    ),
    Hint(
        Cause.MODEL_LOAD_ERROR,
        "Loading the model failed: check --model-path, that the checkpoint is complete, that the architecture "
        "and quantization are supported by this SGLang version, and --trust-remote-code if the model needs it.",
    ),
    Hint(
        Cause.IMPORT_ERROR,
        "A module failed to import: reinstall the versions this SGLang release pins (pip check), or the missing package.",
    ),
    Hint(
        Cause.WATCHDOG_TIMEOUT,
        "The scheduler stopped making progress for --watchdog-timeout seconds: a hang in a kernel or a collective. "
        "Read the py-spy dump above it; raise --watchdog-timeout only if a step is legitimately that slow.",
    ),
    # an exception SGLang's own start-up check raised (diagnosing/diagnosis.py's Check): the cause is
    # python_exception, the check says what was refused
    Hint(
        Cause.PYTHON_EXCEPTION,
        "SGLang refused its arguments at launch: the message above names the flag, value or model setting it does "
        "not accept; fix it (python -m sglang.launch_server --help lists this version's flags) or use an SGLang "
        "release that supports the combination.",
        frozenset({Phase.LAUNCH, None}),
        needs=("configuration_check",),
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "SGLang refused the configuration{where}: the message above names what this model, backend or "
        "hardware does not support with these flags; change the flag it names (an attention backend, a KV cache "
        "dtype, a parallel size) or use an SGLang release that supports the combination.",
        needs=("configuration_check",),
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "SGLang stopped its start-up{where} on a condition it checks itself: the message above says what it "
        "found (a device, driver or library state, a peer-to-peer or memory check, a pool that does not fit); "
        "fix that, or rerun with the flag that skips the feature it names.",
        needs=("environment_check",),
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "The warmup request failed: the server came up but its first real forward pass raised this error "
        "(often a kernel, device or model-feature problem). Reproduce it with one request after "
        "--skip-server-warmup, and read the traceback at the line given.",
        frozenset({Phase.WARMUP}),
    ),
)


# -- the functions of SGLang (and of the libraries it calls only in one phase), by phase -----------
# One row per function by its WHOLE name as a frame prints it or a statement calls it (read from
# SGLang 0.4.6.post5, 0.5.2 and 0.5.23 and torch.distributed); see diagnosing/functions.py.
_READY, _WARMUP = Phase.READY, Phase.WARMUP
_CAPTURE, _POOL = Phase.CUDA_GRAPH_CAPTURE, Phase.MEMORY_POOL
_WEIGHTS, _DIST, _LAUNCH = Phase.WEIGHT_LOADING, Phase.DISTRIBUTED_INIT, Phase.LAUNCH

_FUNCTIONS: tuple[ServerFunction, ...] = (
    # -- the scheduler's serving loop and what it runs each step: the server is up ---------------
    ServerFunction("run_event_loop", _READY),
    ServerFunction("dispatch_event_loop", _READY),
    ServerFunction("_dispatch_event_loop_once", _READY),
    ServerFunction("event_loop_normal", _READY),
    ServerFunction("event_loop_overlap", _READY),
    ServerFunction("event_loop_pp", _READY),
    ServerFunction("event_loop_normal_disagg_prefill", _READY),
    ServerFunction("event_loop_overlap_disagg_prefill", _READY),
    ServerFunction("event_loop_normal_disagg_decode", _READY),
    ServerFunction("event_loop_overlap_disagg_decode", _READY),
    ServerFunction("event_loop_pp_disagg_prefill", _READY),
    ServerFunction("event_loop_pp_disagg_decode", _READY),
    ServerFunction("pop_and_process", _READY),
    ServerFunction("on_idle", _READY),
    ServerFunction("self_check_during_idle", _READY),
    ServerFunction("check_memory", _READY),
    ServerFunction("recv_requests", _READY),
    ServerFunction("ingest_requests", _READY),
    ServerFunction("process_input_requests", _READY),
    ServerFunction("handle_generate_request", _READY),
    ServerFunction("_handle_generate_request", _READY),
    ServerFunction("handle_batch_generate_request", _READY),
    ServerFunction("handle_embedding_request", _READY),
    ServerFunction("handle_batch_embedding_request", _READY),
    ServerFunction("get_next_batch_to_run", _READY),
    ServerFunction("get_new_batch_prefill", _READY),
    ServerFunction("_get_new_batch_prefill_raw", _READY),
    ServerFunction("update_running_batch", _READY),
    ServerFunction("run_batch", _READY),
    ServerFunction("process_batch_result", _READY),
    ServerFunction("process_batch_result_prefill", _READY),
    ServerFunction("process_batch_result_decode", _READY),
    ServerFunction("forward_batch_generation", _READY),
    ServerFunction("forward_batch_embedding", _READY),
    ServerFunction("forward_batch_split_prefill", _READY),
    ServerFunction("forward_thread_func", _READY),
    ServerFunction("forward_thread_func_", _READY),
    ServerFunction("forward_decode", _READY),
    ServerFunction("forward_extend", _READY),
    ServerFunction("forward_idle", _READY),
    ServerFunction("forward_split_prefill", _READY),
    ServerFunction("watchdog_thread", _READY),
    # the HTTP server's side of a request (the main process)
    ServerFunction("generate_request", _READY),
    ServerFunction("_handle_batch_output", _READY),
    ServerFunction("handle_loop", _READY),
    # -- the HTTP server's warmup request -------------------------------------------------------------
    ServerFunction("_wait_and_warmup", _WARMUP),
    ServerFunction("_execute_server_warmup", _WARMUP),
    ServerFunction("_send_disaggregation_warmup_requests", _WARMUP),
    # -- CUDA graph capture ---------------------------------------------------------------------------
    ServerFunction("init_cuda_graphs", _CAPTURE),
    ServerFunction("init_device_graphs", _CAPTURE),
    ServerFunction("init_all_cuda_graphs", _CAPTURE),
    ServerFunction("init_decode_cuda_graph", _CAPTURE),
    ServerFunction("init_prefill_cuda_graph", _CAPTURE),
    ServerFunction("capture_cuda_graphs", _CAPTURE),
    ServerFunction("capture_decode_graph", _CAPTURE),
    ServerFunction("capture_prefill_graph", _CAPTURE),
    ServerFunction("capture", _CAPTURE),
    ServerFunction("_capture", _CAPTURE),
    ServerFunction("capture_prepare", _CAPTURE),
    ServerFunction("capture_one_batch_size", _CAPTURE),
    ServerFunction("capture_one_shape", _CAPTURE),
    ServerFunction("_capture_graph", _CAPTURE),
    ServerFunction("_capture_one_stream", _CAPTURE),
    ServerFunction("_create_device_graph", _CAPTURE),
    ServerFunction("init_forward_metadata_capture_cuda_graph", _CAPTURE),
    ServerFunction("__init__", _CAPTURE, "cuda_graph_runner.py", "CudaGraphRunner"),
    ServerFunction("__init__", _CAPTURE, "decode_cuda_graph_runner.py", "DecodeCudaGraphRunner"),
    ServerFunction("__init__", _CAPTURE, "prefill_cuda_graph_runner.py", "PrefillCudaGraphRunner"),
    ServerFunction("__init__", _CAPTURE, "piecewise_cuda_graph_runner.py", "PiecewiseCudaGraphRunner"),
    ServerFunction("__init__", _CAPTURE, "eagle_draft_cuda_graph_runner.py", "EAGLEDraftCudaGraphRunner"),
    ServerFunction("__init__", _CAPTURE, "eagle_draft_extend_cuda_graph_runner.py", "EAGLEDraftExtendCudaGraphRunner"),
    # -- ModelRunner.initialize: after distributed init, first the weights, then pools and graphs ----
    ServerFunction("initialize", _WEIGHTS, "model_runner.py", onward=True),
    # -- the KV cache and the other memory pools ------------------------------------------------------
    ServerFunction("init_memory_pool", _POOL),
    ServerFunction("init_memory_pools", _POOL),
    ServerFunction("init_target_memory_pool", _POOL),
    ServerFunction("init_memory_pool_and_cache", _POOL),
    ServerFunction("alloc_memory_pool", _POOL),
    ServerFunction("profile_max_num_token", _POOL),
    ServerFunction("init_kv_cache_configurator", _POOL),
    ServerFunction("_profile_available_bytes", _POOL),
    ServerFunction("_resolve_memory_pool_config", _POOL),
    ServerFunction("_init_pools", _POOL),
    ServerFunction("_build_token_to_kv_pool", _POOL),
    ServerFunction("_build_req_to_token_pool", _POOL),
    ServerFunction("_build_token_to_kv_pool_allocator", _POOL),
    ServerFunction("calculate_pool_sizes", _POOL),
    ServerFunction("_create_buffers", _POOL),
    ServerFunction("configure", _POOL, "kv_cache_configurator.py"),
    ServerFunction("__init__", _POOL, "kv_cache_configurator.py", "KVCacheConfigurator"),
    ServerFunction("__init__", _POOL, "memory_pool.py", "MHATokenToKVPool"),
    ServerFunction("__init__", _POOL, "memory_pool.py", "MLATokenToKVPool"),
    ServerFunction("__init__", _POOL, "memory_pool.py", "ReqToTokenPool"),
    ServerFunction("__init__", _POOL, "allocator.py", "TokenToKVPoolAllocator"),
    ServerFunction("__init__", _POOL, "memory_pool_host.py", "MHATokenToKVPoolHost"),
    # -- weights: download, model construction, loading -----------------------------------------------
    ServerFunction("load_model", _WEIGHTS),
    ServerFunction("load_weights", _WEIGHTS),
    ServerFunction("load_weights_and_postprocess", _WEIGHTS),
    ServerFunction("load_model_with_cpu_quantization", _WEIGHTS),
    ServerFunction("get_model", _WEIGHTS),
    ServerFunction("get_model_loader", _WEIGHTS),
    ServerFunction("_initialize_model", _WEIGHTS),
    ServerFunction("_prepare_weights", _WEIGHTS),
    ServerFunction("_get_weights_iterator", _WEIGHTS),
    ServerFunction("_get_all_weights", _WEIGHTS),
    ServerFunction("_maybe_download_from_modelscope", _WEIGHTS),
    ServerFunction("download_weights_from_hf", _WEIGHTS),
    ServerFunction("safetensors_weights_iterator", _WEIGHTS),
    ServerFunction("pt_weights_iterator", _WEIGHTS),
    ServerFunction("weight_loader", _WEIGHTS),
    ServerFunction("_weight_loader_impl", _WEIGHTS),
    ServerFunction("_weight_loader_physical", _WEIGHTS),
    ServerFunction("default_weight_loader", _WEIGHTS),
    ServerFunction("snapshot_download", _WEIGHTS, library="huggingface_hub"),
    ServerFunction("start_startup_weight_load", _WEIGHTS),
    ServerFunction("finalize_startup_weight_load", _WEIGHTS),
    ServerFunction("__init__", _WEIGHTS, "loader.py", "DefaultModelLoader"),
    # -- torch.distributed, NCCL and the parallel groups ----------------------------------------------
    ServerFunction("init_torch_distributed", _DIST),
    ServerFunction("init_distributed_environment", _DIST),
    ServerFunction("initialize_model_parallel", _DIST),
    ServerFunction("ensure_model_parallel_initialized", _DIST),
    ServerFunction("init_model_parallel_group", _DIST),
    ServerFunction("init_world_group", _DIST),
    ServerFunction("init_process_group", _DIST, library="torch"),
    ServerFunction("_new_process_group_helper", _DIST, library="torch"),
    ServerFunction("_create_c10d_store", _DIST, library="torch"),
    ServerFunction("_tcp_rendezvous_handler", _DIST, library="torch"),
    ServerFunction("_env_rendezvous_handler", _DIST, library="torch"),
    ServerFunction("ncclCommInitRank", _DIST),
    ServerFunction("__init__", _DIST, "parallel_state.py", "GroupCoordinator"),
    ServerFunction("__init__", _DIST, "pynccl.py", "PyNcclCommunicator"),
    # -- the main process before any scheduler: arguments, configuration, spawning -------------------
    ServerFunction("launch_server", _LAUNCH),
    ServerFunction("_launch_subprocesses", _LAUNCH),
    ServerFunction("prepare_server_args", _LAUNCH),
    ServerFunction("check_server_args", _LAUNCH),
    ServerFunction("_set_envs_and_config", _LAUNCH),
    ServerFunction("__post_init__", _LAUNCH, "server_args.py", "ServerArgs"),
    ServerFunction("<module>", _LAUNCH, "launch_server.py"),
)

PACK = Pack(
    name="sglang",
    display_name="SGLang",
    grammars=("server_args", "sglang"),
    error_grammars=("sglang_errors",),
    messages=_MESSAGES,
    signatures=_SIGNATURES,
    # under the hand rows, the frame table mined from the call graphs of 14 releases (functions.json,
    # written by scripts/mine_sglang.py; read as every pack's is: logphase/packs/mined.py)
    functions=_FUNCTIONS + mined_functions(Path(__file__).parent / "functions.json", _FUNCTIONS),
    hints=_HINTS,
    hint_settings={"mfs": "mem_fraction_static", "max_bs": "cuda_graph_max_bs", "port": "port"},
    config_marks=("mem_fraction_static", "tp_size", "model_path"),
    summary_settings={
        "model": "model_path", "tp": "tp_size", "dp": "dp_size", "ep": "ep_size", "pp": "pp_size",
        "memory": "mem_fraction_static",
    },
    own_rules=("server_args",),
    prefix_rules=("sglang_prefix",),
    logger_rules=("sglang_prefix",),
    sample_lines=(
        "[2026-05-12 18:20:05] server_args=ServerArgs(model_path='google/gemma-2-27b-it', tp_size=2)",
        "[2026-05-12 18:20:15 TP0] Load weight begin. avail mem=76.51 GB",
        "[2026-05-09 09:20:26 DP0 TP1 EP1] Capture cuda graph begin. This can take up to several minutes. avail mem=9.26 GB",
        "[2026-05-09 09:20:26.123 TP0] Init torch distributed begin.",
        "[2026-05-09 09:20:26] WARNING server_args.py:1833: Overlap scheduler is disabled.",
        "[09:20:26 TP0] Memory pool end. avail mem=8.42 GB",
    ),
    launchers=("launch_server",),
    launch_command="python -m sglang.launch_server",
    batch_lines=BatchLines("sglang", "runtime_batch", "RUNTIME_BATCH", "PREFILL_BATCH"),
    dump_grammars=("server_args",),
    capture_memory_flags=("--mem-fraction-static", "--cuda-graph-max-bs"),
    # vLLM's distributed helpers that SGLang reuses print these (grammars/vllm/vllm.lark reads them):
    # in an SGLang run they are the scheduler's distributed init
    meanings={
        "port_retry": Transition(Phase.DISTRIBUTED_INIT, MarkerRole.WEAK),
        "shm_handle": Transition(Phase.DISTRIBUTED_INIT, MarkerRole.WEAK),
    },
    warmup_paths=("/model_info", "/get_model_info"),
    notes="notes.json",  # written by scripts/sglang_notes.py from grammars/sglang/catalogue
    overrides="overrides.json",  # written by scripts/override_rows.py from the catalogue's `overrides`
    server_paths=(r"sglang/srt", r"launch_server"),
    # python -m sglang.launch_server: argparse's prog is the module's file
    programs=("launch_server.py",),
    # its OpenAI-compatible handlers (openai_api/adapter.py until 0.4, entrypoints/openai/serving_*.py after)
    request_paths=(r"sglang/srt/openai_api/adapter\.py", r"sglang/srt/entrypoints/openai/serving_\w+\.py"),
    # SGLang's own start-up code: its raise and assert statements there are its checks
    check_paths=(r"sglang/srt/", r"sglang/launch_server\.py"),
    harness_paths=(r"/sglang/test/",),
    fatal_headers=(r"hit an exception", r"^Initialization failed"),
    cut_headers=(r"hit an exception", r"warmup error"),
)
