"""The server's functions by phase: what a traceback's frames say about where it struck.

One row per function of SGLang (and of the libraries it calls only in one phase), by its WHOLE name
as a frame prints it (``File "...", line 1017, in load_model``) or as a statement calls it
(``self.load_model()``). A name is evidence only when it is whole: a frame or a statement cut inside
a name (``self.init_m``, the end of a window) matches no row, so it says nothing. Generic names
(``__init__``, ``configure``) count only in the file the row gives; a constructor's row also names
its class, as a statement calls it (``CudaGraphRunner(``).

Names read from SGLang 0.4.6.post5, 0.5.2 and 0.5.23 (managers/scheduler.py, managers/tp_worker.py,
model_executor/model_runner.py, cuda_graph_runner.py and runner/, mem_cache/, model_loader/,
distributed/parallel_state.py, entrypoints/http_server.py, server_args.py) and from torch.distributed.
Functions that run in several phases (``forward``, ``initialize``, ``run_scheduler_process``,
``barrier``, ``broadcast``) have no row: the frames around them decide.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from logphase.pipeline.phases import Phase


class ServerFunction(NamedTuple):
    name: str  # the function as a frame prints it ('load_model', '__init__', '<module>')
    phase: Phase
    file: str | None = None  # only in this file (basename): for generic names
    cls: str | None = None  # for a constructor (__init__): its class, as a statement calls it
    # the function runs this phase and the ones after it (ModelRunner.initialize loads the weights,
    # then makes the pools and the graphs): a frame in it is only a lower bound of the phase
    onward: bool = False


_READY, _WARMUP = Phase.READY, Phase.WARMUP
_CAPTURE, _POOL = Phase.CUDA_GRAPH_CAPTURE, Phase.MEMORY_POOL
_WEIGHTS, _DIST, _LAUNCH = Phase.WEIGHT_LOADING, Phase.DISTRIBUTED_INIT, Phase.LAUNCH

SERVER_FUNCTIONS: tuple[ServerFunction, ...] = (
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
    ServerFunction("snapshot_download", _WEIGHTS),
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
    ServerFunction("init_process_group", _DIST),
    ServerFunction("_new_process_group_helper", _DIST),
    ServerFunction("_create_c10d_store", _DIST),
    ServerFunction("_tcp_rendezvous_handler", _DIST),
    ServerFunction("_env_rendezvous_handler", _DIST),
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

# a frame's function with a file, or without one (None: any file)
_BY_FRAME: dict[tuple[str, str | None], Phase] = {(f.name, f.file): f.phase for f in SERVER_FUNCTIONS if not f.onward}
_ONWARD: dict[tuple[str, str | None], Phase] = {(f.name, f.file): f.phase for f in SERVER_FUNCTIONS if f.onward}
# what a statement calls: a function by name (rows for any file), or a class by name
_BY_CALL: dict[str, Phase] = {f.name: f.phase for f in SERVER_FUNCTIONS if f.file is None and not f.onward} | {
    f.cls: f.phase for f in SERVER_FUNCTIONS if f.cls is not None
}
# a whole name followed by its call's parenthesis ('self.load_model(' or 'CudaGraphRunner(')
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")


def frame_phase(function: str | None, path: str) -> Phase | None:
    """The phase a frame's function runs in; None for a function the table does not know (or a
    frame cut before its function). ``Class.method`` (newer Pythons' qualified names) reads as the
    method, or for a constructor as the class."""
    if not function:
        return None
    file = path.rsplit("/", 1)[-1]
    owner, _, name = function.rpartition(".")
    found = _BY_FRAME.get((name, file)) or _BY_FRAME.get((name, None))
    if found is None and owner and name == "__init__":
        found = _BY_CALL.get(owner.rsplit(".", 1)[-1])
    return found


def frame_floor(function: str | None, path: str) -> Phase | None:
    """The earliest phase a frame's function can be in, for a function that runs several in turn
    (``onward`` rows); None for any other."""
    if not function:
        return None
    return _ONWARD.get((function.rpartition(".")[2], path.rsplit("/", 1)[-1]))


def call_phase(statement: str | None) -> Phase | None:
    """The phase of the call a source line makes: the last whole name called in it that the table
    knows ('self.model = self.loader.load_model(' is weight loading). A name the line ends inside of
    is no call: the input was cut there."""
    for name in reversed(_CALL.findall(statement or "")):
        found = _BY_CALL.get(name.rsplit(".", 1)[-1])
        if found is not None:
            return found
    return None


def table_problems() -> list[str]:
    """What is wrong with the table (the tests call it): a row whose name is no whole Python name,
    a function listed twice, a constructor without its file."""
    problems: list[str] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for row in SERVER_FUNCTIONS:
        if not re.fullmatch(r"[A-Za-z_]\w*|<module>", row.name):
            problems.append(f"{row.name!r}: not a whole function name")
        if (row.name, row.file, row.cls) in seen:
            problems.append(f"{row.name} ({row.file or 'any file'}): listed twice")
        seen.add((row.name, row.file, row.cls))
        if (row.name, row.file) in _BY_FRAME and _BY_FRAME[(row.name, row.file)] is not row.phase and not row.onward:
            problems.append(f"{row.name} ({row.file or 'any file'}): two phases")
        if row.name == "__init__" and (row.file is None or row.cls is None):
            problems.append(f"__init__ of {row.cls or '?'}: a constructor needs its file and class")
    return problems
