"""Typed events: what one logical line (or one multi-line record) of a log says.

Every event carries where it came from (1-based line number counting ``\\n`` as ``grep -n`` does,
byte offset, raw text), the time if known and the rank that printed it. The ``kind`` field is the
discriminator of the :data:`Event` union, and the stable name used in ``--events`` output.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class EventBase(BaseModel):
    # defer_build: a validator is built on an event type's first use, not for all ~40 at import
    # (start-up time of the CLI; a short log uses a few of them)
    model_config = ConfigDict(frozen=False, extra="forbid", defer_build=True)

    line: int = Field(description="1-based line number of the first line (counts \\n only)")
    offset: int = Field(description="byte offset of the first byte of the event")
    raw: str = Field(description="the text of the logical line (first line for multi-line records)")
    ts: str | None = Field(default=None, description="ISO 8601 time as printed, or inherited")
    ts_inherited: bool = Field(default=False, description="true when ts came from an earlier line")
    rank: str | None = Field(default=None, description="rank tags as printed: 'TP0', 'DP0 TP1 EP1', 'rank0'")
    end_line: int | None = Field(default=None, description="last line of a multi-line record")


# --- SGLang launch and configuration --------------------------------------------------------------


class ServerArgs(EventBase):
    kind: Literal["server_args"] = "server_args"
    args: dict[str, Any] = Field(default_factory=dict)
    args_format: Literal["call", "dict", "unparsed"] = "call"


class ParameterOverride(EventBase):
    """SGLang changed a requested setting on its own and said so in passing."""

    kind: Literal["parameter_override"] = "parameter_override"
    setting: str
    requested: str | None = None
    actual: str | None = None
    message: str


# --- distributed init -------------------------------------------------------------------------------


class DistInitBegin(EventBase):
    kind: Literal["dist_init_begin"] = "dist_init_begin"


class DistInitEnd(EventBase):
    kind: Literal["dist_init_end"] = "dist_init_end"
    elapsed_s: float | None = None
    mem_usage_gb: float | None = None


class MemoryBaseline(EventBase):
    kind: Literal["memory_baseline"] = "memory_baseline"
    mem_usage_gb: float | None = None


class NcclVersion(EventBase):
    kind: Literal["nccl_version"] = "nccl_version"
    version: str


class CollectiveWarmup(EventBase):
    kind: Literal["collective_warmup"] = "collective_warmup"
    message: str


class MemoryImbalance(EventBase):
    kind: Literal["memory_imbalance"] = "memory_imbalance"
    fields: dict[str, str] = Field(default_factory=dict)


class GlooConnected(EventBase):
    kind: Literal["gloo_connected"] = "gloo_connected"
    gloo_rank: int
    connected: int
    expected: int


class GlooNotConnected(EventBase):
    kind: Literal["gloo_not_connected"] = "gloo_not_connected"
    gloo_rank: int
    missing: list[int] = Field(default_factory=list)


class NcclLog(EventBase):
    kind: Literal["nccl_log"] = "nccl_log"
    level: Literal["INFO", "WARN", "TRACE", "VERSION"]
    host: str | None = None
    pid: int | None = None
    device: int | None = None
    source: str | None = None
    message: str


# --- weights and memory pool ------------------------------------------------------------------------


class WeightLoadBegin(EventBase):
    kind: Literal["weight_load_begin"] = "weight_load_begin"
    avail_mem_gb: float | None = None


class WeightLoadEnd(EventBase):
    kind: Literal["weight_load_end"] = "weight_load_end"
    elapsed_s: float | None = None
    avail_mem_gb: float | None = None
    mem_usage_gb: float | None = None
    model_class: str | None = None
    dtype: str | None = None
    quant: str | None = None


class KvCacheDtype(EventBase):
    kind: Literal["kv_cache_dtype"] = "kv_cache_dtype"
    dtype: str | None = None


class KvCacheAllocated(EventBase):
    kind: Literal["kv_cache_allocated"] = "kv_cache_allocated"
    label: str | None = None
    tokens: int | None = None
    k_size_gb: float | None = None
    v_size_gb: float | None = None
    kv_size_gb: float | None = None
    dtype: str | None = None


class MambaCacheAllocated(EventBase):
    kind: Literal["mamba_cache_allocated"] = "mamba_cache_allocated"
    max_mamba_cache_size: int | None = None
    conv_state_gb: float | None = None
    ssm_state_gb: float | None = None


class SwaMemoryPool(EventBase):
    kind: Literal["swa_memory_pool"] = "swa_memory_pool"
    message: str


class MemoryPoolEnd(EventBase):
    kind: Literal["memory_pool_end"] = "memory_pool_end"
    avail_mem_gb: float | None = None


# --- CUDA graph capture ------------------------------------------------------------------------------


class CaptureBegin(EventBase):
    kind: Literal["capture_begin"] = "capture_begin"
    graph: str = Field(description="what is captured: 'cuda graph', 'target prefill CUDA graph', ...")
    avail_mem_gb: float | None = None
    batch_sizes: list[int] | None = None


class CaptureEnd(EventBase):
    kind: Literal["capture_end"] = "capture_end"
    graph: str
    elapsed_s: float | None = None
    mem_usage_gb: float | None = None
    avail_mem_gb: float | None = None
    batch_sizes: list[int] | None = None


class CaptureSizes(EventBase):
    kind: Literal["capture_sizes"] = "capture_sizes"
    what: Literal["bs", "num tokens"]
    sizes: list[int] = Field(default_factory=list)


class ProgressBar(EventBase):
    kind: Literal["progress_bar"] = "progress_bar"
    desc: str
    percent: int
    done: int
    total: int
    batch_size: int | None = None
    num_tokens: int | None = None
    avail_mem_gb: float | None = None


# --- scheduler ready, HTTP, warmup, ready ------------------------------------------------------------


class SchedulerReady(EventBase):
    kind: Literal["scheduler_ready"] = "scheduler_ready"
    max_total_num_tokens: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    available_gpu_mem_gb: float | None = None


class StartupTimings(EventBase):
    kind: Literal["startup_timings"] = "startup_timings"
    timings: dict[str, str] = Field(default_factory=dict)


class HttpServer(EventBase):
    kind: Literal["http_server"] = "http_server"
    level: str
    state: Literal["started", "waiting", "startup_complete", "running", "startup_failed", "shutdown", "other"]
    message: str


class HttpAccess(EventBase):
    kind: Literal["http_access"] = "http_access"
    client: str
    method: str
    path: str
    status: int


class WarmupMarker(EventBase):
    kind: Literal["warmup_marker"] = "warmup_marker"
    message: str


class ServerReady(EventBase):
    kind: Literal["server_ready"] = "server_ready"


class RuntimeBatch(EventBase):
    kind: Literal["runtime_batch"] = "runtime_batch"
    stage: Literal["prefill", "decode"]
    fields: dict[str, str] = Field(default_factory=dict)


class Shutdown(EventBase):
    kind: Literal["shutdown"] = "shutdown"
    message: str


# --- failures and their consequences -----------------------------------------------------------------


class Frame(BaseModel):
    path: str
    lineno: int
    function: str | None = None


class ChainedException(BaseModel):
    exc_type: str | None
    message: str


class PythonException(EventBase):
    """One traceback record, chained exceptions included; the last exception is the one raised."""

    kind: Literal["python_exception"] = "python_exception"
    header: str | None = Field(default=None, description="'Scheduler hit an exception', ... when logged")
    exc_type: str | None = None
    message: str = ""
    frames: list[Frame] = Field(default_factory=list)
    chain: list[ChainedException] = Field(default_factory=list)
    complete: bool = Field(default=True, description="false when the record ends before its exception line")
    uncaught: bool = Field(default=False, description="printed by the interpreter, not logged")


class FatalSignal(EventBase):
    """faulthandler's 'Fatal Python error: Aborted' and friends."""

    kind: Literal["fatal_signal"] = "fatal_signal"
    message: str


class ErrorLine(EventBase):
    """A one-line SGLang failure report: not enough memory, port in use, watchdog timeout ..."""

    kind: Literal["error_line"] = "error_line"
    error: Literal[
        "not_enough_memory",
        "port_in_use",
        "watchdog_timeout",
        "init_failed",
        "warmup_failed",
        "capture_failed",
        "bind_failed",
    ]
    message: str


class ChildFailure(EventBase):
    """A process noticed that another one died: the echo of a failure, rarely its cause."""

    kind: Literal["child_failure"] = "child_failure"
    what: Literal[
        "sigquit",
        "kill_process_tree",
        "scheduler_died",
        "scheduler_dead",
        "exit_code",
        "subprocess_crashed",
        "child_terminated",
        "elastic_failed",
        "closing_signal",
        "pg_not_destroyed",
        "killed",
    ]
    exit_code: int | None = None
    message: str


class DistributedError(EventBase):
    kind: Literal["distributed_error"] = "distributed_error"
    error: Literal["collective_timeout", "nccl_abort", "store_timeout", "socket_failure"]
    message: str


class TorchLog(EventBase):
    kind: Literal["torch_log"] = "torch_log"
    level: Literal["I", "W", "E", "F"]
    source: str
    message: str


class PythonWarning(EventBase):
    kind: Literal["python_warning"] = "python_warning"
    category: str
    message: str


Event = Annotated[
    ServerArgs
    | ParameterOverride
    | DistInitBegin
    | DistInitEnd
    | MemoryBaseline
    | NcclVersion
    | CollectiveWarmup
    | MemoryImbalance
    | GlooConnected
    | GlooNotConnected
    | NcclLog
    | WeightLoadBegin
    | WeightLoadEnd
    | KvCacheDtype
    | KvCacheAllocated
    | MambaCacheAllocated
    | SwaMemoryPool
    | MemoryPoolEnd
    | CaptureBegin
    | CaptureEnd
    | CaptureSizes
    | ProgressBar
    | SchedulerReady
    | StartupTimings
    | HttpServer
    | HttpAccess
    | WarmupMarker
    | ServerReady
    | RuntimeBatch
    | Shutdown
    | PythonException
    | FatalSignal
    | ErrorLine
    | ChildFailure
    | DistributedError
    | TorchLog
    | PythonWarning,
    Field(discriminator="kind"),
]

EVENT_TYPES: tuple[type[EventBase], ...] = Event.__origin__.__args__  # type: ignore[attr-defined]
