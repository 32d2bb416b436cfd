"""Failures: which events are fatal, which are only echoes, the cause, the phase and the hint."""

from __future__ import annotations

import re
from enum import Enum
from typing import Any, NamedTuple

from logphase.pipeline import events as ev
from logphase.pipeline.causes import Cause
from logphase.pipeline.grammars import Parsed, parse
from logphase.pipeline.phases import Phase


class Severity(str, Enum):
    ROOT = "root"  # can be the root cause
    ECHO = "echo"  # a consequence; the cause only when nothing else is found
    NOTE = "note"  # listed as a consequence when a failure exists, never a failure by itself


class Assessment(NamedTuple):
    severity: Severity
    cause: Cause
    phase: Phase | None  # the phase the evidence itself names (frames, message), if any
    message: str


_RULES: tuple[tuple[Cause, re.Pattern[str]], ...] = (
    (
        Cause.KV_CACHE_INSUFFICIENT_MEMORY,
        re.compile(
            r"Not enough memory\. Please try to increase --mem-fraction-static|leave no GPU memory for the KV cache"
            r"|Not enough GPU memory for hybrid|state cache is too small to serve|Not enough space for mamba cache"
        ),
    ),
    # "Rank 1 scheduler died during initialization (exit code: -9). ... the OS OOM killer": host RAM
    (Cause.KILLED, re.compile(r"exit code:? -9\b|\(SIGKILL\)|OOM killer")),
    (Cause.CUDA_OOM, re.compile(r"out of memory|OutOfMemoryError|Out of memory", re.IGNORECASE)),
    (
        Cause.DISTRIBUTED_TIMEOUT,
        re.compile(
            r"DistStoreError|Timed out after \d+ seconds|Socket Timeout|Watchdog caught collective operation timeout"
            r"|collective operation timeout|timed out",
            re.IGNORECASE,
        ),
    ),
    (
        Cause.PORT_IN_USE,
        re.compile(r"Errno 98|address already in use|EADDRINUSE|Port is already in use|is not available in \d+ seconds"),
    ),
    (Cause.NCCL_ERROR, re.compile(r"NCCL error|nccl\w*Error|DistBackendError|ncclCommInitRank|RCCL error|HCCL", re.IGNORECASE)),
    (Cause.IMPORT_ERROR, re.compile(r"^(?:\w+\.)*(?:ImportError|ModuleNotFoundError)\b|undefined symbol|cannot import name")),
    (
        Cause.MODEL_LOAD_ERROR,
        re.compile(
            r"is not a local folder|RepositoryNotFoundError|does not appear to have a file named|Model architectures"
            r"|HFValidationError|EntryNotFoundError|GatedRepoError|LocalEntryNotFoundError|SafetensorError"
            r"|does not recognize this architecture|checkpoint"
        ),
    ),
    (Cause.WATCHDOG_TIMEOUT, re.compile(r"watchdog timeout", re.IGNORECASE)),
)

# Innermost frame that names a phase tells where a traceback struck, even without phase markers.
_FRAME_PHASES: tuple[tuple[re.Pattern[str], Phase], ...] = (
    (re.compile(r"cuda_graph|graph_runner|capture|init_device_graphs|init_cuda_graphs"), Phase.CUDA_GRAPH_CAPTURE),
    (
        re.compile(r"init_memory_pool|profile_max_num_token|profile_available|kv_cache_config|memory_pool|pool_configurator"),
        Phase.MEMORY_POOL,
    ),
    (re.compile(r"load_model|load_weights|weight_loader|model_loader|weight_utils|get_model\b"), Phase.WEIGHT_LOADING),
    (
        re.compile(
            r"init_torch_distributed|init_distributed_environment|initialize_model_parallel|init_process_group"
            r"|init_parallel|tcp_store|rendezvous|parallel_state"
        ),
        Phase.DISTRIBUTED_INIT,
    ),
    (re.compile(r"_execute_server_warmup|_wait_and_warmup|warmup"), Phase.WARMUP),
    (re.compile(r"event_loop|run_batch|forward_batch|process_batch_result|handle_generate_request"), Phase.READY),
)

_HARNESS_FRAME = re.compile(r"unittest/|/sglang/test/|/_pytest/|pytest|/test_[^/]*\.py$|/tests?/")
_SERVER_FRAME = re.compile(r"sglang/srt|/torch/|/transformers/|/vllm/|launch_server")


def frames_phase(frames: list[ev.Frame]) -> Phase | None:
    for frame in reversed(frames):
        filename = frame.path.rsplit("/", 1)[-1]
        for pattern, phase in _FRAME_PHASES:
            if pattern.search(frame.function or "") or pattern.search(filename):
                return phase
    return None


def _known_messages(text: str) -> list[Parsed]:
    """The SGLang messages (sglang.lark) the lines of an error's text are, e.g. the
    'Rank 1 scheduler died during initialization ...' a RuntimeError carries."""
    from logphase.pipeline.classify import per_grammar_match

    found: list[Parsed] = []
    for line in text.splitlines():
        body = line.strip()
        for prefix in (body, body.split(": ", 1)[-1]):  # 'ValueError: <message>'
            if prefix and len(prefix) < 4096 and per_grammar_match("sglang", prefix):
                parsed = parse("sglang", prefix)
                if parsed is not None:
                    found.append(parsed)
                    break
    return found


def named_rank(text: str) -> str | None:
    """The rank an error names: the main process says 'Rank 1 scheduler died ...' of TP1."""
    for parsed in _known_messages(text):
        if parsed.rule in ("scheduler_died", "scheduler_dead") and parsed.value("rank_index"):
            return f"TP{parsed.value('rank_index')}"
    return None


def minimum_mem_fraction(text: str) -> str | None:
    """The smallest --mem-fraction-static SGLang says would fit the KV cache (0.5.23+)."""
    for parsed in _known_messages(text):
        if parsed.rule == "kv_no_room":
            return parsed.value("minimum_fraction")
    return None


def classify_text(text: str) -> Cause | None:
    for cause, pattern in _RULES:
        if pattern.search(text):
            return cause
    return None


def _message_phase(text: str) -> Phase | None:
    if re.search(r"Not enough memory|KV cache|state cache", text):
        return Phase.MEMORY_POOL
    if re.search(r"Capture .*(?:graph|CUDA graph) failed", text, re.IGNORECASE):
        return Phase.CUDA_GRAPH_CAPTURE
    return None


def _exception_text(e: ev.PythonException) -> str:
    parts = [f"{c.exc_type}: {c.message}" for c in e.chain]
    parts.append(f"{e.exc_type or ''}: {e.message}")
    return "\n".join(parts)


def is_harness_traceback(e: ev.PythonException) -> bool:
    """A test harness's own failure (unittest, pytest, sglang.test helpers), not the server's."""
    if not e.frames:
        return False
    return any(_HARNESS_FRAME.search(f.path) for f in e.frames)


def assess(event: ev.EventBase, after_ready: bool) -> Assessment | None:
    """How an event bears on failure; None for events that say nothing about it."""
    if isinstance(event, ev.PythonException):
        return _assess_exception(event, after_ready)
    if isinstance(event, ev.ErrorLine):
        return _assess_error_line(event)
    if isinstance(event, ev.ChildFailure):
        return _assess_child(event)
    if isinstance(event, ev.DistributedError):
        if event.error == "socket_failure":
            return Assessment(Severity.NOTE, Cause.DISTRIBUTED_TIMEOUT, Phase.DISTRIBUTED_INIT, event.message)
        cause = Cause.NCCL_ERROR if event.error == "nccl_abort" else Cause.DISTRIBUTED_TIMEOUT
        return Assessment(Severity.ROOT, cause, None, event.message)
    if isinstance(event, ev.FatalSignal):
        text = event.message
        return Assessment(Severity.ROOT, classify_text(text) or Cause.PYTHON_EXCEPTION, None, text)
    return None


def _assess_exception(e: ev.PythonException, after_ready: bool) -> Assessment | None:
    text = _exception_text(e)
    if e.header is not None and e.header.startswith("Exception in thread"):
        return None  # a helper thread died; the process it belongs to goes on
    fatal_header = e.header is not None and ("hit an exception" in e.header or e.header.startswith("Initialization failed"))
    if not fatal_header:
        if not e.uncaught or is_harness_traceback(e):
            return None
        if after_ready and not any(_SERVER_FRAME.search(f.path) for f in e.frames):
            return None
    phase = frames_phase(e.frames) or _message_phase(text)
    if e.header and e.header.startswith("Initialization failed"):
        phase = phase if phase is not None and phase.order > Phase.WARMUP.order else Phase.WARMUP
    cause = classify_text(text)
    if cause is None:
        if e.exc_type and e.exc_type.rsplit(".", 1)[-1] in ("ChildFailedError",):
            return Assessment(Severity.ECHO, Cause.CHILD_PROCESS_FAILED, None, _summary(e))
        cause = Cause.MODEL_LOAD_ERROR if phase is Phase.WEIGHT_LOADING else Cause.PYTHON_EXCEPTION
    return Assessment(Severity.ROOT, cause, phase, _summary(e))


def _summary(e: ev.PythonException) -> str:
    if e.exc_type or e.message:
        first = e.message.split("\n", 1)[0]
        return f"{e.exc_type}: {first}" if e.exc_type else first
    where = e.frames[-1] if e.frames else None
    cut = "traceback cut before its exception line"
    return f"{cut} (last frame {where.function} in {where.path}:{where.lineno})" if where else cut


def _assess_error_line(e: ev.ErrorLine) -> Assessment | None:
    if e.error == "not_enough_memory":
        return Assessment(Severity.ROOT, Cause.KV_CACHE_INSUFFICIENT_MEMORY, Phase.MEMORY_POOL, e.message)
    if e.error in ("port_in_use", "bind_failed"):
        return Assessment(Severity.ROOT, Cause.PORT_IN_USE, None, e.message)
    if e.error == "watchdog_timeout":
        return Assessment(Severity.ROOT, Cause.WATCHDOG_TIMEOUT, None, e.message)
    if e.error == "capture_failed":
        return Assessment(Severity.ROOT, classify_text(e.message) or Cause.PYTHON_EXCEPTION, Phase.CUDA_GRAPH_CAPTURE, e.message)
    if e.error == "init_failed":
        return Assessment(Severity.ECHO, Cause.CHILD_PROCESS_FAILED, None, e.message)
    return None  # warmup_failed (PD): the server stays up; reported as a warning


def _assess_child(e: ev.ChildFailure) -> Assessment:
    if e.what == "killed" or e.exit_code in (-9, 137):
        return Assessment(Severity.ECHO, Cause.KILLED, None, e.message)
    if e.what == "pg_not_destroyed":
        return Assessment(Severity.NOTE, Cause.UNKNOWN, None, e.message)
    return Assessment(Severity.ECHO, Cause.CHILD_PROCESS_FAILED, None, e.message)


# Echo causes ranked: with no root cause in sight, the most specific echo names the failure.
ECHO_PREFERENCE = (Cause.KILLED, Cause.CHILD_PROCESS_FAILED)


def hint(cause: Cause, phase: Phase | None, config: dict[str, Any], facts: dict[str, Any]) -> str:
    """What to change, for this cause in this phase, with numbers from the log where it has them."""
    mfs = config.get("mem_fraction_static")
    mfs_text = f" (now {mfs})" if mfs is not None else ""
    if cause is Cause.KV_CACHE_INSUFFICIENT_MEMORY:
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
        return (
            "NCCL failed: rerun with NCCL_DEBUG=INFO to see why; check that all GPUs are visible and healthy "
            "(nvidia-smi topo -m), that /dev/shm is large enough in containers, and try --disable-custom-all-reduce."
        )
    if cause is Cause.DISTRIBUTED_TIMEOUT:
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
        return "A process was killed (SIGKILL): usually the kernel OOM killer; check `dmesg -T | grep -i oom` and host RAM."
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
    return "The log shows a failure but not its cause."
