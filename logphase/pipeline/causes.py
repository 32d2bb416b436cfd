"""The cause vocabulary: what a failed startup can be blamed on (the report's ``failure.cause``)."""

from __future__ import annotations

from enum import Enum


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
