"""Failures in every shape they reach a log in (issue: every shape a failure takes).

Properties over every fixture whose root cause is a Python traceback:

* without its header line (a paste or a window that starts at the frames) the run still failed,
  with the same cause;
* cut anywhere inside the root traceback (the process died while writing it, or the log was cut)
  the run still failed, and once its exception line is complete the cause is the same;
* echoes written before the root (the main process's sigquit first, other ranks' wrapper
  tracebacks and peer errors) never change the root cause or its line.

And one test per shape that has no fixture of its own.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase import Engine, parse_bytes
from logphase.reporting.report import Report
from logphase.vocabulary import events as ev
from tests.conftest import fixture_logs

FIXTURES = {p.name: p.read_bytes() for p in fixture_logs()}
HEADER = b"Traceback (most recent call last):"


class RootRecord(NamedTuple):
    """Where a fixture's root traceback sits: byte offsets of its lines."""

    header_start: int  # the start of the header line
    header_end: int  # just past the header line's newline
    traceback_at: int  # where 'Traceback' begins in it
    exception_end: int  # just past the exception line's newline (and its message's first line)
    end: int  # just past the record's last line


@functools.cache
def report_of(name: str) -> Report:
    return parse_bytes(FIXTURES[name], source="x")


def _line_offsets(log: bytes) -> list[int]:
    """Byte offset where each line starts (1-based: index 0 is unused)."""
    starts = [0, 0]
    for i, byte in enumerate(log):
        if byte == 0x0A:
            starts.append(i + 1)
    return starts


@functools.cache
def root_record(name: str) -> RootRecord | None:
    """The root traceback of a failed fixture, if the root is one with a header."""
    log = FIXTURES[name]
    report = report_of(name)
    if report.failure is None:
        return None
    engine = Engine(source="x")
    events = engine.feed(log) + engine.finish()
    root = next(
        (e for e in events if isinstance(e, ev.PythonException) and e.line == report.failure.line and e.complete),
        None,
    )
    if root is None or root.exception_line is None or root.headerless:
        return None
    starts = _line_offsets(log)
    header = log[starts[root.line] : starts[root.line + 1]]
    at = header.find(HEADER)
    if at < 0 or root.end_line is None or root.end_line + 1 >= len(starts):
        return None
    return RootRecord(
        starts[root.line],
        starts[root.line + 1],
        starts[root.line] + at,
        starts[root.exception_line + 1],
        starts[root.end_line + 1],
    )


TRACEBACK_ROOTS = [name for name in FIXTURES if root_record(name) is not None]


@functools.cache
def root_first_line(name: str) -> int:
    """The first line of the root's record (a headerless traceback's failure line is its exception)."""
    report = report_of(name)
    assert report.failure is not None
    engine = Engine(source="x")
    events = engine.feed(FIXTURES[name]) + engine.finish()
    line = report.failure.line
    return next((e.line for e in events if e.line <= line <= (e.end_line or e.line) and e.kind != "progress_bar"), line)


def test_there_are_traceback_roots_to_check() -> None:
    assert len(TRACEBACK_ROOTS) >= 5, TRACEBACK_ROOTS


@pytest.mark.parametrize("name", TRACEBACK_ROOTS)
def test_without_its_header_a_traceback_still_fails_with_its_cause(name: str) -> None:
    log, full, record = FIXTURES[name], report_of(name), root_record(name)
    assert record is not None and full.failure is not None
    header = log[record.header_start : record.header_end]
    # a logged header keeps what precedes 'Traceback' ('[...] Scheduler hit an exception: '): removing
    # the whole line is the harder case, the record then starts at its first frame
    headless = log[: record.header_start] + log[record.header_end :]
    r = parse_bytes(headless, source="x")
    assert r.outcome == "failed", header
    assert r.failure is not None and r.failure.cause == full.failure.cause


@pytest.mark.parametrize("name", TRACEBACK_ROOTS)
@given(data=st.data())
def test_cut_inside_the_root_traceback_still_fails(name: str, data: st.DataObject) -> None:
    log, full, record = FIXTURES[name], report_of(name), root_record(name)
    assert record is not None and full.failure is not None
    # from inside 'Traceback' on ("... hit an exception: Tra" is a header cut short) to the record's end
    cut = data.draw(st.integers(record.traceback_at + len(b"Trace"), record.end), label="cut at byte")
    r = parse_bytes(log[:cut], source="x")
    assert r.outcome == "failed"
    if cut >= record.exception_end:
        assert r.failure is not None and r.failure.cause == full.failure.cause


ECHOES = [
    b"[{ts}] Received sigquit from a child process. It usually means the child failed.\n",
    b"[{ts}] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n",
    b"[{ts} TP7] Scheduler hit an exception: Traceback (most recent call last):\n"
    b'  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2310, in run_scheduler_process\n'
    b"    scheduler.event_loop_overlap()\n"
    b"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
    b"remote process exited or there was a network error, NCCL version 2.21.5\n"
    b"ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n\n",
    b"[{ts} TP6] Scheduler hit an exception: Traceback (most recent call last):\n"
    b'  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 940, in load_model\n'
    b"    raise ValueError(\n"
    b"ValueError: TP rank 6 could finish the model loading, but there are other ranks that didn't finish loading. "
    b"It is likely due to unexpected failures (e.g., OOM) or a slow node.\n\n",
    b"[rank5]:[E1130 10:00:00.000000000 ProcessGroupGloo.cpp:143] [Gloo] Connection closed by peer [10.0.0.7]:4022\n",
    b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n",
    b"[{ts}] Rank 3 scheduler died during initialization (exit code: -15). SIGTERM from its parent.\n",
]


def _stamp_of(report: Report) -> str:
    """A time for the echoes: the root's, else its first echo's (a window that starts inside the root)."""
    f = report.failure
    times = [f.ts] if f and f.ts else [c.ts for c in (f.consequences if f else []) if c.ts]
    ts = times[0] if times else "2026-05-09T09:20:00"
    return ts[:19].replace("T", " ")


# the property is about a root that states its error: an echo-only failure (a peer's 'Connection
# closed') is rightly taken over by an earlier line of the same kind


@pytest.mark.parametrize(
    "name", [n for n in FIXTURES if (f := report_of(n).failure) is not None and f.severity == "root"]
)
@given(echoes=st.lists(st.sampled_from(ECHOES), min_size=1, max_size=4), sigquit_first=st.booleans())
def test_echoes_before_the_root_never_change_it(name: str, echoes: list[bytes], sigquit_first: bool) -> None:
    log, full = FIXTURES[name], report_of(name)
    assert full.failure is not None
    at = _line_offsets(log)[root_first_line(name)]
    if sigquit_first:
        echoes = [ECHOES[0], *echoes]
    block = b"".join(e.replace(b"{ts}", _stamp_of(full).encode()) for e in echoes)
    r = parse_bytes(log[:at] + block + log[at:], source="x")
    assert r.failure is not None
    assert r.failure.cause == full.failure.cause
    assert r.failure.line == full.failure.line + block.count(b"\n")


# -- shapes without a fixture of their own -------------------------------------------------------


def _parse(text: str) -> Report:
    return parse_bytes(text.encode(), source="x")


START = (
    "[2026-05-09 09:20:00] server_args=ServerArgs(model_path='org/m', tp_size=2, port=30000)\n"
    "[2026-05-09 09:20:02 TP0] Init torch distributed begin.\n"
    "[2026-05-09 09:20:02 TP1] Init torch distributed begin.\n"
)


def test_a_lone_exception_line_states_the_root_and_the_sigquit_after_it_is_its_echo() -> None:
    r = _parse(
        START + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n\n"
        "[2026-05-09 09:20:05] Received sigquit from a child process. It usually means the child failed.\n"
    )
    assert r.failure is not None and (r.failure.cause.value, r.failure.line) == ("nccl_error", 4)
    assert [c.line for c in r.failure.consequences] == [6]


def test_a_wrapped_exception_line_is_read_inside_its_wrapper() -> None:
    r = _parse(
        START + "(WorkerDict pid=281552) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "[2026-05-09 09:20:05] Received sigquit from a child process. It usually means the child failed.\n"
    )
    assert r.failure is not None and r.failure.cause.value == "cuda_oom" and r.failure.line == 4


def test_a_c10_error_line_before_a_cut_traceback_is_the_root() -> None:
    r = _parse(
        START + "[rank1]:[E509 09:20:08.707542570 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
        "[2026-05-09 09:20:08 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1773, in run_scheduler_process\n'
    )
    assert r.failure is not None and (r.failure.cause.value, r.failure.line) == ("nccl_error", 4)


def test_the_interpreter_failing_to_find_sglang_is_an_import_error_at_launch() -> None:
    r = _parse(
        "/venv/bin/python: Error while finding module specification for 'sglang.launch_server' "
        "(ModuleNotFoundError: No module named 'sglang')\n"
    )
    assert (r.outcome, r.phase, r.failure and r.failure.cause.value) == ("failed", "launch", "import_error")


def test_a_shell_segfault_line_is_a_failure_whose_error_is_not_stated() -> None:
    r = _parse(START + "run.sh: line 3: 4242 Segmentation fault      (core dumped) python -m sglang.launch_server\n")
    assert r.failure is not None and r.failure.cause.value == "python_exception" and r.failure.line == 4


def test_resource_tracker_after_a_finished_serving_stop_is_no_failure() -> None:
    r = _parse(
        START + "[2026-05-09 09:20:30] The server is fired up and ready to roll!\n"
        "/usr/lib/python3.10/multiprocessing/resource_tracker.py:224: UserWarning: resource_tracker: There appear "
        "to be 1 leaked semaphore objects to clean up at shutdown\n"
        "  warnings.warn('resource_tracker: There appear to be %d '\n"
    )
    assert r.outcome == "ready"


CUT_IN_INITIALIZE = (
    START + "[2026-05-09 09:20:03 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 191, in initialize\n'
)


def test_a_whole_call_in_a_cut_statement_names_the_phase_of_a_cut_traceback() -> None:
    r = _parse(CUT_IN_INITIALIZE + "    self.load_model(self.server_args, devi")
    assert r.failure is not None and (r.failure.cause.value, r.phase) == ("unknown", "weight_loading")


@pytest.mark.parametrize("cut", ["    self.init_", "    self.init_cuda_gr", "    self.capture_one", "    self.init_memory_p"])
def test_a_name_cut_short_is_no_evidence(cut: str) -> None:
    """The input ends inside a name: five letters are a guess. What stands is the whole frame
    above it: ModelRunner.initialize runs after distributed init, from the weights on."""
    r = _parse(CUT_IN_INITIALIZE + cut)
    assert r.failure is not None and (r.failure.cause.value, r.phase) == ("unknown", "weight_loading")


def test_a_frame_in_a_function_of_several_phases_is_only_a_lower_bound() -> None:
    """initialize runs weight loading, the pools and the graphs: its frame does not overrule the
    rank's own markers of a later phase."""
    pool = (
        "[2026-05-09 09:20:03 TP0] Load weight end. type=M, avail mem=20.00 GB, mem usage=27.00 GB.\n"
        "[2026-05-09 09:20:03 TP0] KV Cache is allocated. #tokens: 100000, K size: 6.00 GB, V size: 6.00 GB\n"
    )
    header = "[2026-05-09 09:20:03 TP0] Scheduler"
    r = _parse((CUT_IN_INITIALIZE + "    self.init_").replace(header, pool + header))
    assert r.failure is not None and r.phase == "memory_pool"


@pytest.mark.parametrize("function", ["init_cuda_gr", "capture_one", "init_memory_p", "init_memory_pool"])
def test_a_frame_line_cut_inside_its_function_is_no_evidence(function: str) -> None:
    """Even a cut that leaves a whole name of the table ('init_memory_pool' of
    'init_memory_pool_and_cache') says nothing: the line was cut."""
    r = _parse(CUT_IN_INITIALIZE + f'  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 9, in {function}')
    assert r.failure is not None and r.phase == "weight_loading"
    whole = _parse(
        CUT_IN_INITIALIZE + '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 9, in init_memory_pool\n'
    )
    assert whole.phase == "memory_pool"  # the same frame whole is evidence


def test_a_watchdog_timeout_strikes_while_serving_and_in_warmup_before_ready() -> None:
    watchdog = "[2026-05-09 09:20:40 TP0] Watchdog timeout (self.watchdog_timeout=300)\n"
    assert _parse(watchdog).phase == "ready"
    warmup = START + '[2026-05-09 09:20:30] INFO:     127.0.0.1:4312 - "GET /model_info HTTP/1.1" 200 OK\n' + watchdog
    assert _parse(warmup).phase == "warmup"


def test_a_killed_silent_phase_lasts_as_long_as_its_bar() -> None:
    """The process tree vanished during a weight load whose only clock was its bar (74 s at the
    last redraw): the phase and the start-up last at least that long, not until the last stamp."""
    report = report_of("vanished_resource_tracker.log")
    loading = next(p for p in report.phases if p.name.value == "weight_loading")
    assert report.outcome == "failed" and loading.duration_s == 74.0
    assert report.total_startup_s is not None and report.total_startup_s >= 74.0 + 13.0


def test_a_root_without_a_rank_is_the_rank_that_went_silent() -> None:
    """A faulthandler dump names no rank; the other rank reports losing its peer: the dump is the
    silent one's. With one scheduler, a native abort during capture is that scheduler's."""
    assert report_of("faulthandler_segfault.log").failure.rank == "TP0"  # type: ignore[union-attr]
    assert report_of("rocm_hsa_abort.log").failure.rank == "TP0"  # type: ignore[union-attr]
