"""vLLM's phase roots: the functions vLLM runs each start-up phase in, for the call graph of
``sglang_phases.py`` (the same walk: every function takes the phase of the nearest root; a helper
as near to roots of two phases is ``tied``, a function that calls roots of two phases ``spans``
them). Read from the source of the releases ``mine_vllm.py`` mines (0.5 to the newest, the V0 and
V1 engines); used by ``mine_vllm.py --functions`` (stdlib only).

vLLM's start-up, by era (the worker's methods are called by name through ``collective_rpc("x")``
and ``_run_workers("x")``, which no call graph follows, so each is a root of its own):

* the front end (launch): ``run_server``, the engine arguments and the configuration, the engine's
  and the executor's constructors, ``run_engine_core``, ``run_mp_engine``;
* worker init (distributed_init): ``Worker.init_device`` (the device, then
  ``init_worker_distributed_environment``), the parallel groups and the communicators;
* the model runner's load (weight_loading): ``Worker.load_model`` / ``ModelRunner.load_model`` and
  every model loader;
* the profile run and the KV cache (memory_pool): ``determine_num_available_blocks`` (V0),
  ``determine_available_memory`` (V1), ``profile_run``, ``initialize_cache`` / ``_init_cache_engine``
  (V0), ``get_kv_cache_config`` / ``initialize_from_config`` / ``initialize_kv_cache`` (V1);
* capture (cuda_graph_capture): ``_warm_up_model`` (V0), ``compile_or_warm_up_model`` (V1),
  ``capture_model``, the CUDA-graph runners and torch.compile's backends;
* serving (ready): the engine-core busy loop (``run_busy_loop``, ``_process_engine_step``), the V0
  engine's step and loops, the workers' execution loops.

The dummy forward passes (``_dummy_run``, ``execute_model`` of the V0 model runner) are reached from
the profile run, from capture and from serving: tied, so no evidence, as they should be.
"""

from __future__ import annotations

from sglang_phases import Roots

# (phase, qualified-name glob, file glob or None): the most specific first, as in sglang_phases.py
VLLM_PHASE_ROOTS: Roots = [
    # -- serving: the V1 engine core's busy loop, the V0 engine's steps, the workers' loops
    ("ready", "*.run_busy_loop", "vllm/v1/engine/core.py"),
    ("ready", "*._process_engine_step", None),
    ("ready", "*._process_input_queue", None),
    ("ready", "EngineCore.step", None),
    ("ready", "EngineCore.step_with_batch_queue", None),
    ("ready", "LLMEngine.step", "vllm/engine/llm_engine.py"),
    ("ready", "_AsyncLLMEngine.step_async", None),
    ("ready", "AsyncLLMEngine.run_engine_loop", None),
    ("ready", "AsyncLLMEngine.engine_step", None),
    ("ready", "MQLLMEngine.run_engine_loop", None),
    ("ready", "MQLLMEngine.engine_step", None),
    ("ready", "*.start_worker_execution_loop", None),
    ("ready", "*.execute_model", "vllm/v1/worker/gpu_worker.py"),
    ("ready", "*.execute_model", "vllm/v1/worker/gpu_model_runner.py"),
    ("ready", "AsyncLLM.generate", None),
    ("ready", "AsyncLLM.output_handler", None),
    ("ready", "*.output_handler", "vllm/v1/engine/async_llm.py"),
    # -- CUDA graphs and torch.compile (V1: the compile runs inside the profiling run; its frames
    # are in vllm/compilation, which the hand rows of the pack call capture too)
    ("cuda_graph_capture", "*._warm_up_model", None),
    ("cuda_graph_capture", "*.compile_or_warm_up_model", None),
    ("cuda_graph_capture", "*._compile_or_warm_up_model", None),
    ("cuda_graph_capture", "*.capture_model", None),
    ("cuda_graph_capture", "*._capture_cudagraphs", None),
    ("cuda_graph_capture", "CUDAGraphRunner.*", None),
    ("cuda_graph_capture", "*", "vllm/compilation/**"),
    # -- the profile run and the KV cache
    ("memory_pool", "*.determine_num_available_blocks", None),
    ("memory_pool", "*.determine_available_memory", None),
    ("memory_pool", "*.profile_run", None),
    ("memory_pool", "*._dummy_sampler_run", None),
    ("memory_pool", "*.initialize_cache", None),
    ("memory_pool", "*._init_cache_engine", None),
    ("memory_pool", "CacheEngine.__init__", None),
    ("memory_pool", "*.initialize_from_config", None),
    ("memory_pool", "*.initialize_kv_cache", None),
    ("memory_pool", "*.initialize_kv_cache_tensors", None),
    ("memory_pool", "*._initialize_kv_caches", None),
    ("memory_pool", "get_kv_cache_config*", None),
    ("memory_pool", "*", "vllm/v1/core/kv_cache_utils.py"),
    # -- the model runner's load: weights
    ("weight_loading", "*.load_model", "vllm/worker/*.py"),
    ("weight_loading", "*.load_model", "vllm/v1/worker/*.py"),
    ("weight_loading", "*.load_model", "vllm/v1/worker/gpu/*.py"),
    ("weight_loading", "*", "vllm/model_executor/model_loader/**"),
    # -- worker init: the device and torch.distributed
    ("distributed_init", "*.init_device", None),
    ("distributed_init", "init_worker_distributed_environment", None),
    ("distributed_init", "init_distributed_environment", None),
    ("distributed_init", "initialize_model_parallel", None),
    ("distributed_init", "ensure_model_parallel_initialized", None),
    ("distributed_init", "GroupCoordinator.__init__", None),
    ("distributed_init", "*.__init__", "vllm/distributed/device_communicators/*.py"),
    # -- launch: the front end, the arguments and configuration, the engine and executor built
    ("launch", "run_server", None),
    ("launch", "run_server_worker", None),
    ("launch", "build_async_engine_client*", None),
    ("launch", "*.from_engine_args", None),
    ("launch", "*.from_vllm_config", None),
    ("launch", "EngineArgs.*", None),
    ("launch", "AsyncEngineArgs.*", None),
    # (not the configuration's files as a whole: every phase calls their helpers, which would make
    # every caller span launch)
    ("launch", "VllmConfig.__post_init__", None),
    ("launch", "ModelConfig.__init__", None),
    ("launch", "ModelConfig.__post_init__", None),
    ("launch", "make_arg_parser", None),
    ("launch", "run_engine_core", None),
    ("launch", "*.run_engine_core", None),
    ("launch", "run_mp_engine", None),
    ("launch", "initialize_ray_cluster", None),
    ("launch", "LLMEngine.__init__", None),
    ("launch", "AsyncLLM.__init__", None),
    ("launch", "MQLLMEngine.__init__", None),
    ("launch", "EngineCore.__init__", None),
    ("launch", "EngineCoreProc.__init__", None),
    ("launch", "*Executor.__init__", None),
    ("launch", "*._init_executor", None),
]
