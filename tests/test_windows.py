"""Failures in every window (issue 30, point 2): what a window of a log shows, read as a whole log's
would be: the envelope of job logs and deployments, the server a window is, the advice with no server
known, one request's failure, a death by signal 9 in each phrasing, a harness's traceback after the
server's error."""

from __future__ import annotations

import re

import pytest

from logphase import parse_bytes
from logphase.diagnosing.signatures import read_error
from logphase.reading.envelope import split_envelope
from logphase.vocabulary.causes import Cause
from logphase.vocabulary.phases import Phase

_FRAME = '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 82, in __init__'


def test_a_job_logs_envelope_is_peeled_and_its_stamp_is_a_wrappers_clock() -> None:
    env = split_envelope(
        "2025-03-04T12:34:56.789+08:00 rl-train-job-42 >> (RayWorkerWrapper pid=4711, ip=10.0.0.2) "
        "INFO 03-04 12:34:57 [default_loader.py:262] Loading weights took 22.10 seconds"
    )
    assert env.message == "Loading weights took 22.10 seconds"
    assert env.outer is not None and env.outer.time == "12:34:56.789000"  # the platform's: another clock
    assert env.logger_stamp is not None and env.logger_stamp.time == "12:34:57"  # the server's own
    assert env.rank == "pid=4711 ip=10.0.0.2"


def test_a_deployments_words_before_vllms_prefix_are_peeled_and_no_other_words_are() -> None:
    env = split_envelope(f"2025-06-02T09:14:07.112Z vllm-qwen-7f9c ERROR 06-02 09:14:07 [core.py:586] {_FRAME}")
    assert env.message == _FRAME and env.logger_rule == "vllm"
    # words not followed by vLLM's prefix stay the message
    assert split_envelope("my-pod ERROR something failed").message == "my-pod ERROR something failed"


def test_a_cut_headerless_traceback_behind_a_deployment_prefix_is_a_vllm_failure_in_its_frames_phase() -> None:
    prefix = "2025-06-02T09:14:07.112Z vllm-qwen-7f9c ERROR 06-02 09:14:07 [core.py:586] "
    lines = [
        _FRAME,
        "    self._initialize_kv_caches(vllm_config)",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/abstract.py", line 76, in determine_available_memory',
        '    output = self.collective_rpc("determine_available_memory")',
    ]
    report = parse_bytes("".join(prefix + line + "\n" for line in lines).encode())
    assert (report.server, report.outcome, report.phase) == ("vllm", "failed", Phase.MEMORY_POOL)
    assert report.failure is not None and report.failure.cause is Cause.UNKNOWN


def test_with_no_server_known_the_hint_names_no_servers_flags() -> None:
    report = parse_bytes(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    assert report.server is None and report.failure is not None and report.failure.cause is Cause.CUDA_OOM
    assert not re.search(r"--\w", report.failure.hint or "")


def test_a_short_compose_window_in_vllms_format_is_vllms() -> None:
    text = (
        "vllm-1  | ERROR 11-18 18:07:28 engine.py:366] CUDA out of memory. Tried to allocate 1.50 GiB.\n"
        "vllm-1  | ERROR 11-18 18:07:28 engine.py:366] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.\n"
    )
    report = parse_bytes(text.encode())
    assert report.server == "vllm" and report.failure is not None
    assert "--gpu-memory-utilization" in (report.failure.hint or "")


def test_an_sglang_window_with_vllms_platform_line_is_sglangs_by_its_frames() -> None:
    text = (
        "INFO 04-06 14:51:04 [__init__.py:256] Automatically detected platform cuda.\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/launch_server.py", line 6, in <module>\n'
        "    from sglang.srt.entrypoints.http_server import launch_server\n"
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
    )
    assert parse_bytes(text.encode()).server == "sglang"


_REQUEST = (
    "ERROR:    Exception in ASGI application\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi\n'
    "    result = await app(  # type: ignore[func-returns-value]\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 180, in create_chat_completion\n'
    "    tool_dicts = [tool.model_dump() for tool in request.tools]\n"
    "TypeError: 'NoneType' object is not iterable\n"
)


def test_one_requests_failure_in_a_window_is_no_start_up_failure() -> None:
    report = parse_bytes(_REQUEST.encode())
    assert report.failure is None and report.outcome == "ready"


def test_a_web_frameworks_header_shows_a_server_serving_in_a_window_only() -> None:
    # 'Exception in ASGI application' is logged for a request: alone (a window) it shows the server
    # up whatever frames follow, even none yet; after a start-up's lines (the warmup's request,
    # before ready) the same traceback is the start-up's failure
    text = _REQUEST.replace("uvicorn/protocols/http/httptools_impl.py", "x.py").replace("vllm/entrypoints/openai/serving_chat.py", "y.py")
    assert parse_bytes(text.encode()).failure is None
    assert parse_bytes(text.split("Traceback", 1)[0].encode() + b"Trace").failure is None
    start_up = b"INFO 05-02 10:58:01 [api_server.py:1043] vLLM API server version 0.8.5\n"
    assert parse_bytes(start_up + text.encode()).outcome == "failed"


def test_a_launch_function_in_a_handlers_file_is_no_request() -> None:
    # SGLang's openai_api/adapter.py holds its request handlers and load_chat_template_for_openai_api,
    # which the launch runs: its traceback alone is a start-up's failure
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/openai_api/adapter.py", line 129, in load_chat_template_for_openai_api\n'
        "    raise RuntimeError(\n"
        "RuntimeError: Chat template x is not a built-in template name or a valid chat template file path.\n"
    )
    report = parse_bytes(text.encode())
    assert report.failure is not None and (report.outcome, report.failure.phase) == ("failed", Phase.LAUNCH)


def test_vllms_logged_request_error_beside_an_access_line_is_no_stdout_only_log() -> None:
    # vLLM's logger writes to stdout, as uvicorn's access lines: its ERROR lines are its own lines
    text = (
        "ERROR 05-02 11:00:01 [serving_chat.py:263] Error in preprocessing prompt inputs\n"
        "ERROR 05-02 11:00:01 [serving_chat.py:263] Traceback (most recent call last):\n"
        'ERROR 05-02 11:00:01 [serving_chat.py:263]   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 246, in create_chat_completion\n'
        "ERROR 05-02 11:00:01 [serving_chat.py:263]     ) = await self._preprocess_chat(\n"
        "ERROR 05-02 11:00:01 [serving_chat.py:263] TypeError: can only concatenate str (not \"list\") to str\n"
        'INFO:     10.0.0.5:52814 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    )
    report = parse_bytes(text.encode())
    assert (report.server, report.outcome, report.failure) == ("vllm", "ready", None)
    assert "stderr_missing" not in {w.kind for w in report.warnings}


def test_a_usage_error_names_the_server_whose_launcher_it_is() -> None:
    sglang = parse_bytes(b"launch_server.py: error: unrecognized arguments: --gpu-memory-utilization 0.9\n")
    vllm = parse_bytes(b"vllm serve: error: unrecognized arguments: --mem-fraction-static 0.8\n")
    other = parse_bytes(b"bench.py: error: unrecognized arguments: --foo\n")
    assert (sglang.server, vllm.server, other.server) == ("sglang", "vllm", None)


def test_a_request_handlers_traceback_during_a_start_up_still_counts() -> None:
    # before ready, a request is the warmup's: its failure is the start-up's
    text = "[2025-05-01 10:00:00] server_args=ServerArgs(model_path='x', tp_size=1)\n" + _REQUEST.replace("ERROR:    Exception in ASGI application\n", "")
    report = parse_bytes(text.encode())
    assert report.failure is not None and report.outcome == "failed"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Rank 2 scheduler is dead. Child process 41240 exited unexpectedly with exitcode=-9",
        "subprocess.CalledProcessError: Command '['python3']' died with <Signals.SIGKILL: 9>.",
        "The actor died unexpectedly before finishing this task. The worker was killed by signal 9",
        "Out of memory: Killed process 41234 (python3) total-vm:412345678kB",
        "Memory cgroup out of memory: Killed process 41234 (python3)",
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        "slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of the step tasks have been OOM Killed.",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': -9}",
    ],
)
def test_a_death_by_signal_9_is_killed_in_every_phrasing(text: str) -> None:
    assert read_error(text).cause is Cause.KILLED


@pytest.mark.parametrize(
    "line",
    [
        "Process 41234 was killed by signal 9",
        "Worker 3 (pid 41234) was killed by signal SIGKILL",
        "sglang.service: Main process exited, code=killed, status=9/KILL",
        "Out of memory: Killed process 41234 (python3) total-vm:412345678kB",
    ],
)
def test_a_line_that_says_a_process_died_of_signal_9_is_a_kill(line: str) -> None:
    failure = parse_bytes(f"{line}\n".encode()).failure
    assert failure is not None and failure.cause is Cause.KILLED


def test_another_signal_is_no_kill_line() -> None:
    assert parse_bytes(b"Process 41234 was killed by signal 15\n").failure is None


def test_another_exit_code_of_an_engine_core_is_no_kill() -> None:
    text = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"
    assert read_error(text).cause is Cause.CHILD_PROCESS_FAILED


def test_a_harness_traceback_after_the_servers_error_never_takes_the_root() -> None:
    text = (
        "[2025-05-01 10:00:00] server_args=ServerArgs(model_path='x', tp_size=2)\n"
        "[2025-05-01 10:00:05 TP0] Load weight begin. avail mem=78.00 GB\n"
        "[2025-05-01 10:00:40 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 215, in initialize\n'
        "    self.load_model()\n"
        "Killing all sglang processes\n"
        "Traceback (most recent call last):\n"
        '  File "/workspace/bench/plot_results.py", line 70, in main\n'
        '    tput = results["throughput"]\n'
        "KeyError: 'throughput'\n"
    )
    report = parse_bytes(text.encode())
    assert report.failure is not None and report.failure.line == 3 and report.failure.cause is Cause.UNKNOWN
    assert report.phase is Phase.WEIGHT_LOADING
