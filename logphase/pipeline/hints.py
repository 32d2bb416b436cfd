"""What to change: a hint for each cause, aware of the phase it struck in and of the numbers the
log gives (the --mem-fraction-static in use, the largest captured batch ...)."""

from __future__ import annotations

from typing import Any

from logphase.pipeline.causes import Cause
from logphase.pipeline.phases import Phase


def hint(cause: Cause, phase: Phase | None, config: dict[str, Any], facts: dict[str, Any]) -> str:
    """What to change, for this cause in this phase, with numbers from the log where it has them."""
    mfs = config.get("mem_fraction_static")
    mfs_text = f" (now {mfs})" if mfs is not None else ""
    if cause is Cause.KV_CACHE_INSUFFICIENT_MEMORY:
        if phase in (Phase.READY, Phase.WARMUP):
            return (
                "The KV cache ran out while serving: lower --max-running-requests or --chunked-prefill-size, or "
                f"raise --mem-fraction-static{mfs_text}; if token usage was low, suspect a leak (update SGLang)."
            )
        minimum = facts.get("min_mem_fraction_static")
        if minimum is not None:
            return (
                f"The KV cache did not fit: raise --mem-fraction-static above {minimum}{mfs_text}, "
                "or use a smaller --context-length / more GPUs (--tp)."
            )
        target = f"{min(float(mfs) + 0.04, 0.95):.2f}" if isinstance(mfs, int | float) else "a higher value"
        return (
            f"The KV cache did not fit after loading the weights: raise --mem-fraction-static{mfs_text} to {target}, "
            "or free GPU memory (other processes on the GPU, see nvidia-smi), or add GPUs with --tp."
        )
    if cause is Cause.CUDA_OOM:
        if phase is Phase.CUDA_GRAPH_CAPTURE:
            max_bs = facts.get("max_capture_bs") or config.get("cuda_graph_max_bs")
            bs_text = f" (largest captured: {max_bs}; try {max(1, int(max_bs) // 2)})" if isinstance(max_bs, int | float) else ""
            lower = f" to {max(float(mfs) - 0.05, 0.1):.2f}" if isinstance(mfs, int | float) else ""
            return (
                f"Out of memory while capturing CUDA graphs: lower --mem-fraction-static{mfs_text}{lower} "
                f"or --cuda-graph-max-bs{bs_text}; --disable-cuda-graph works but is much slower."
            )
        if phase is Phase.WEIGHT_LOADING:
            return (
                "Out of memory while loading the weights: the model does not fit in this GPU memory. Use more GPUs "
                "(--tp), a quantized checkpoint, or free memory held by other processes (nvidia-smi)."
            )
        if phase in (Phase.READY, Phase.WARMUP):
            return (
                f"Out of memory while serving: lower --mem-fraction-static{mfs_text}, --max-running-requests or "
                "--chunked-prefill-size, so activations have room next to the KV cache."
            )
        return f"CUDA out of memory: lower --mem-fraction-static{mfs_text} or free GPU memory held by other processes."
    if cause is Cause.NCCL_ERROR:
        if phase in (Phase.READY, Phase.WARMUP, Phase.CUDA_GRAPH_CAPTURE):
            return (
                f"A collective failed during {phase.value}: look for the rank whose error comes first (a crashed "
                "peer makes the others fail); rerun with NCCL_DEBUG=WARN, check GPU/NIC health (nvidia-smi -q, "
                "dmesg for Xid errors) and try --disable-custom-all-reduce."
            )
        return (
            "NCCL failed: rerun with NCCL_DEBUG=INFO to see why; check that all GPUs are visible and healthy "
            "(nvidia-smi topo -m), that /dev/shm is large enough in containers, and try --disable-custom-all-reduce."
        )
    if cause is Cause.DISTRIBUTED_TIMEOUT:
        if phase in (Phase.READY, Phase.WARMUP, Phase.CUDA_GRAPH_CAPTURE, Phase.MEMORY_POOL, Phase.WEIGHT_LOADING):
            return (
                f"A collective timed out during {phase.value}: one rank stopped (crashed, hung, or much slower) "
                "while the others waited. Find the rank whose error comes first or that logged least; "
                "TORCH_NCCL_DESYNC_DEBUG=1 names the lagging rank; raise --dist-timeout only for a legitimately "
                "slow step (a long weight load on one node)."
            )
        return (
            "A distributed rendezvous or collective timed out: check that every node/rank started, "
            "--dist-init-addr is reachable, --nnodes/--node-rank are right and no firewall blocks the ports; "
            "raise --dist-timeout only if a step is legitimately slow."
        )
    if cause is Cause.PORT_IN_USE:
        port = config.get("port")
        port_text = f" {port}" if port is not None else ""
        return f"The port{port_text} is taken: stop the old server (ss -ltnp | grep{port_text}) or pass another --port."
    if cause is Cause.MODEL_LOAD_ERROR:
        return (
            "Loading the model failed: check --model-path, that the checkpoint is complete, that the architecture "
            "and quantization are supported by this SGLang version, and --trust-remote-code if the model needs it."
        )
    if cause is Cause.IMPORT_ERROR:
        return "A module failed to import: reinstall the versions this SGLang release pins (pip check), or the missing package."
    if cause is Cause.WATCHDOG_TIMEOUT:
        return (
            "The scheduler stopped making progress for --watchdog-timeout seconds: a hang in a kernel or a collective. "
            "Read the py-spy dump above it; raise --watchdog-timeout only if a step is legitimately that slow."
        )
    if cause is Cause.KILLED:
        where = f" during {phase.value}" if phase else ""
        return (
            f"A process was killed{where} (SIGKILL, or the process tree vanished without an error): usually the "
            "kernel OOM killer or a container memory limit; check `dmesg -T | grep -i -e oom -e killed`, host RAM "
            "and the container's limits, and whether a harness timeout stopped the server."
        )
    if cause is Cause.CHILD_PROCESS_FAILED:
        return (
            "A child process died without an error in this log: make sure stderr is captured too (2>&1), "
            "then check `dmesg -T` for kills and segfaults."
        )
    if cause is Cause.PYTHON_EXCEPTION and facts.get("native_crash"):
        return (
            "A process crashed in native code (abort or segfault): the lines just above it name the library "
            "(CUDA/HIP, NCCL, a kernel); update drivers or the failing kernel's package, or report it upstream."
        )
    if cause is Cause.PYTHON_EXCEPTION and phase is Phase.WARMUP:
        return (
            "The warmup request failed: the server came up but its first real forward pass raised this error "
            "(often a kernel, device or model-feature problem). Reproduce it with one request after "
            "--skip-server-warmup, and read the traceback at the line given."
        )
    if cause is Cause.PYTHON_EXCEPTION:
        where = f" during {phase.value}" if phase else ""
        return f"An uncaught Python exception{where}: read the traceback at the line given; it is the first failure in time."
    if cause is Cause.UNKNOWN:
        where = f" during {phase.value}" if phase else ""
        return (
            f"The server failed{where} but this log does not hold the error (a traceback or dump cut short, or "
            "a window that misses it): read the full log or the process's stderr (2>&1), and `dmesg -T` for "
            "kills and segfaults."
        )
    return "The log shows a failure but not its cause."
