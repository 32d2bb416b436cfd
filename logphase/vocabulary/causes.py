"""The causes of a failed start-up (the report's ``cause``) and what an error's text is to a failure."""

from __future__ import annotations

from enum import Enum


class Cause(str, Enum):
    """The root cause of a failed startup: a fixed vocabulary, the ``cause`` of the report."""

    KV_CACHE_INSUFFICIENT_MEMORY = "kv_cache_insufficient_memory"
    CUDA_OOM = "cuda_oom"
    # the GPU has less free memory at start-up than the server is told to take (another process
    # holds part of it): vLLM's free-memory pre-check; the fix is the opposite of the KV cache's
    GPU_MEMORY_OCCUPIED = "gpu_memory_occupied"
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


# A failure that says only that its rank waited for the others (a collective or a rendezvous that
# timed out) is the echo of the rank that stopped: a crash before it, even one whose error the log
# does not show, is the root, in one log as across the logs of several nodes (reporting/merge.py).
WAITED_ON_PEERS = frozenset({Cause.DISTRIBUTED_TIMEOUT})


class SignatureRole(str, Enum):
    """What an error's text is to the failure."""

    ROOT = "root"  # states an error: the root cause when it is the earliest
    ECHO = "echo"  # a consequence of a failure elsewhere; the cause only when nothing else is found
    WRAPPER = "wrapper"  # quotes another error, which decides (the rest of the text after the phrase)
    EXIT = "exit"  # the process tree exited: an echo before ready, nothing after it
    # says that something failed, not what (c10d's watchdog: "failed or timed out"): a failure whose error
    # the log does not state, its cause the one the row names when nothing states one
    UNSTATED = "unstated"
