"""Issue 30, point 3: timeouts have their own names. A collective or a rendezvous that timed out is
distributed_timeout, NCCL failing is nccl_error (the cause table: tests/test_causes.py); here, what the
rule means for a whole log: which failure is the root when a rank waited for another, which rank the
hint names, and that one log and the logs of several nodes agree on it (reporting/merge.py)."""

from __future__ import annotations

from logphase.engine.whole import parse_bytes, parse_file
from logphase.reporting.merge import merge
from logphase.vocabulary.causes import Cause
from tests.conftest import FIXTURES

_START = "\n".join(
    [
        "[2026-06-02 09:41:03] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-70B-Instruct', tp_size=4, "
        "mem_fraction_static=0.85, nnodes=1, node_rank=0)",
        *(f"[2026-06-02 09:41:10 TP{r}] Init torch distributed begin." for r in range(4)),
        *(f"[2026-06-02 09:41:13 TP{r}] Init torch distributed ends. elapsed=2.41 s, mem usage=0.81 GB" for r in range(4)),
        *(f"[2026-06-02 09:41:13 TP{r}] Load weight begin. avail mem=78.20 GB" for r in range(4)),
        *(
            f"[2026-06-02 09:43:16 TP{r}] Load weight end. elapsed=122.04 s, type=LlamaForCausalLM, dtype=torch.bfloat16, "
            "avail mem=45.12 GB, mem usage=33.02 GB."
            for r in range(4)
        ),
        *(f"[2026-06-02 09:43:17 TP{r}] Capture cuda graph begin. This can take up to several minutes." for r in range(4)),
    ]
)
_WORK = "WorkNCCL(SeqNum=183, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"


def _watchdog(rank: int, when: str) -> str:
    return (
        f"[rank{rank}]:[E602 {when}.204518336 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: {_WORK} ran for 600031 milliseconds before timing out."
    )


# a rank's segfault, its error not shown: a faulthandler dump from TP2's scheduler in capture
_CRASH = """Fatal Python error: Segmentation fault

Thread 0x00007f6d02a1d740 (most recent call first):
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 612 in capture_one_batch_size
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 487 in capture

Extension modules: numpy._core._multiarray_umath, torch._C (total: 2)"""


def test_a_crash_before_the_others_time_out_is_the_root() -> None:
    """TP2 dies (no error shown) as capture begins; ten minutes later the others' watchdogs time out
    waiting for it: their timeouts state only that they waited, the crash is the root."""
    log = "\n".join([_START, "[2026-06-02 09:43:18 TP2] Capture cuda graph bs [1, 2, 4, 8]", _CRASH, *(_watchdog(r, "09:53:19") for r in (0, 1, 3))])
    failure = parse_bytes((log + "\n").encode()).failure
    assert failure is not None
    assert (failure.severity, failure.cause, failure.line) == ("unstated", Cause.PYTHON_EXCEPTION, 23)
    assert sum("Watchdog caught" in c.message for c in failure.consequences) == 3


def test_the_abort_a_timeout_ends_in_is_not_the_root() -> None:
    """The watchdog takes its process down after the timeout: the abort that follows is its echo."""
    log = "\n".join([_START, _watchdog(1, "09:53:19"), _CRASH.replace("Segmentation fault", "Aborted")])
    failure = parse_bytes((log + "\n").encode()).failure
    assert failure is not None and (failure.severity, failure.cause, failure.line) == ("root", Cause.DISTRIBUTED_TIMEOUT, 22)


def test_the_hint_names_the_rank_that_did_not_time_out() -> None:
    report = parse_file(FIXTURES / "collective_timeout_lagging_rank.log")
    assert report.failure is not None and report.failure.cause is Cause.DISTRIBUTED_TIMEOUT
    assert "(here TP2: TP0, TP1 and TP3 timed out waiting, it did not)" in report.failure.hint
    # the same log with TP2 timing out too: nobody is named
    text = (FIXTURES / "collective_timeout_lagging_rank.log").read_text()
    everyone = text.replace("[2026-06-02 09:53:20] Received sigquit", _watchdog(2, "09:53:19") + "\n[2026-06-02 09:53:20] Received sigquit")
    failure = parse_bytes(everyone.encode()).failure
    assert failure is not None and "(here" not in failure.hint


def test_a_rendezvous_names_no_lagging_rank() -> None:
    """The store waits for ranks that print nothing in this log (another node's): the ranks this log
    shows all reached it."""
    report = parse_file(FIXTURES / "client_socket_timeout_multinode.log")
    assert report.failure is not None and report.failure.cause is Cause.DISTRIBUTED_TIMEOUT
    assert "(here" not in report.failure.hint and "--dist-init-addr" in report.failure.hint


def test_watchdog_summaries_leave_the_root_to_the_line_that_says_which() -> None:
    """c10d's summaries ('failed or timed out') come before the NCCL error they sum up: that error is
    the root; alone, a summary names a timeout."""
    async_error = parse_file(FIXTURES / "nccl_async_error_watchdog.log").failure
    assert async_error is not None and (async_error.cause, async_error.line) == (Cause.NCCL_ERROR, 36)
    window = parse_file(FIXTURES / "window_nccl_failed_or_timed_out.log").failure
    assert window is not None and (window.cause, window.line, window.severity) == (Cause.DISTRIBUTED_TIMEOUT, 1, "unstated")


def test_across_nodes_a_summary_is_a_wait_too() -> None:
    """A node whose log holds only c10d's summary (it waited, an unstated timeout) and a node whose
    rank crashed: the crash is the root, as in one log, whatever the clocks say."""
    crash = "\n".join([_START.replace("nnodes=1", "nnodes=2"), "[2026-06-02 09:43:18 TP2] Capture cuda graph bs [1, 2, 4, 8]", _CRASH]) + "\n"
    waited = (FIXTURES / "window_nccl_failed_or_timed_out.log").read_bytes()
    merged = merge([parse_bytes(waited, source="node0.log"), parse_bytes(crash.encode(), source="node1.log")])
    failure = merged.servers[0].report.failure
    assert failure is not None and (failure.cause, failure.source) == (Cause.PYTHON_EXCEPTION, "node1.log")
