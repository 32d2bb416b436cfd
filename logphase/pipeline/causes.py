"""The cause vocabulary, and the table that maps what an error says to a cause.

``Cause`` is what a failed start-up can be blamed on (the report's ``failure.cause``). ``SIGNATURES``
is the one rule for reading an error's text: each row names a rule of ``grammars/shared/errors.lark`` (the
phrases), the cause it means, its role and the phase it names. The first row whose phrases occur in
the text decides; a wrapper's row hands the text it quotes back to the table. A test checks that
every rule of the grammar has its row and every row its rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from logphase.pipeline.phases import Phase


class Cause(str, Enum):
    """The root cause of a failed startup: a fixed vocabulary, the ``cause`` of the report."""

    KV_CACHE_INSUFFICIENT_MEMORY = "kv_cache_insufficient_memory"
    CUDA_OOM = "cuda_oom"
    NCCL_ERROR = "nccl_error"
    DISTRIBUTED_TIMEOUT = "distributed_timeout"
    PORT_IN_USE = "port_in_use"
    MODEL_LOAD_ERROR = "model_load_error"
    IMPORT_ERROR = "import_error"
    WATCHDOG_TIMEOUT = "watchdog_timeout"
    KILLED = "killed"
    CHILD_PROCESS_FAILED = "child_process_failed"
    PYTHON_EXCEPTION = "python_exception"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        # print(report.phase) shows "weight_loading", as the JSON does
        return str(self.value)


class Role(str, Enum):
    """What an error's text is to the failure."""

    ROOT = "root"  # states an error: the root cause when it is the earliest
    ECHO = "echo"  # a consequence of a failure elsewhere; the cause only when nothing else is found
    WRAPPER = "wrapper"  # quotes another error, which decides (the rest of the text after the phrase)
    EXIT = "exit"  # the process tree exited: an echo before ready, nothing after it


@dataclass(frozen=True)
class Signature:
    rule: str  # the rule of grammars/shared/errors.lark
    cause: Cause | None  # None for wrappers: the quoted error's cause
    role: Role
    phase: Phase | None = None  # the phase the error itself names, whatever the markers say
    hint: str | None = None  # advice for this error in particular (else the cause's, by phase)


_ROOT, _ECHO, _WRAP = Role.ROOT, Role.ECHO, Role.WRAPPER
_MEM, _GRAPH, _WARMUP = Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE, Phase.WARMUP

# Order matters: echoes first (they contain root words: 'NCCL error ... remote process exited'),
# then wrappers, then root causes from the most specific to the most general.
SIGNATURES: tuple[Signature, ...] = (
    Signature("peer_finished_loading", Cause.DISTRIBUTED_TIMEOUT, _ECHO),
    Signature("child_killed", Cause.KILLED, _ECHO),
    Signature("child_died", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("sigquit", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("init_failed_echo", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("child_failed_error", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("sibling_terminated", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("peer_gone", Cause.NCCL_ERROR, _ECHO),
    Signature("harness_exit", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("kill_tree", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("exit_cleanup", Cause.KILLED, Role.EXIT),
    Signature("graph_capture_wrapper", None, _WRAP, _GRAPH),
    Signature("warmup_wrapper", None, _WRAP, _WARMUP),
    Signature("actor_wrapper", None, _WRAP),
    Signature("worker_wrapper", None, _WRAP),
    Signature("lazy_cuda_wrapper", None, _WRAP),
    Signature(
        "compile_wrapper",
        None,
        _WRAP,
        hint="torch.compile failed: retry without --enable-torch-compile "
        "(and without piecewise CUDA graphs), then report the quoted error upstream.",
    ),
    Signature("spawn_wrapper", None, _WRAP),
    Signature("kv_cache_no_room", Cause.KV_CACHE_INSUFFICIENT_MEMORY, _ROOT, _MEM),
    Signature("kv_pool_exhausted", Cause.KV_CACHE_INSUFFICIENT_MEMORY, _ROOT),
    Signature("device_oom", Cause.CUDA_OOM, _ROOT),
    Signature(
        "request_failed",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="An HTTP request to the server got no answer (refused or timed out): if it was the warmup request, "
        "the scheduler hung or died first; look for its error above, or for a stuck phase.",
    ),
    Signature("distributed_timeout", Cause.DISTRIBUTED_TIMEOUT, _ROOT),
    Signature("port_in_use", Cause.PORT_IN_USE, _ROOT),
    Signature(
        "duplicate_gpu",
        Cause.NCCL_ERROR,
        _ROOT,
        hint="Two ranks were placed on the same GPU: check CUDA_VISIBLE_DEVICES, --base-gpu-id and --tp/--dp "
        "against the GPUs this host or container really has.",
    ),
    Signature(
        "no_network_interface",
        Cause.NCCL_ERROR,
        _ROOT,
        hint="NCCL/Gloo found no usable network interface: set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the "
        "interface that reaches the other nodes (ip -br addr), or check the container's network mode.",
    ),
    Signature("comm_error", Cause.NCCL_ERROR, _ROOT),
    # imports are often lazy (a quantization kernel inside load_model): the frames say where
    Signature("import_failure", Cause.IMPORT_ERROR, _ROOT),
    Signature(
        "argument_error",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        Phase.LAUNCH,
        hint="SGLang rejected a command-line argument: this version does not know the flag or value named "
        "above; check `python -m sglang.launch_server --help` for this version, or upgrade SGLang.",
    ),
    Signature("model_files", Cause.MODEL_LOAD_ERROR, _ROOT),
    Signature("model_unsupported", Cause.MODEL_LOAD_ERROR, _ROOT),
    # SGLang's watchdog watches a running batch: the event loop was serving (or running the warmup)
    Signature("sglang_watchdog", Cause.WATCHDOG_TIMEOUT, _ROOT, Phase.READY),
    Signature(
        "gpu_unavailable",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="The process found no usable GPU: check the driver (nvidia-smi), that the container was started with "
        "GPU access (--gpus all, the device plugin's resource request), CUDA_VISIBLE_DEVICES, and that the "
        "driver is new enough for this PyTorch's CUDA (fabric manager on NVSwitch systems).",
    ),
    Signature(
        "memory_imbalance",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        Phase.DISTRIBUTED_INIT,
        hint="Some GPUs have less free memory than others: another process (often a stale server) holds them; "
        "check nvidia-smi and stop it, or pick free GPUs with CUDA_VISIBLE_DEVICES.",
    ),
    Signature(
        "device_kernel",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="A GPU kernel failed (illegal access, device assert, no kernel for this GPU): rerun with "
        "CUDA_LAUNCH_BLOCKING=1 (AMD_SERIALIZE_KERNEL=3 on ROCm) to find the kernel; a missing kernel image "
        "means the wheel was not built for this GPU architecture; try another --attention-backend.",
    ),
    Signature(
        "native_crash",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="A process crashed in native code (abort or segfault): the lines just above it name the library "
        "(CUDA/HIP, NCCL, a kernel); update drivers or the failing kernel's package, or report it upstream.",
    ),
)

SIGNATURE_OF_RULE = {s.rule: s for s in SIGNATURES}

# With no root cause in sight, the most telling echo names the failure: a kill says more than a
# dropped peer, which says more than 'a child failed'.
ECHO_PREFERENCE = (Cause.KILLED, Cause.NCCL_ERROR, Cause.DISTRIBUTED_TIMEOUT, Cause.CHILD_PROCESS_FAILED)
