"""The cause table: the error grammars' phrases (grammars/shared/errors.lark, grammars/sglang/sglang_errors.lark)
and causes.SIGNATURES' rows (the packs') agree, and the
table reads the texts of the error families in the spec (timeouts versus errors, wrappers, echoes)."""

from __future__ import annotations

import pytest

from logphase.diagnosing.cause_table import SIGNATURES
from logphase.diagnosing.signatures import read_error, rules_in_grammar
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import Phase


def test_every_grammar_rule_has_one_row_and_every_row_its_rule() -> None:
    rows = [s.rule for s in SIGNATURES]
    assert len(rows) == len(set(rows)), "a rule with two rows"
    assert set(rows) == rules_in_grammar()


def test_wrappers_name_no_cause_and_others_do() -> None:
    for s in SIGNATURES:
        assert (s.cause is None) == (s.role is SignatureRole.WRAPPER), s.rule


@pytest.mark.parametrize(
    ("text", "cause", "role"),
    [
        # timeouts: a text that says how long something waited, whoever raised it
        (
            "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2) ran for 600081 milliseconds",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "torch.distributed.DistStoreError: Timed out after 301 seconds waiting for clients. 1/2 clients joined.",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//cuda//0",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        # errors of the collective backend
        (
            "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
            Cause.NCCL_ERROR,
            SignatureRole.ROOT,
        ),
        (
            "Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
            Cause.NCCL_ERROR,
            SignatureRole.ROOT,
        ),
        (
            "torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1970, invalid usage, Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
            Cause.NCCL_ERROR,
            SignatureRole.ROOT,
        ),
        # a dropped peer is the echo of that peer's death, even inside an NCCL error
        (
            "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, remote process exited or there was a network error",
            Cause.NCCL_ERROR,
            SignatureRole.ECHO,
        ),
        (
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:4222",
            Cause.NCCL_ERROR,
            SignatureRole.ECHO,
        ),
        # memory
        (
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.80",
            Cause.KV_CACHE_INSUFFICIENT_MEMORY,
            SignatureRole.ROOT,
        ),
        (
            "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88. Raise it",
            Cause.KV_CACHE_INSUFFICIENT_MEMORY,
            SignatureRole.ROOT,
        ),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", Cause.CUDA_OOM, SignatureRole.ROOT),
        (
            "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
            Cause.CUDA_OOM,
            SignatureRole.ROOT,
        ),
        # echoes of a child's death
        (
            "Received sigquit from a child process. It usually means the child failed.",
            Cause.CHILD_PROCESS_FAILED,
            SignatureRole.ECHO,
        ),
        (
            "RuntimeError: Initialization failed. Please see the error messages above.",
            Cause.CHILD_PROCESS_FAILED,
            SignatureRole.ECHO,
        ),
        (
            "RuntimeError: Rank 1 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL)",
            Cause.KILLED,
            SignatureRole.ECHO,
        ),
        (
            "ValueError: TP rank 3 could finish the model loading, but there are other ranks that didn't finish loading.",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ECHO,
        ),
        ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", Cause.CHILD_PROCESS_FAILED, SignatureRole.ECHO),
        # the rest
        ("ModuleNotFoundError: No module named 'deep_gemm'", Cause.IMPORT_ERROR, SignatureRole.ROOT),
        ("launch_server.py: error: unrecognized arguments: --foo", Cause.PYTHON_EXCEPTION, SignatureRole.ROOT),
        ("OSError: [Errno 98] Address already in use", Cause.PORT_IN_USE, SignatureRole.ROOT),
        ("Watchdog timeout (self.watchdog_timeout=300)", Cause.WATCHDOG_TIMEOUT, SignatureRole.ROOT),
    ],
)
def test_the_table_reads_each_family(text: str, cause: Cause, role: SignatureRole) -> None:
    reading = read_error(text)
    assert (reading.cause, reading.role) == (cause, role)


@pytest.mark.parametrize(
    ("text", "cause", "phase"),
    [
        (
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 20.00 MiB.",
            Cause.CUDA_OOM,
            Phase.CUDA_GRAPH_CAPTURE,
        ),
        ("Exception: Capture cuda graph failed: NCCL error: unhandled cuda error", Cause.NCCL_ERROR, Phase.CUDA_GRAPH_CAPTURE),
        (
            "Initialization failed. warmup error: AssertionError: Internal server error: CUDA error: an illegal memory access",
            Cause.PYTHON_EXCEPTION,
            Phase.WARMUP,
        ),
        (
            "ray.exceptions.RayTaskError(OutOfMemoryError): ray::Worker.run() torch.OutOfMemoryError: CUDA out of memory.",
            Cause.CUDA_OOM,
            None,
        ),
    ],
)
def test_a_wrapper_is_read_by_the_error_it_quotes(text: str, cause: Cause, phase: Phase | None) -> None:
    reading = read_error(text)
    assert reading.cause is cause
    assert reading.phase is phase


def test_a_wrapper_quoting_nothing_known_keeps_its_phase_and_no_cause() -> None:
    reading = read_error("Exception: Capture cuda graph failed: shape mismatch in the MoE kernel")
    assert reading.cause is None and reading.phase is Phase.CUDA_GRAPH_CAPTURE


def test_an_echo_quoted_by_a_wrapper_stays_an_echo() -> None:
    # the graph capture failed because a peer died: that peer's error is the root
    reading = read_error("Exception: Capture cuda graph failed: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer")
    assert reading.role is SignatureRole.ECHO


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU", "gpu_unavailable"),
        ("RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes.", "memory_imbalance"),
        ("ImportError: libcudart.so.13: cannot open shared object file: No such file or directory", "import_failure"),
        ("ValueError: engine_info_bootstrap_port 8998 is already in use. When running multiple instances", "port_in_use"),
        ("RuntimeError: No model weights found in: `/models/llama`", "model_files"),
        ("Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", "sglang_watchdog"),
        ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL", "child_killed"),
        (
            "RuntimeError: call aclnnMatmul failed. [ERROR] 2026-01-04-07:36:17 (PID:1, Device:0, RankID:0) ERR02005 DIST call hccl api failed.",
            "comm_error",
        ),
    ],
)
def test_rows_for_the_catalogue_of_start_up_failures(text: str, rule: str) -> None:
    reading = read_error(text)
    assert reading.signature is not None and reading.signature.rule == rule


def test_a_soft_watchdog_is_only_diagnostic() -> None:
    assert read_error("Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)").signature is None


# -- an exception no signature reads: by where it was raised (issue 20 point 2) ----------------------


def _traceback(path: str, function: str, statement: str, last: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/sglang/launch_server.py", line 14, in <module>\n'
        "    launch_server(server_args)\n"
        f'  File "/usr/local/lib/python3.11/site-packages/{path}", line 120, in {function}\n'
        f"    {statement}\n"
        f"{last}\n"
    )


@pytest.mark.parametrize(
    ("path", "function", "statement", "last", "cause"),
    [
        # ServerArgs refusing a value at launch: SGLang's own check
        (
            "sglang/srt/server_args.py", "check_server_args", "raise ValueError(",
            "ValueError: Zorglub is not a valid attention backend.", "configuration",
        ),
        (
            "sglang/srt/server_args.py", "check_server_args", "assert self.tp_size % self.dp_size == 0",
            "AssertionError", "configuration",
        ),
        # a value, type or feature refused later in start-up is the configuration too
        (
            "sglang/srt/model_executor/model_runner.py", "init_memory_pool", "raise NotImplementedError(",
            "NotImplementedError: Zorglub KV cache dtype is not supported with this backend.", "configuration",
        ),
        # a condition of the environment SGLang checks in distributed init
        (
            "sglang/srt/distributed/device_communicators/custom_all_reduce_utils.py", "init_torch_distributed",
            "raise RuntimeError(", "RuntimeError: Zorglub peer check failed.", "environment",
        ),
        # raised inside a call SGLang made (a kernel, a library): not its own check
        (
            "sglang/srt/server_args.py", "check_server_args", "torch.cuda.get_device_capability()",
            "ValueError: Zorglub", Cause.PYTHON_EXCEPTION,
        ),
        # the warmup asserting its request's response: a request failed
        (
            "sglang/srt/entrypoints/http_server.py", "_execute_server_warmup", "assert res.status_code == 200, f\"{res}\"",
            "AssertionError: res=<Response [502]>", Cause.PYTHON_EXCEPTION,
        ),
        # a library's own raise is not SGLang's check
        (
            "transformers/configuration_utils.py", "get_config_dict", "raise ValueError(",
            "ValueError: Zorglub", Cause.PYTHON_EXCEPTION,
        ),
    ],
)
def test_an_unread_exception_is_named_by_the_statement_that_raised_it(
    path: str, function: str, statement: str, last: str, cause: Cause | str
) -> None:
    """``cause``: the cause expected, or the check ('configuration', 'environment') of SGLang's own
    that raised it (the cause then stays python_exception, the labelling vocabulary's word, and the
    hint is the check's)."""
    import logphase

    report = logphase.parse_text(_traceback(path, function, statement, last))
    assert report.failure is not None
    if isinstance(cause, Cause):
        assert (report.failure.cause, report.failure.check) == (cause, None), (path, statement, report.failure)
        return
    assert (report.failure.cause, report.failure.check) == (Cause.PYTHON_EXCEPTION, cause), (path, statement, report.failure)
    assert "SGLang" in report.failure.hint and ("refused" in report.failure.hint) == (cause == "configuration")


# -- issue 30, point 3: timeouts have their own names ------------------------------------------------

_NCCL_SYSTEM_ERROR = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
    "Last error:\n"
)


@pytest.mark.parametrize(
    ("text", "rule", "cause", "role"),
    [
        # a collective or a rendezvous that timed out: every shape c10d, the store, a socket and Gloo print
        (
            "[PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600082 milliseconds before timing out.",
            "distributed_timeout",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients joined.",
            "distributed_timeout",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to (10.0.0.1, 5000).",
            "distributed_timeout",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (node-0, 29500).",
            "distributed_timeout",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "[Rank 3] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1",
            "distributed_timeout",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        (
            "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] "
            "via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout",
            "distributed_timeout",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ROOT,
        ),
        # what the watchdog says after it: failed or timed out, it does not say which
        (
            "[Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
            "subsequent GPU operations might run on corrupted/incomplete data.",
            "watchdog_summary",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.UNSTATED,
        ),
        (
            "[PG ID 2 PG GUID 3 Rank 16] Exception (either an error or timeout) detected by watchdog at work: 9301, "
            "last enqueued NCCL work: 9301, last completed NCCL work: 9300.",
            "watchdog_summary",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.UNSTATED,
        ),
        (
            "[Rank 0] Received a global timeout from another rank and will start to dump the debug info.",
            "peer_timed_out",
            Cause.DISTRIBUTED_TIMEOUT,
            SignatureRole.ECHO,
        ),
        # NCCL failing is NCCL's, even when what failed was a connection that timed out
        (_NCCL_SYSTEM_ERROR + "socketPollConnect: connect returned Connection timed out, exceeded error retry count (35)", "comm_error", Cause.NCCL_ERROR, SignatureRole.ROOT),
        (_NCCL_SYSTEM_ERROR + "socketPollConnect: connect returned Connection refused, exceeded error retry count (35)", "comm_error", Cause.NCCL_ERROR, SignatureRole.ROOT),
        (
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage "
            "(run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5\nncclInvalidUsage: This usually reflects invalid "
            "usage of NCCL library.\nLast error:\nMismatched NCCL version detected : rank 0 version 22105 rank 2 version 21903",
            "comm_error",
            Cause.NCCL_ERROR,
            SignatureRole.ROOT,
        ),
        (
            "[PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: NCCL error: "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
            "comm_error",
            Cause.NCCL_ERROR,
            SignatureRole.ROOT,
        ),
        # the server's own watchdog is not c10d's
        ("Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", "sglang_watchdog", Cause.WATCHDOG_TIMEOUT, SignatureRole.ROOT),
        # a text that says only that something timed out is a timeout, read last: one that names its failure otherwise is that
        ("TimeoutError: Timed out waiting for the tokenizer manager to answer.", "timed_out", Cause.DISTRIBUTED_TIMEOUT, SignatureRole.ROOT),
        ("RuntimeError: CUDA error: the launch timed out and was terminated", "device_kernel", Cause.PYTHON_EXCEPTION, SignatureRole.ROOT),
        # vLLM's executor waited for a worker's answer
        ("TimeoutError: RPC call to execute_model timed out.", "vllm_rpc_timeout", Cause.DISTRIBUTED_TIMEOUT, SignatureRole.ROOT),
    ],
)
def test_a_timeout_is_distributed_timeout_and_nccl_failing_is_nccl_error(
    text: str, rule: str, cause: Cause, role: SignatureRole
) -> None:
    reading = read_error(text)
    assert reading.signature is not None and reading.signature.rule == rule, reading.signature
    assert (reading.cause, reading.role) == (cause, role)
