"""The shared pack: what every server's log holds besides the server's own lines (PyTorch and
torch.distributed, NCCL, Gloo, tqdm bars, uvicorn, the interpreter, shells and launchers, Python
tracebacks), and the failure phrases of those libraries. Grammars: ``grammars/shared/``.
"""

from __future__ import annotations

from logphase.packs import builders as b
from logphase.packs.rows import HTTP_UP, LAUNCH_NOTE, WEAK, ByLine, D, Hint, Message, Pack, Signature, t
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import Phase

_ROOT, _ECHO, _WRAP = SignatureRole.ROOT, SignatureRole.ECHO, SignatureRole.WRAPPER
_SERVING = frozenset({Phase.READY, Phase.WARMUP})

# the advice for a crash in native code: the hint of its signature and of its cause once a crash is known
NATIVE_CRASH_HINT = (
    "A process crashed in native code (abort or segfault): the lines just above it name the library "
    "(CUDA/HIP, NCCL, a kernel); update drivers or the failing kernel's package, or report it upstream."
)

_MESSAGES: dict[str, Message] = {
    # gloo.lark (stdout: Gloo's connection lines, format A)
    "gloo_connected": Message(
        "gloo",
        b.gloo,
        t(D, WEAK),
        stream="stdout",
    ),
    "gloo_not_connected": Message("gloo", b.gloo_not_connected, t(D, WEAK), stream="stdout"),
    "gloo_info": Message(
        "gloo",
        b.gloo,
        t(D, WEAK),
        stream="stdout",
    ),
    # nccl.lark (stdout: NCCL's debug output)
    "nccl_info": Message("nccl", b.nccl("INFO"), t(D, WEAK), stream="stdout"),
    "nccl_warn": Message(
        "nccl",
        b.nccl("WARN"),
        t(D, WEAK),
        stream="stdout",
    ),
    "nccl_trace": Message(
        "nccl",
        b.nccl("TRACE"),
        stream="stdout",
    ),
    "nccl_bare_version": Message("nccl", b.nccl("VERSION"), stream="stdout"),
    # torch.lark
    "elastic_failed": Message(
        "torch",
        b.torch_child("elastic_failed"),
    ),
    "closing_signal": Message(
        "torch",
        b.torch_child("closing_signal"),
    ),
    "pg_not_destroyed": Message(
        "torch",
        b.torch_child("pg_not_destroyed"),
    ),
    "collective_timeout": Message(
        "torch",
        b.distributed("collective_timeout"),
    ),
    "nccl_aborting": Message(
        "torch",
        b.distributed("nccl_abort"),
    ),
    "store_timeout": Message(
        "torch",
        b.distributed("store_timeout"),
    ),
    "socket_failure": Message(
        "torch",
        b.distributed("socket_failure"),
    ),
    "torch_other": Message("torch", b.torch_other),
    # tqdm.lark: the bar's description decides what it is evidence of (weights, capture, or nothing)
    "progress_bar": Message(
        "tqdm",
        b.progress_bar,
        ByLine("bar"),
    ),
    # http.lark
    "http_started": Message("http", b.http_state("started"), HTTP_UP),
    "http_waiting": Message("http", b.http_state("waiting"), HTTP_UP),
    "http_startup_complete": Message("http", b.http_state("startup_complete"), HTTP_UP),
    "http_running": Message("http", b.http_state("running"), HTTP_UP),
    "http_access": Message(
        "http",
        b.http_access,
        ByLine("access"),
        stream="stdout",
    ),
    "http_bind_failed": Message(
        "http",
        b.bind_failed,
        cause=Cause.PORT_IN_USE,
    ),
    "http_startup_failed": Message("http", b.http_state("startup_failed")),
    "http_shutdown": Message("http", b.http_state("shutdown")),
    "http_other": Message("http", b.http_state("other")),
    # process.lark
    "python_warning": Message(
        "process",
        b.python_warning,
        ByLine("warning"),
    ),
    "killed": Message("process", b.killed, stream=None),
    "oom_kill": Message("process", b.killed, stream=None),
    "signal_kill": Message("process", b.killed, stream=None),
    "shell_signal": Message("process", b.process_error("shell"), stream=None),
    "interpreter_error": Message(
        "process",
        b.process_error("interpreter", 1),
        LAUNCH_NOTE,
    ),
    "argument_error": Message(
        "process",
        b.process_error("argparse", 2),
        LAUNCH_NOTE,
    ),
    "launcher_exit": Message("process", b.process_error("launcher"), stream=None),
    "runtime_abort": Message(
        "process",
        b.process_error("runtime"),
    ),
    # traceback.lark: the lines of a multi-line record (records.py assembles them)
    "tb_header": Message("traceback", None),
    "tb_thread_exception": Message("traceback", None),
    "tb_fatal": Message("traceback", None),
    "tb_thread_dump": Message("traceback", None),
    "tb_extensions": Message("traceback", None),
    "tb_frame": Message("traceback", None),
    "tb_chain": Message("traceback", None),
    "tb_terminate": Message("traceback", None),
    "tb_what": Message("traceback", None),
    "tb_cxx_origin": Message(
        "traceback",
        None,
    ),
    "tb_cxx_frame": Message("traceback", None),
    "tb_exception": Message("traceback", None),
}

# The cause table's backbone, in its order (the first row whose phrase a text holds decides): echoes,
# wrappers, then roots from the most specific to the most general; a server's rows stand each before one
# of these (Signature.before)
_SIGNATURES: tuple[Signature, ...] = (
    Signature("child_killed", Cause.KILLED, _ECHO),
    Signature("child_died", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature(
        "child_failed_error",
        Cause.CHILD_PROCESS_FAILED,
        _ECHO,
    ),
    Signature("sibling_terminated", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature("peer_gone", Cause.NCCL_ERROR, _ECHO),
    Signature("peer_timed_out", Cause.DISTRIBUTED_TIMEOUT, _ECHO),
    Signature("harness_exit", Cause.CHILD_PROCESS_FAILED, _ECHO),
    Signature(
        "exit_cleanup",
        Cause.KILLED,
        SignatureRole.EXIT,
    ),
    Signature("actor_wrapper", None, _WRAP),
    Signature(
        "worker_wrapper",
        None,
        _WRAP,
    ),
    Signature(
        "lazy_cuda_wrapper",
        None,
        _WRAP,
    ),
    Signature(
        "spawn_wrapper",
        None,
        _WRAP,
    ),
    Signature("device_oom", Cause.CUDA_OOM, _ROOT),
    Signature(
        "request_failed",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="An HTTP request to the server got no answer (refused or timed out): if it was the warmup request, "
        "the scheduler hung or died first; look for its error above, or for a stuck phase.",
    ),
    Signature(
        "distributed_timeout",
        Cause.DISTRIBUTED_TIMEOUT,
        _ROOT,
    ),
    Signature(
        "port_in_use",
        Cause.PORT_IN_USE,
        _ROOT,
    ),
    Signature(
        "no_network_interface",
        Cause.NCCL_ERROR,
        _ROOT,
        hint="NCCL/Gloo found no usable network interface: set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the "
        "interface that reaches the other nodes (ip -br addr), or check the container's network mode.",
    ),
    Signature(
        "comm_error",
        Cause.NCCL_ERROR,
        _ROOT,
    ),
    # after every row that states an error: c10d's summary says only that one failed
    Signature("watchdog_summary", Cause.DISTRIBUTED_TIMEOUT, SignatureRole.UNSTATED),
    # imports are often lazy (a quantization kernel inside load_model): the frames say where
    Signature("import_failure", Cause.IMPORT_ERROR, _ROOT),
    Signature(
        "model_files",
        Cause.MODEL_LOAD_ERROR,
        _ROOT,
    ),
    Signature(
        "model_unsupported",
        Cause.MODEL_LOAD_ERROR,
        _ROOT,
    ),
    Signature(
        "gpu_unavailable",
        Cause.PYTHON_EXCEPTION,
        _ROOT,
        hint="The process found no usable GPU: check the driver (nvidia-smi), that the container was started with "
        "GPU access (--gpus all, the device plugin's resource request), CUDA_VISIBLE_DEVICES, and that the "
        "driver is new enough for this PyTorch's CUDA (fabric manager on NVSwitch systems).",
    ),
    Signature("native_crash", Cause.PYTHON_EXCEPTION, _ROOT, hint=NATIVE_CRASH_HINT),
    # the most general phrase of all: a text that says only that something timed out
    Signature("timed_out", Cause.DISTRIBUTED_TIMEOUT, _ROOT),
)

# The advice for a run of no known server (a window without its server's lines): it names no server's
# flags. A server's own row for the cause comes first in that server's runs (diagnosing/hints.py).
_HINTS: tuple[Hint, ...] = (
    Hint(
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        "The KV cache did not fit in the GPU memory left after the weights: give the server a larger share "
        "of GPU memory (its memory-fraction or memory-utilization setting), a shorter maximum context length, "
        "more GPUs (tensor parallelism), or free memory other processes hold (nvidia-smi).",
    ),
    Hint(
        Cause.CUDA_OOM,
        "CUDA out of memory{where}: the GPU memory the server was given did not hold what this step needs. "
        "Lower the share of GPU memory it reserves, the batch sizes it captures or serves, or the context "
        "length; use more GPUs or a quantized checkpoint; or free memory other processes hold (nvidia-smi).",
    ),
    Hint(
        Cause.GPU_MEMORY_OCCUPIED,
        "The GPU has less free memory than the server was told to take: another process holds part of it "
        "(nvidia-smi). Free the GPU, or lower the share of GPU memory the server asks for.",
    ),
    Hint(
        Cause.NCCL_ERROR,
        "NCCL failed{where}: find the rank whose error comes first (a crashed peer makes the others fail); rerun "
        "with NCCL_DEBUG=INFO, check that every GPU is visible and healthy (nvidia-smi topo -m, dmesg for Xid "
        "errors), the network interface (NCCL_SOCKET_IFNAME) and /dev/shm in containers.",
    ),
    Hint(
        Cause.DISTRIBUTED_TIMEOUT,
        "A distributed rendezvous or collective timed out{where}: a rank or node never joined, or stopped while "
        "the others waited. Check that every node and rank started, that the master address and port are "
        "reachable (firewall), and find the rank whose error comes first.",
    ),
    Hint(
        Cause.PORT_IN_USE,
        "A port the server binds is taken: stop the process holding it (ss -ltnp) or give the server another port.",
    ),
    Hint(
        Cause.MODEL_LOAD_ERROR,
        "Loading the model failed: check the model path or Hub id, that the checkpoint files are complete, that "
        "this server release supports the architecture and quantization, and trust-remote-code if the model needs it.",
    ),
    Hint(
        Cause.IMPORT_ERROR,
        "A module failed to import: reinstall the versions this server release pins (pip check), or the missing "
        "package (a torch built for another CUDA is a common one).",
    ),
    Hint(
        Cause.WATCHDOG_TIMEOUT,
        "The server's watchdog found no progress for its timeout: a hang in a kernel or a collective. Read the "
        "stack dump around it; raise the watchdog timeout only if a step is legitimately that slow.",
    ),
    Hint(
        Cause.KILLED,
        "A process was killed{where} (SIGKILL, or the process tree vanished without an error): usually the "
        "kernel OOM killer or a container memory limit; check `dmesg -T | grep -i -e oom -e killed`, host RAM "
        "and the container's limits, and whether a harness timeout stopped the server.",
    ),
    Hint(
        Cause.CHILD_PROCESS_FAILED,
        "A child process died without an error in this log: make sure stderr is captured too (2>&1), "
        "then check `dmesg -T` for kills and segfaults.",
    ),
    Hint(Cause.PYTHON_EXCEPTION, NATIVE_CRASH_HINT, needs=("native_crash",)),
    # an exception the server's own start-up check raised (diagnosing/diagnosis.py's Check)
    Hint(
        Cause.PYTHON_EXCEPTION,
        "The server refused its configuration{where}: the message above names the flag, value or model setting "
        "it does not accept with this model, hardware or release; change it (the server's --help lists this "
        "version's flags) or use a release that supports the combination.",
        needs=("configuration_check",),
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "The server stopped its start-up{where} on a condition it checks itself: the message above says what it "
        "found (a device, driver or library state, a memory or peer-to-peer check); fix that, or rerun with the "
        "flag that avoids the feature it names.",
        needs=("environment_check",),
    ),
    Hint(
        Cause.PYTHON_EXCEPTION,
        "An uncaught Python exception{where}: read the traceback at the line given; it is the first failure in time.",
    ),
    # the advice for a server whose pack gives none for these causes
    Hint(
        Cause.DISTRIBUTED_TIMEOUT,
        "A collective or a rendezvous timed out{where}: the ranks waited for one that did not come{lagging_text}. "
        "Find the lagging rank: the one whose error comes first or that logged least (TORCH_NCCL_DESYNC_DEBUG=1 "
        "names it), or the node that never started; rerun with NCCL_DEBUG=INFO to see where NCCL stopped; raise "
        "the timeout only when the wait is legitimate (a slow step on one rank, not a hang).",
    ),
    Hint(
        Cause.NCCL_ERROR,
        "NCCL failed{where}: rerun with NCCL_DEBUG=INFO to see why; check the network interface "
        "(NCCL_SOCKET_IFNAME) and that no firewall blocks the ports between nodes, shared memory in containers "
        "(--ipc=host or a larger --shm-size), that every GPU is visible and healthy (nvidia-smi), and that every "
        "node runs the same NCCL version.",
    ),
    Hint(
        Cause.UNKNOWN,
        "The server failed{where} but this log does not hold the error (a traceback or dump cut short, or "
        "a window that misses it): read the full log or the process's stderr (2>&1), and `dmesg -T` for "
        "kills and segfaults.",
    ),
)

PACK = Pack(
    name="shared",
    display_name="shared vocabularies (PyTorch, NCCL, Gloo, tqdm, uvicorn, interpreter, tracebacks)",
    grammars=("http", "nccl", "gloo", "torch", "process", "tqdm"),
    server=False,
    record_grammars=("traceback",),
    error_grammars=("errors",),
    messages=_MESSAGES,
    signatures=_SIGNATURES,
    hints=_HINTS,
    # PyTorch's, transformers' (and, until its pack, vLLM's) code runs the server's work
    server_paths=(r"/torch/", r"/transformers/", r"/vllm/"),
    harness_paths=(r"unittest/", r"/_pytest/", r"pytest", r"/test_[^/]*\.py$", r"/tests?/"),
    # uvicorn runs each request in run_asgi: "Exception in ASGI application" and its traceback
    # uvicorn's request loop, Starlette's and FastAPI's routing (every web server's request goes
    # through them; none runs at start-up), aiohttp's request handler
    request_paths=(
        r"/uvicorn/protocols/",
        r"/starlette/(?:routing|middleware|_exception_handler)",
        r"/fastapi/routing\.py",
        r"/aiohttp/web_protocol\.py",
    ),
    request_headers=(r"^(?:ERROR: +)?Exception in ASGI application\s*$", r"^Error handling request\b"),
)
